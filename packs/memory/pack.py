"""The memory pack: verbatim notes, recalled by a hybrid, decay-aware, context-aware pipeline."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from packs.memory import commands, embedding, hookspecs
from packs.memory.embedding import Embedders
from packs.memory.index import MemoryIndex, NoteRow
from packs.memory.settings import MemorySettings
from packs.memory.vectors import Prefilter
from runtime import Context, Pack
from runtime.events import RecallServed

pack = Pack(
    "memory", version="0.1.0", requires=["kg"], settings=MemorySettings,
    migrations=Path(__file__).with_name("sql"), hookspecs=hookspecs,
    # The recall score weights, settable per namespace by another pack (the brain) through the runtime.
    tunables={"relevance_weight": (0.0, 1.0), "salience_weight": (0.0, 1.0), "temporal_weight": (0.0, 1.0)},
    events={"recall_served": RecallServed},  # every memory.recall: what it served, with its score components
)
pack.add_hooks(embedding)
pack.add_hooks(commands)

# the columns of a note, in NoteRow's field order
FULL_COLUMNS = ("id, namespace, content, memory_type, kind, scope, thread, tags, salience, decay_factor, "
                "occurred_at, created_at, superseded_at, archived_at, kind_source, source_id, key, superseded_by")


def stored_models(s: MemorySettings) -> list[str]:
    """Every note is embedded with the default model, and with the CJK model when one is configured."""
    return [s.embedder] + ([s.cjk_embedder] if s.cjk_embedder and s.cjk_embedder != s.embedder else [])


def new_index(s: MemorySettings) -> MemoryIndex:
    pf = s.vector_prefilter
    return MemoryIndex(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms,
                       expansion_weight=s.context.expansion_weight, prefix_chars=s.near_duplicate_prefix,
                       prefilter=Prefilter(min_rows=pf.min_rows, dims=pf.dims, candidates=pf.candidates))


@pack.on_open
def load_indexes(ctx: Context) -> None:
    """Rebuild the search state from the tables (vectors are read back, never re-embedded)."""
    s: MemorySettings = ctx.settings
    specs = [spec for group in ctx.hook("register_embedders") for spec in group]
    ctx.state.embedders = Embedders(specs, s.query_cache_size)
    ctx.state.index = index = new_index(s)
    rows = [NoteRow(*r) for r in ctx.db.query(f"SELECT {FULL_COLUMNS} FROM memory.notes ORDER BY id")]
    restored = snapshot.restore(ctx, index, len(rows), rows[-1].id if rows else 0)
    index.add(rows, {}, text_index=not restored)  # a restored BM25 needs no tokenising
    index.dirty = not restored
    for model in stored_models(s):
        got = ctx.db.query("SELECT note_id, vec FROM memory.vectors WHERE model = ? ORDER BY note_id", [model])
        if len(got) < len(rows):
            ctx.log.warning("%d notes have no %s vector; run memory.reembed", len(rows) - len(got), model)
        if got:
            ids = np.array([nid for nid, _ in got], dtype=np.int64)
            matrix = np.frombuffer(b"".join(v for _, v in got), dtype=np.float32).reshape(len(got), -1)
            index.add_vectors(model, ids, matrix)


# the verbs register themselves on `pack` when imported
from packs.memory import (admin, beliefs, explain, graph, lifecycle, recall, remember, snapshot,  # noqa: E402,F401
                          stages, sync, walk)

pack.add_hooks(sync)  # kg edges between notes written by others reach the live graph
pack.add_hooks(snapshot)  # the full-text index is snapshotted when the runtime closes

"""The full-text index survives a restart as a snapshot in the store (``memory.index_snapshot``), one per namespace
(the index is held per namespace, ADR 0016: rows keyed by ``(namespace, id)``).

Rebuilding BM25 on open means tokenising every note again (~15 s at 100k notes, and every ``pal`` command opens
the store). The snapshot is derived data, trusted only when it covers exactly the stored notes (their count and
highest id; notes are added, and deleted only by memory.forget, which deletes the snapshot too) and was built with the same tokenizer and BM25
settings; otherwise the index is rebuilt from the notes, as before. The index mirror restores it in its
``load`` and writes it in its ``close`` (through ``memory.save_index``) if the index changed, and only for
stores of at least ``index_snapshot_min_notes`` notes. A crash before a close only means the next open
rebuilds. Vectors and metadata columns are still read from their tables (that is fast); thread links are
rebuilt from each note's thread without tokenising.

The vector leg's HNSW graphs (``vectors.py``; ~14 s to build at 100k notes on one core) are kept the same way,
one row per embedding model (id 2 for the default model, 3 for the CJK one), holding usearch's own serialisation:
trusted only when it holds exactly as many vectors, up to the same highest note id, built with the same model,
dimension and graph settings. ``memory.reembed`` deletes them in its transaction (it changes vectors without
changing their count), so a crash after it cannot restore a graph of the old vectors.
"""
from __future__ import annotations

import io
import json

import numpy as np

from palimpsest_memory.packs.memory.bm25 import BM25Index
from palimpsest_memory.packs.memory.index import MemoryIndex
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.text import TOKENIZER_VERSION
from palimpsest_memory.packs.memory.vectors import VectorIndex
from palimpsest_memory.runtime import Context

FORMAT = 1


def signature(s: MemorySettings) -> str:
    """What the snapshot's BM25 bags depend on besides the notes themselves."""
    return json.dumps({"format": FORMAT, "tokenizer": TOKENIZER_VERSION, "k1": s.bm25_k1, "b": s.bm25_b,
                       "expansion": s.context.expansion_weight, "episode_gap": s.context.episode_gap_minutes},
                      sort_keys=True)


def restore(ctx: Context, index: MemoryIndex, notes: int, max_id: int) -> bool:
    """Load the snapshot into ``index.bm25`` when it covers exactly these notes; False if there is none to use."""
    s: MemorySettings = ctx.settings
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot WHERE namespace = ? AND id = 1",
                       [ctx.namespace])
    if not row or notes == 0:
        return False
    sig, n, mx, data = row[0]
    if sig != signature(s) or (n, mx) != (notes, max_id):
        ctx.log.info("full-text index snapshot is stale (%s notes up to id %s, store has %s up to %s): rebuilding",
                     n, mx, notes, max_id)
        return False
    fresh = BM25Index(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms)
    try:
        with np.load(io.BytesIO(data)) as z:
            fresh.restore({k: z[k] for k in z.files})
    except (ValueError, KeyError, OSError) as exc:  # unreadable: the notes are the truth, rebuild from them
        ctx.log.warning("full-text index snapshot unreadable (%s): rebuilding", exc)
        return False
    if len(fresh) != notes:
        return False
    index.bm25 = fresh
    return True


def write(ctx: Context, index: MemoryIndex) -> int:
    """Replace the stored snapshot with the index's BM25 (in the caller's transaction); returns its size."""
    buf = io.BytesIO()
    np.savez(buf, **index.bm25.snapshot())
    data = buf.getvalue()
    ctx.db.execute("INSERT INTO memory.index_snapshot VALUES (?, 1, ?, ?, ?, ?, ?) ON CONFLICT (namespace, id) DO UPDATE "
                   "SET signature = excluded.signature, notes = excluded.notes, max_id = excluded.max_id, "
                   "saved_at = excluded.saved_at, data = excluded.data",
                   [ctx.namespace, signature(ctx.settings), len(index.rows), max(index.rows), ctx.now(), data])
    return len(data)


GRAPH_ROW = 2  # + the model's position in MemorySettings.stored_models()


def graph_signature(model: str, vi: VectorIndex) -> str:
    return json.dumps({"format": FORMAT, "graph": model, "dim": vi.dim, **vi.ann.signature()}, sort_keys=True)


def _graph_row(s: MemorySettings, model: str) -> int:
    models = s.stored_models()
    return GRAPH_ROW + (models.index(model) if model in models else len(models))


def restore_graph(ctx: Context, vi: VectorIndex, model: str) -> bool:
    """Give ``vi`` its saved HNSW graph when one matches its vectors exactly; False if there is none to use."""
    if not vi.ann.min_rows or len(vi) < vi.ann.min_rows:
        return False
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot WHERE namespace = ? AND id = ?",
                       [ctx.namespace, _graph_row(ctx.settings, model)])
    if not row:
        return False
    sig, n, mx, data = row[0]
    if sig != graph_signature(model, vi) or (n, mx) != (len(vi), vi.max_id()):
        ctx.log.info("%s vector graph snapshot is stale: rebuilding", model)
        return False
    if not vi.restore_graph(data):
        ctx.log.warning("%s vector graph snapshot unreadable: rebuilding", model)
        return False
    return True


def write_graphs(ctx: Context, index: MemoryIndex) -> int:
    """Store each vector index's graph that changed since it was restored or saved; returns the bytes written."""
    size = 0
    for model, vi in index.vectors.items():
        if not vi.graph_dirty:
            continue
        data = vi.graph_bytes()
        if data is None:
            continue
        ctx.db.execute("INSERT INTO memory.index_snapshot VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, id) DO "
                       "UPDATE SET signature = excluded.signature, notes = excluded.notes, max_id = excluded.max_id, "
                       "saved_at = excluded.saved_at, data = excluded.data",
                       [ctx.namespace, _graph_row(ctx.settings, model), graph_signature(model, vi), len(vi),
                        vi.max_id(), ctx.now(), data])
        size += len(data)
    return size


def drop_graphs(ctx: Context) -> None:
    """Every namespace's saved graphs (memory.reembed replaces the vectors of all of them)."""
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE id >= ?", [GRAPH_ROW])

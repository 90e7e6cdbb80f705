"""The full-text index survives a restart as a snapshot in the store (``memory.index_snapshot``), one per namespace
(the index is held per namespace, ADR 0016: rows keyed by ``(namespace, id)``).

Rebuilding BM25 on open means tokenising every note again (~15 s at 100k notes, and every ``pal`` command opens
the store). The snapshot is derived data, trusted only when it covers exactly the stored notes up to its highest
id (their count, and the ids it holds; notes are added, and deleted only by verbs that delete the snapshot too)
and was built with the same tokenizer and BM25 settings; the notes newer than it are then indexed as an ingest
would, and anything else rebuilds the index from the notes. The index mirror restores it in its ``load`` and
writes it in its ``close`` (through ``memory.save_index``) if the index changed — unless it still covers all
but a few newer notes and nothing else changed (``keeps``) — and only for stores of at least
``index_snapshot_min_notes`` notes. A crash before a close only means the next open indexes the notes added
since. Vectors and metadata columns are still read from their tables; thread links are rebuilt from each note's
thread without tokenising.

The vector leg's HNSW graphs (``vectors.py``; ~14 s to build at 100k notes on one core) are kept the same way,
one row per embedding model (id 2 for the default model, 3 for the CJK one), holding usearch's own serialisation:
trusted only when it holds exactly the index's vectors up to its highest note id (the newer ones are inserted on
open), built with the same model, dimension and graph settings. ``memory.reembed`` deletes them in its
transaction (it changes vectors without changing their count), so a crash after it cannot restore a graph of the
old vectors. ADR 0008 and 0025.
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

FORMAT = 2  # of the full-text snapshot: 2 stores the postings grouped by term (restored without sorting)
GRAPH_FORMAT = 1
# A snapshot that covers all notes but the newest few (notes are only added, so the notes it covers are still those
# up to its highest id) is not rewritten at close: the next open restores it and indexes the newer notes as an
# ingest would (~0.2 ms a note with the graph). "Few": at most TAIL_MAX and at most a tenth of the notes it covers.
# A close after a few writes to a large store then writes nothing.
TAIL_MAX = 5000


def keeps(covered: int, total: int) -> bool:
    """Whether a snapshot of the first ``covered`` of ``total`` items (only added since) is still good enough."""
    return 0 < covered <= total and total - covered <= min(TAIL_MAX, covered // 10)


def _put(ctx: Context, row_id: int, sig: str, notes: int, max_id: int, data: bytes) -> None:
    # delete + insert: DuckDB's upsert of a large BLOB took ~9x longer (2.7 s against 0.3 s for 40 MB here)
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE namespace = ? AND id = ?", [ctx.namespace, row_id])
    ctx.db.execute("INSERT INTO memory.index_snapshot VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [ctx.namespace, row_id, sig, notes, max_id, ctx.now(), data])


def _covered(ids: np.ndarray, n: int, mx: int) -> int:
    """How many of the sorted ``ids`` a snapshot of ``n`` notes up to id ``mx`` covers: its notes must be exactly
    those up to ``mx`` (else 0: stale)."""
    k = int(np.searchsorted(ids, mx, side="right"))
    return k if n > 0 and k == n and ids[k - 1] == mx else 0


def signature(s: MemorySettings) -> str:
    """What the snapshot's BM25 bags depend on besides the notes themselves."""
    return json.dumps({"format": FORMAT, "tokenizer": TOKENIZER_VERSION, "k1": s.bm25_k1, "b": s.bm25_b,
                       "expansion": s.context.expansion_weight, "episode_gap": s.context.episode_gap_minutes},
                      sort_keys=True)


def restore(ctx: Context, index: MemoryIndex, ids: np.ndarray) -> int:
    """Load the snapshot into ``index.bm25`` when it covers the notes of ``ids`` (sorted) up to its highest id;
    returns how many of them it covers (the caller indexes the newer ones, as an ingest would), 0 if there is none
    to use."""
    s: MemorySettings = ctx.settings
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot WHERE namespace = ? AND id = 1",
                       [ctx.namespace])
    if not row or not ids.size:
        return 0
    sig, n, mx, data = row[0]
    covered = _covered(ids, n, mx) if sig == signature(s) else 0
    if not covered:
        ctx.log.info("full-text index snapshot is stale (%s notes up to id %s, store has %s up to %s): rebuilding",
                     n, mx, ids.size, int(ids[-1]))
        return 0
    fresh = BM25Index(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms)
    try:
        with np.load(io.BytesIO(data)) as z:
            fresh.restore({k: z[k] for k in z.files})
    except (ValueError, KeyError, OSError) as exc:  # unreadable: the notes are the truth, rebuild from them
        ctx.log.warning("full-text index snapshot unreadable (%s): rebuilding", exc)
        return 0
    if len(fresh) != covered or not np.array_equal(np.sort(fresh.snapshot_ids()), ids[:covered]):
        ctx.log.warning("full-text index snapshot does not hold the notes it names: rebuilding")
        return 0
    index.bm25 = fresh
    index.saved_notes, index.appended_only = covered, True
    return covered


def write(ctx: Context, index: MemoryIndex) -> int:
    """Replace the stored snapshot with the index's BM25 (in the caller's transaction); returns its size, 0 when
    the stored one still covers all but a few newer notes (``keeps``)."""
    if index.appended_only and keeps(index.saved_notes, len(index.rows)):
        return 0
    buf = io.BytesIO()
    np.savez(buf, **index.bm25.snapshot())
    data = buf.getvalue()
    _put(ctx, 1, signature(ctx.settings), len(index.rows), index.rows.max_id(), data)
    index.saved_notes, index.appended_only = len(index.rows), True
    return len(data)


GRAPH_ROW = 2  # + the model's position in MemorySettings.stored_models()


def graph_signature(model: str, vi: VectorIndex) -> str:
    return json.dumps({"format": GRAPH_FORMAT, "graph": model, "dim": vi.dim, **vi.ann.signature()}, sort_keys=True)


def _graph_row(s: MemorySettings, model: str) -> int:
    models = s.stored_models()
    return GRAPH_ROW + (models.index(model) if model in models else len(models))


def restore_graph(ctx: Context, vi: VectorIndex, model: str) -> bool:
    """Give ``vi`` its saved HNSW graph when it holds exactly ``vi``'s vectors up to its highest id (the newer ones
    are then inserted); False if there is none to use."""
    if not vi.ann.min_rows or len(vi) < vi.ann.min_rows:
        return False
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot WHERE namespace = ? AND id = ?",
                       [ctx.namespace, _graph_row(ctx.settings, model)])
    if not row:
        return False
    sig, n, mx, data = row[0]
    covered = vi.count_upto(mx) if sig == graph_signature(model, vi) else -1
    if covered != n:
        ctx.log.info("%s vector graph snapshot is stale: rebuilding", model)
        return False
    if not vi.restore_graph(data, upto=mx):
        ctx.log.warning("%s vector graph snapshot unreadable: rebuilding", model)
        return False
    return True


def write_graphs(ctx: Context, index: MemoryIndex) -> int:
    """Store each vector index's graph that changed since it was restored or saved (unless the stored one still
    covers all but a few newer vectors, ``keeps``); returns the bytes written."""
    size = 0
    for model, vi in index.vectors.items():
        if not vi.graph_dirty or (vi.appended_only and keeps(vi.saved_rows, len(vi))):
            continue
        data = vi.graph_bytes()
        if data is None:
            continue
        _put(ctx, _graph_row(ctx.settings, model), graph_signature(model, vi), len(vi), vi.max_id(), data)
        vi.saved_rows, vi.appended_only = len(vi), True
        size += len(data)
    return size


def drop_graphs(ctx: Context) -> None:
    """Every namespace's saved graphs (memory.reembed replaces the vectors of all of them)."""
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE id >= ?", [GRAPH_ROW])

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

The vector leg's HNSW graphs (``vector_graph.py``; ~14 s to build at 100k notes on one core) are kept the same way,
one row per embedding model (id 2 for the default model, 3 for the CJK one), holding usearch's own serialisation:
trusted only when it holds exactly the index's vectors up to its highest note id (the newer ones are inserted on
open), built with the same model, dimension and graph settings. ``memory.reembed`` deletes them in its
transaction (it changes vectors without changing their count), so a crash after it cannot restore a graph of the
old vectors. ADR 0008 and 0025.
"""
from __future__ import annotations

import io
import json
import zipfile
from contextlib import suppress

import numpy as np

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.index import MemoryIndex
from palimpsest_memory.packs.memory.engine import half
from palimpsest_memory.packs.memory.engine import snapshot_io as files
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.engine.text import TOKENIZER_VERSION
from palimpsest_memory.packs.memory.engine.vector_graph import TAIL_MAX, keeps
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex
from palimpsest_memory.runtime import Context

FORMAT = 4  # of the full-text snapshot: 2 stores the postings grouped by term (restored without sorting); 3: bags
# expanded with the neighbours of the note's thread in its scope (a 2 may hold another scope's words: rebuilt); 4:
# episodes ended by the scope's own rhythm (ADR 0034): a 3's bags were expanded along the fixed-gap episodes
GRAPH_FORMAT = 1
# A snapshot that covers all notes but the newest few (notes are only added, so the notes it covers are still those
# up to its highest id) is not rewritten at close: the next open restores it and indexes the newer notes as an
# ingest would (~0.2 ms a note with the graph). "Few": at most TAIL_MAX and at most a tenth of the notes it covers
# (``vector_graph.keeps``, where a restored graph's newer vectors are likewise kept beside it, as its tail).
# A close after a few writes to a large store then writes nothing.


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
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot "
                       "WHERE namespace = ? AND id = 1", [ctx.namespace])
    if not row or not ids.size:
        return 0
    sig, n, mx, data = row[0]
    covered = _covered(ids, n, mx) if sig == signature(s) else 0
    if not covered:
        ctx.log.info("full-text index snapshot is stale (%s notes up to id %s, store has %s up to %s): rebuilding",
                     n, mx, ids.size, int(ids[-1]))
        return 0
    moved = files.held_inline(ctx, data)
    fresh = BM25Index(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms)
    # the index keeps views of the postings where they lie: a file stays mapped (a row's bytes stay held) for them
    buf = files.held(ctx, data)
    if buf is None:
        ctx.log.warning("full-text index snapshot file is missing or of another write: rebuilding")
        return 0
    try:
        arrays = files.npz_arrays(buf)  # views of buf (restore keeps the postings' views)
        fresh.restore(arrays)
        moved = moved or (ids.size >= 100_000 and "own_starts" not in arrays)  # saved before it kept them
    except (ValueError, KeyError, OSError, EOFError, zipfile.BadZipFile) as exc:  # unreadable (a member failing its
        # CRC-32 is BadZipFile): the notes are the truth, rebuild from them
        ctx.log.warning("full-text index snapshot unreadable (%s): rebuilding", exc)
        return 0
    if len(fresh) != covered or not np.array_equal(np.sort(fresh.snapshot_ids()), ids[:covered]):
        ctx.log.warning("full-text index snapshot does not hold the notes it names: rebuilding")
        return 0
    index.bm25 = fresh
    index.saved_notes, index.appended_only = covered, not moved
    return covered


def write(ctx: Context, index: MemoryIndex) -> int:
    """Replace the stored snapshot with the index's BM25 (in the caller's transaction); returns its size, 0 when
    the stored one still covers all but a few newer notes (``keeps``)."""
    if index.appended_only and keeps(index.saved_notes, len(index.rows)):
        return 0
    buf = io.BytesIO()
    np.savez(buf, **index.bm25.snapshot())
    data = buf.getvalue()
    files.put(ctx, 1, signature(ctx.settings), len(index.rows), index.rows.max_id(), data)
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
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot "
                       "WHERE namespace = ? AND id = ?", [ctx.namespace, _graph_row(ctx.settings, model)])
    if not row:
        return False
    sig, n, mx, data = row[0]
    covered = vi.count_upto(mx) if sig == graph_signature(model, vi) else -1
    if covered != n:
        ctx.log.info("%s vector graph snapshot is stale: rebuilding", model)
        return False
    moved = files.held_inline(ctx, data)
    # A graph that holds every vector, or all but a few newer ones (its tail, searched beside it), is searched where
    # its file lies until it first changes (its own copy then); otherwise usearch copies it into its own memory and
    # the newer vectors are inserted
    viewable = keeps(covered, len(vi))
    # (a row's own bytes: loaded; a file of the first format, without a CRC-32: loaded, and saved again at close)
    view = files.held(ctx, data) if viewable and files.names_a_file(data) and not moved else None
    if view is not None:
        if vi.restore_graph(view, upto=mx, view=True):
            return True
        with suppress(BufferError):
            view.release()
    with files.opened(ctx, data) as buf:
        if buf is None or not vi.restore_graph(buf, upto=mx):
            ctx.log.warning("%s vector graph snapshot unreadable: rebuilding", model)
            return False
    if moved:  # saved in the row by an earlier version: save it again, to a file
        vi.graph_dirty, vi.appended_only = True, False
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
        files.put(ctx, _graph_row(ctx.settings, model), graph_signature(model, vi), len(vi), vi.max_id(), data)
        vi.saved_rows, vi.appended_only = len(vi), True
        size += len(data)
    return size


def drop_graphs(ctx: Context) -> None:
    """Every namespace's saved graphs and vectors (memory.reembed replaces the vectors of all of them)."""
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE id >= ?", [GRAPH_ROW])
    files.drop_files(ctx, GRAPH_ROW, every_namespace=True)


def drop(ctx: Context) -> None:
    """The namespace's snapshots, rows and files (memory.forget: they hold what it erases)."""
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE namespace = ?", [ctx.namespace])
    files.drop_files(ctx)


# The vectors themselves, as the index holds them (normalised, half precision: half.py; in note id order), in rows of
# VECTOR_CHUNK: reading them back from ``memory.vectors`` makes a Python bytes object per vector (~5 s at 1M notes);
# a few large blobs read in ~0.5 s. Trusted like a graph: its vectors must be exactly the namespace's vectors of that
# model up to its highest note id (a count; ``memory.forget`` and ``memory.reembed`` delete the snapshots in their
# transaction), and the newer ones are read from the table.
VECTOR_ROW = 1000  # + 1000 x the model's position in stored_models() + the chunk's number
VECTOR_CHUNK = 65_536
VECTOR_FORMAT = 2  # 1: float32 rows (a store saved so reads its vectors from the table once, then saves format 2)


def vector_signature(model: str, dim: int) -> str:
    return json.dumps({"format": VECTOR_FORMAT, "vectors": model, "dim": dim}, sort_keys=True)


def _vector_rows(s: MemorySettings, model: str) -> tuple[int, int]:
    models = s.stored_models()
    base = VECTOR_ROW * (1 + (models.index(model) if model in models else len(models)))
    return base, base + VECTOR_ROW - 1


def restore_vectors(ctx: Context, model: str, dim: int, ids: np.ndarray, matrix: np.ndarray) -> tuple[int, int]:
    """Fill the first rows of ``ids``/``matrix`` from the saved vectors of ``model`` when they are current; returns
    (rows filled, highest note id covered), (0, -1) when there is none to use."""
    lo, hi = _vector_rows(ctx.settings, model)
    meta = ctx.db.query("SELECT id, signature, notes, max_id FROM memory.index_snapshot WHERE namespace = ? AND id "
                        "BETWEEN ? AND ? ORDER BY id", [ctx.namespace, lo, hi])
    if not meta:
        return 0, -1
    n, mx = int(meta[0][2]), int(meta[0][3])
    held = ctx.db.query("SELECT count(*) FROM memory.vectors WHERE namespace = ? AND model = ? AND note_id <= ?",
                        [ctx.namespace, model, mx])[0][0]
    if any(sig != vector_signature(model, dim) or (k, m) != (n, mx) for _, sig, k, m in meta) or \
            [r[0] for r in meta] != list(range(lo, lo + len(meta))) or int(held) != n or n > ids.size:
        ctx.log.info("%s vector snapshot is stale: reading the vectors", model)
        return 0, -1
    done, width = 0, 8 + half.ROW_BYTES * dim
    for row_id, *_ in meta:
        data = ctx.db.query("SELECT data FROM memory.index_snapshot WHERE namespace = ? AND id = ?",
                            [ctx.namespace, row_id])[0][0]
        k = _read_into(ctx, data, width, ids[done:], matrix[done:])
        if k is None or done + k > n:
            return 0, -1
        done += k
    if done != n or (n and (int(ids[n - 1]) != mx or not bool(np.all(ids[1:n] > ids[: n - 1])))):
        return 0, -1
    return n, mx


def map_vectors(ctx: Context, model: str, dim: int) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The saved vectors of ``model`` mapped from their file, when current: (their note ids, a copy-on-write mapping
    of the matrix with spare rows after them, the highest note id covered). Mapping reads nothing now: the pages are
    read when a search touches them (a graph search rescoring a few thousand rows touches a few thousand), and stay
    clean file pages the system can drop until written. None: no such file (the caller reads the rows)."""
    lo, _hi = _vector_rows(ctx.settings, model)
    meta = ctx.db.query("SELECT id, signature, notes, max_id, data FROM memory.index_snapshot WHERE namespace = ? "
                        "AND id BETWEEN ? AND ? ORDER BY id", [ctx.namespace, lo, _hi])
    if len(meta) != 1 or meta[0][0] != lo or meta[0][1] != vector_signature(model, dim):
        return None
    n, mx = int(meta[0][2]), int(meta[0][3])
    if files.legacy(meta[0][4]):  # no CRC-32 yet: read (restore_vectors), so the close saves it again with one
        return None
    found = files.file_of(ctx, meta[0][4])
    if found is None:
        return None
    path, offset, size = found
    held = ctx.db.query("SELECT count(*) FROM memory.vectors WHERE namespace = ? AND model = ? AND note_id <= ?",
                        [ctx.namespace, model, mx])[0][0]
    head = np.fromfile(path, dtype=np.int64, count=2, offset=offset)
    if head.size != 2 or int(head[0]) != n or int(held) != n:
        ctx.log.info("%s vector snapshot is stale: reading the vectors", model)
        return None
    spare = int(head[1])
    if size != 16 + 8 * n + half.ROW_BYTES * dim * (n + spare):
        return None
    ids = np.fromfile(path, dtype=np.int64, count=n, offset=offset + 16)
    if ids.size != n or (n and (int(ids[-1]) != mx or not bool(np.all(ids[1:] > ids[:-1])))):
        return None
    matrix = np.memmap(path, dtype=half.ROW, mode="c", offset=offset + 16 + 8 * n, shape=(n + spare, dim))
    return ids, matrix, mx


def _read_into(ctx: Context, data: bytes, width: int, ids: np.ndarray, matrix: np.ndarray) -> int | None:
    """Read one saved chunk of vectors (its ids, then its rows) straight into ``ids`` and ``matrix``; returns how
    many, None when unreadable. From a file, ``readinto`` the arrays: no bytes object of the chunk in between."""
    data = bytes(data)
    if not files.names_a_file(data):
        k = len(data) // width
        if k * width != len(data) or k > ids.size:
            return None
        ids[:k] = np.frombuffer(data, dtype=np.int64, count=k)
        matrix[:k] = np.frombuffer(data, dtype=half.ROW, offset=8 * k).reshape(k, -1)
        return k
    found = files.file_of(ctx, data)
    if found is None:
        return None
    path, offset, size = found
    k = size // width
    if k * width != size or k > ids.size:
        return None
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            if f.readinto(memoryview(ids[:k]).cast("B")) != 8 * k or \
                    f.readinto(memoryview(matrix[:k]).cast("B")) != matrix[:k].nbytes or f.read(1):
                return None
    except OSError:
        return None
    return k


def write_vectors(ctx: Context, index: MemoryIndex) -> int:
    """Store each model's vectors that changed since restored or saved (unless the stored ones still cover all but a
    few newer vectors, ``keeps``); returns the bytes written."""
    size = 0
    for model, vi in index.vectors.items():
        if vi.vectors_appended and keeps(vi.vectors_saved, len(vi)):
            continue
        lo, hi = _vector_rows(ctx.settings, model)
        ctx.db.execute("DELETE FROM memory.index_snapshot WHERE namespace = ? AND id BETWEEN ? AND ?",
                       [ctx.namespace, lo, hi])
        ids, rows = vi.live_rows()
        if not ids.size:
            continue
        sig, mx = vector_signature(model, vi.dim), int(ids[-1])
        if files.folder(ctx) is not None:  # one file, mapped on open (map_vectors), with room for the rows keeps allows
            spare = min(TAIL_MAX, int(ids.size) // 10)
            parts: list = [np.array([ids.size, spare], dtype=np.int64).tobytes(), ids.tobytes()]
            parts += [np.ascontiguousarray(vi.matrix_rows(rows[a:a + VECTOR_CHUNK])).tobytes()
                      for a in range(0, ids.size, VECTOR_CHUNK)]
            parts.append(bytes(half.ROW_BYTES * vi.dim * spare))
            size += files.put(ctx, lo, sig, int(ids.size), mx, parts)
            # the chunk rows of a layout saved before (their rows were deleted above)
            files.drop_files(ctx, lo + 1, hi, mapped_ok=True)
            vi.vectors_saved, vi.vectors_appended = int(ids.size), True
            continue
        for j, start in enumerate(range(0, ids.size, VECTOR_CHUNK)):
            part = slice(start, start + VECTOR_CHUNK)
            data = ids[part].tobytes() + np.ascontiguousarray(vi.matrix_rows(rows[part])).tobytes()
            files.put(ctx, lo + j, sig, int(ids.size), mx, data)
            size += len(data)
        vi.vectors_saved, vi.vectors_appended = int(ids.size), True
    return size

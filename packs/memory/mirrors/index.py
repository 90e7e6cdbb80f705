"""The search index as a mirror of the store (runtime/mirror.py): one :class:`MemoryIndex` per namespace, loaded
from that namespace's notes and vectors (BM25 and the HNSW graphs from their snapshots when those are current) at
the namespace's first call, fed with its committed changes, snapshotted when it is evicted or the runtime closes.

Readers take the namespace's index, ``ctx.state.index.of(ctx.namespace)`` (recall is per namespace); only the
runtime calls ``load``, ``apply``, ``release`` and ``evict`` (ADR 0016).
"""
from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from palimpsest_memory.packs.memory.engine import half, snapshot, snapshot_io
from palimpsest_memory.packs.memory.mirrors.changes import (Archived, MetadataEdited, NotesAdded, NotesErased,
                                                            SnapshotSaved, SupersededSet, VectorsReplaced)
from palimpsest_memory.packs.memory.engine.index import FULL_COLUMNS, MemoryIndex
from palimpsest_memory.packs.memory.engine.rowstore import Coded
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.engine.vector_graph import Ann
from palimpsest_memory.packs.memory.engine.vectors import l2_normalize
from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.errors import InternalError
from palimpsest_memory.runtime.mirror import Change, Mirror


def index_options(s: MemorySettings) -> dict[str, Any]:
    """The index's construction arguments from the pack's settings."""
    return dict(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms,
                expansion_weight=s.context.expansion_weight, prefix_chars=s.near_duplicate_prefix,
                ann=Ann(**s.vector_index.model_dump()),
                episode_gap_seconds=s.context.episode_gap_minutes * 60.0)


CHUNK = 32_768  # vectors per read at load (32 MB at 256 dimensions)
# Deferred graph work (``take``'s ``defer_graph``) starts once no followed notes came for QUIET seconds, or at once in
# a namespace whose deferred rows passed DEFER_MAX: a search scores those rows exactly, ~2 ms at 100k (the int8
# scan's 1.82 ms there, /tmp measure 2026-12-03; a graph search 1.06), the most a follower's recall pays for keeping up
QUIET = 0.5
DEFER_MAX = 100_000
ROW_CHUNK = 262_144  # notes per read at load: whole columns (fetchnumpy), a bounded transient
# Text columns of a few values, read as positions in the namespace's list of them: fetchnumpy makes a Python string
# per row of a text column (~70 MB and ~18k page faults per column at 1M notes, ADR 0025), a position is a number,
# and the index maps each distinct value once (rowstore.Coded)
FEW_VALUES = ("memory_type", "kind", "kind_source")


def read_columns(ctx: Context, namespace: str) -> list[dict[str, Any]]:
    """Every note of ``namespace`` as batches of columns (``MemoryIndex.FIELDS``, what ``add_columns`` takes), read
    in id ranges with ``fetchnumpy``: typed arrays, the texts an object array, no Python object per note besides
    its text (ADR 0025). Each batch's ids ascend."""
    out: list[dict[str, Any]] = []
    lo, hi, n = ctx.db.query("SELECT min(id), max(id), count(*) FROM memory.notes WHERE namespace = ?",
                             [namespace])[0]
    if not n:
        return out
    values = {c: [r[0] for r in ctx.db.query(f"SELECT DISTINCT {c} FROM memory.notes WHERE namespace = ? AND {c} IS "
                                             "NOT NULL", [namespace])] for c in FEW_VALUES}
    decode = {c: np.array([None, *v], dtype=object) for c, v in values.items()}  # position 0: NULL
    cols = ", ".join(  # the namespace is the one asked for: not read per row
        f"coalesce(array_position(?::VARCHAR[], {c}), 0) AS {c}" if c in FEW_VALUES else
        "CASE WHEN len(tags) > 0 THEN tags END AS tags" if c == "tags" else c
        for c in (c.strip() for c in FULL_COLUMNS.split(",")) if c != "namespace")
    # id ranges of about ROW_CHUNK notes each, unsorted (the store skips the other ranges; a sort by id in SQL cost
    # more than the numpy argsort of each range)
    edges = np.linspace(int(lo), int(hi) + 1, -(-int(n) // ROW_CHUNK) + 1).astype(np.int64)
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
        got = ctx.db.execute(f"SELECT {cols} FROM memory.notes WHERE namespace = ? AND id >= ? AND id < ?",
                             [*values.values(), namespace, a, b]).fetchnumpy()
        ids = np.asarray(got["id"])
        if not ids.size:
            continue
        for c, table in decode.items():
            got[c] = Coded(table, np.asarray(got[c], dtype=np.int64))
        if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
            order = np.argsort(ids, kind="stable")
            got = {k: v[order] for k, v in got.items()}
        got["namespace"] = namespace
        out.append(got)
    return out


def read_vectors(ctx: Context, model: str, namespace: str, note_ids: np.ndarray | None = None,
                 saved: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Note ids of ``namespace`` and their vectors for ``model`` as one half-precision matrix (``half.py``; its first
    ``len(ids)`` rows;
    mapped from the saved file when there is one: ``snapshot.map_vectors``), each row normalised as the
    vector index holds it, and how many of them came from the saved vectors (``saved``: use them when current,
    ``snapshot.restore_vectors``). The rest are read from the table in ranges of ``CHUNK`` of ``note_ids`` (the
    namespace's note ids, ascending: ``BETWEEN`` lets the stores skip the rest of the table, where reading "the next
    ``CHUNK`` after id x" scanned the join again per read, quadratic in the notes)."""
    # memory.vectors carries its note's namespace (its key's first column): read by it, with no join to the notes
    # (a join on note_id alone cannot use that key; PostgreSQL planned it as a nested loop: 36 s at 20k notes)
    total = ctx.db.query("SELECT count(*), max(dim) FROM memory.vectors WHERE namespace = ? AND model = ?",
                         [namespace, model])[0]
    n, dims = int(total[0]), int(total[1] or 0)
    mapped = snapshot.map_vectors(ctx, model, dims) if saved and n else None
    if mapped is not None and mapped[1].shape[0] >= n >= mapped[0].size:  # the saved rows mapped, room for the rest
        saved_ids, matrix, upto = mapped
        restored = saved_ids.size
        ids = np.zeros(n, dtype=np.int64)
        ids[:restored] = saved_ids
    elif mapped is not None and n >= mapped[0].size:  # more newer rows than its spare room: copied, then the rest
        ids, matrix = np.zeros(n, dtype=np.int64), np.zeros((n, dims), dtype=half.ROW)
        restored, upto = mapped[0].size, mapped[2]
        ids[:restored], matrix[:restored] = mapped[0], mapped[1][:restored]
    else:
        ids, matrix = np.zeros(n, dtype=np.int64), np.zeros((n, dims), dtype=half.ROW)
        restored, upto = snapshot.restore_vectors(ctx, model, dims, ids, matrix) if saved and n else (0, -1)
    if note_ids is None:
        note_ids = np.array([r[0] for r in ctx.db.query("SELECT id FROM memory.notes WHERE namespace = ? ORDER BY id",
                                                       [namespace])], dtype=np.int64)
    note_ids = note_ids[note_ids > upto]
    done = restored
    for start in range(0, note_ids.size, CHUNK):
        lo, hi = int(note_ids[start]), int(note_ids[min(start + CHUNK, note_ids.size) - 1])
        got = ctx.db.query("SELECT note_id, vec FROM memory.vectors WHERE namespace = ? AND model = ? "
                           "AND note_id BETWEEN ? AND ? ORDER BY note_id", [namespace, model, lo, hi])
        k = min(len(got), n - done)
        if k <= 0:
            continue
        ids[done:done + k] = [nid for nid, _ in got[:k]]
        raw = np.frombuffer(b"".join(v for _, v in got[:k]), dtype=np.float32).reshape(k, -1)
        for s in range(0, k, 8192):  # normalised and held as VectorIndex.add holds rows, a chunk at a time
            rows = raw[s:s + 8192]
            matrix[done + s:done + s + rows.shape[0]] = half.rows_of(l2_normalize(rows))
        done += k
    return ids[:done], matrix, restored  # (the matrix may hold spare rows after the first ``done``)


class IndexMirror(Mirror):
    """One :class:`MemoryIndex` per namespace held, each kept equal to that namespace's committed notes."""

    per_namespace = True

    def __init__(self) -> None:
        self.by_ns: dict[str, MemoryIndex] = {}
        self._deferred_at = 0.0  # when the last notes followed from another process came (monotonic seconds)
        self.models: frozenset[str] | None = None  # the models whose vectors the index holds (settings), once loaded
        self._measured: dict[str, tuple[int, int]] = {}  # namespace -> (notes, bytes) at its last measure

    def of(self, namespace: str) -> MemoryIndex:
        """The namespace's index (the runtime loaded it before the call that asks)."""
        index = self.by_ns.get(namespace)
        if index is None:
            raise InternalError(f"the memory index of namespace {namespace!r} is not loaded (the runtime loads a "
                                "namespace's mirrors before a call in it)")
        return index

    def load(self, ctx: Context, namespace: str | None = None) -> None:
        """Rebuild one namespace's index from the tables (vectors are read back, never re-embedded)."""
        if namespace is None:
            return  # nothing is held before a namespace's first call
        s: MemorySettings = ctx.settings
        self.models = frozenset(s.stored_models())
        index = MemoryIndex(**index_options(s))  # empty, with this runtime's settings
        batches = read_columns(ctx, namespace)
        all_ids = np.concatenate([b["id"] for b in batches]) if batches else np.zeros(0, dtype=np.int64)
        index.reserve(all_ids.size)
        covered = snapshot.restore(ctx, index, all_ids)
        for b in batches:  # a restored BM25 needs no tokenising; notes newer than it are indexed as an ingest
            k = int(np.searchsorted(b["id"], all_ids[covered - 1], side="right")) if covered else 0
            if k:
                index.add_columns(_part(b, 0, k), text_index=False)
            if k < len(b["id"]):
                index.add_columns(_part(b, k, len(b["id"])))
        del batches
        index.dirty = covered < all_ids.size or (covered > 0 and not index.appended_only)  # (or to move to a file)
        for model in s.stored_models():
            saved = all_ids.size >= s.index_snapshot_min_notes
            ids, matrix, restored = read_vectors(ctx, model, namespace, all_ids, saved)
            if len(ids) < all_ids.size:
                ctx.log.warning("%d notes of %s have no %s vector; run memory.reembed", all_ids.size - len(ids),
                                namespace, model)
            if len(ids):
                index.adopt_vectors(model, ids, matrix)  # the matrix read (or mapped) is ours, and normalised
                vi = index.vectors[model]
                # kept unless read from rows where a file could be mapped (saved before files were used)
                vi.vectors_saved = restored
                vi.vectors_appended = restored > 0 and (isinstance(matrix, np.memmap)
                                                        or snapshot_io.folder(ctx) is None)
                index.dirty = index.dirty or (saved and not snapshot.keeps(restored, len(ids)))
                if not snapshot.restore_graph(ctx, vi, model):  # a saved HNSW graph, else build it now
                    vi.build_graph()
                    index.dirty = index.dirty or vi.has_graph
                index.dirty = index.dirty or vi.graph_dirty
        self.by_ns[namespace] = index
        self._measured.pop(namespace, None)

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            index = self.by_ns.get(change.namespace)
            if index is not None:
                if change.followed and isinstance(change.data, NotesAdded):
                    self._deferred_at = time.monotonic()
                take(index, change.data, self.models, defer_graph=change.followed)

    def idle(self) -> bool:
        """Catch up with the graph work the notes followed from other processes left (``take``'s ``defer_graph``),
        a chunk at a time: once no such notes came for ``QUIET`` seconds, or at once for a namespace whose deferred
        rows passed ``DEFER_MAX``. Returns whether some remains."""
        more = False
        quiet = time.monotonic() - self._deferred_at >= QUIET
        for index in self.by_ns.values():
            for vi in index.vectors.values():
                waiting = vi.deferred_rows()
                if waiting and (quiet or waiting > DEFER_MAX):
                    more = vi.catch_up_graph() or more
                    index.dirty = index.dirty or vi.graph_dirty
                else:
                    more = more or bool(waiting)
        return more

    def release(self, ctx: Context, namespace: str) -> None:
        """Snapshot the namespace's full-text index while the store is still open (a no-op when nothing changed)."""
        if namespace in self.by_ns:
            ctx.call("memory.save_index", {}, namespace=namespace)

    def evict(self, namespace: str) -> None:
        self.by_ns.pop(namespace, None)
        self._measured.pop(namespace, None)

    def size_bytes(self, namespace: str) -> int:
        """The namespace's estimated size; measured again only when its note count moved by more than a tenth
        since the last measure (a measure walks every row and posting list: ~20 ms at 100k notes), else scaled."""
        index = self.by_ns.get(namespace)
        if index is None:
            return 0
        n = len(index.rows)
        rows, size = self._measured.get(namespace, (-1, 0))
        if rows <= 0 or abs(n - rows) * 10 > rows:
            rows, size = n, index_bytes(index)
            self._measured[namespace] = (rows, size)
        return size if rows == 0 else size * n // rows

    def digest(self) -> Any:
        return {ns: index_digest(index) for ns, index in sorted(self.by_ns.items())}


def _part(b: dict[str, Any], lo: int, hi: int) -> dict[str, Any]:
    """Rows ``lo:hi`` of a batch of columns."""
    if lo == 0 and hi == len(b["id"]):
        return b
    return {k: v if isinstance(v, str) else v[lo:hi] for k, v in b.items()}


def take(index: MemoryIndex, c: Any, models: frozenset[str] | None = None, *, defer_graph: bool = False) -> None:
    """Apply one committed change to a namespace's index (``models``: those whose vectors it holds; None: all).
    ``defer_graph``: notes another process wrote — their vectors wait for the HNSW graph until this process is idle
    (``IndexMirror.idle``), so that a follower keeps up with writers at full speed (issue 41, item 7)."""
    index.version += 1  # what recall keeps derived from the index (recall_cache.py) is stale from here
    if isinstance(c, NotesAdded):
        # the writer's columns, tokens and stored vectors, as they are: nothing embedded, tokenised only when the
        # change carries no tokens this process can take (NotesAdded)
        vectors = c.vectors if models is None else {m: v for m, v in c.vectors.items() if m in models}
        if c.columns is not None:
            index.add_columns(c.columns, vectors, tokens=c.token_lists(), defer_graph=defer_graph)
        else:  # logged before columns: rows
            index.add(c.rows, vectors)
    elif isinstance(c, SupersededSet):
        for note_id, by in zip(c.note_ids, c.by):
            index.set_superseded(note_id, c.when, by)
    elif isinstance(c, Archived):
        for note_id in c.note_ids:
            index.set_archived(note_id, c.when)
    elif isinstance(c, MetadataEdited):
        index.set_metadata(c.note_id, c.fields)
    elif isinstance(c, VectorsReplaced):
        index.vectors.pop(c.model, None)
        index.add_vectors(c.model, c.ids, c.matrix)
        index.dirty = True  # a new graph (when large): the snapshot at close saves it
    elif isinstance(c, NotesErased):  # memory.forget (ADR 0018)
        index.forget(c.note_ids)
    elif isinstance(c, SnapshotSaved):
        index.dirty = False
        for vi in index.vectors.values():
            vi.graph_dirty = False


ROW_BYTES = 60  # a note's text object (its header: its characters are counted apiece), besides the columns
ENTRY_BYTES = 100  # one entry of a dict of small objects (ids → rows of a posting map, codes, tags)


def held_bytes(obj: Any) -> int:
    """The numpy arrays, ``array.array`` posting lists and dicts directly held by ``obj``'s attributes."""
    total = 0
    slots = [n for c in type(obj).__mro__ for n in getattr(c, "__slots__", ())]  # (a part with __slots__: Rows)
    values = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    for v in values + [getattr(obj, n, None) for n in slots]:
        if isinstance(v, np.ndarray):
            total += v.nbytes
        elif isinstance(v, dict):
            first = next(iter(v.values()), None)
            if not isinstance(first, (np.ndarray, tuple)):  # (an id map: its entries are all it holds)
                total += ENTRY_BYTES * len(v)
                continue
            total += ENTRY_BYTES * len(v) + sum(a.nbytes if isinstance(a, np.ndarray) else  # (tuples: a cache's)
                                                sum(x.nbytes for x in a if isinstance(x, np.ndarray))
                                                for a in v.values() if isinstance(a, (np.ndarray, tuple)))
        elif isinstance(v, list):
            total += 8 * len(v) + sum(a.nbytes if isinstance(a, np.ndarray) else len(a) * a.itemsize
                                      for a in v if hasattr(a, "itemsize"))
    return total


def index_bytes(index: MemoryIndex) -> int:
    """About how many bytes one namespace's index holds: its columns and maps, its BM25 arrays and postings, its
    vectors and HNSW graphs, each note's row and text. An estimate for the budget, not an exact count."""
    bm25 = index.bm25  # a composition (ADR 0043): count its parts, which held_bytes does not follow
    total = held_bytes(index) + held_bytes(index.space) + held_bytes(index.rows) + sum(
        held_bytes(part) for part in (bm25, bm25.postings, bm25.restored, bm25.groups))
    total += ROW_BYTES * len(index.rows) + index.rows.text_chars
    for vi in index.vectors.values():
        total += held_bytes(vi) + held_bytes(vi.rows) + held_bytes(vi.graph)
        graph = vi.graph.current  # (not waiting for queued inserts: an estimate)
        total += int(getattr(graph, "memory_usage", 0) or 0) if graph is not None else 0
    return total


def index_digest(index: MemoryIndex) -> Any:
    """Every note's id and the flags recall filters on, the BM25 content, and the vector ids per model."""
    ids = index.rows.ids()
    c = {k: v[index.slots(ids)] for k, v in index.cols.items()}
    notes = tuple(zip(ids.tolist(), c["alive"].tolist(), c["archived"].tolist(),
                      np.nan_to_num(c["superseded"], nan=-1.0).tolist(),
                      [index.rows[i].superseded_by for i in ids.tolist()],
                      c["prev"].tolist(), c["next"].tolist(),
                      [(r.kind, r.scope, tuple(r.tags), r.salience, r.decay_factor, sal, dec,
                        sorted(index.tags.get(i, ())))
                       for i, sal, dec in zip(ids.tolist(), c["salience"].tolist(), c["decay"].tolist())
                       for r in (index.rows[i],)]))
    return notes, index.bm25.digest(), tuple(sorted((m, v.digest()) for m, v in index.vectors.items()))

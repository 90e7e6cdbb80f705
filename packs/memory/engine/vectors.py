"""Cosine vector index over integer note ids (numpy), with an HNSW index (usearch) for large scans.

Rows are stored in one float16 matrix (``half.py``, ADR 0030) with amortised
(doubling) growth, so an insert copies only the new rows.  Rows must be
L2-normalised (``add`` normalises defensively; zero rows stay zero and never
match).  Cosine is then a product of the query with each row (``half.cosines``);
top-k uses ``argpartition``.  Removal tombstones a
row; more than a third dead rows triggers compaction.

A scan of 100k x 256 float16 rows (50 MB) takes ~9 ms on one core here.
Once the index holds ``Ann.min_rows`` rows it also keeps an HNSW graph
(usearch, int8-quantised vectors, keyed by note id) and a query that may see
at least that many rows asks the graph for ``oversample`` times the rows it
needs (more when a filter hides part of the index), keeps the allowed ones and
scores them exactly on the float16 rows: the returned cosines are always
those of the held rows, only the candidate set is approximate (ADR 0008 records its measured
recall against the exact scan).  Below the threshold every row is scored, on an
int8 copy of the matrix (``int8_scan.py``: half the bytes a cold scan
reads), and ``oversample`` times the rows needed are rescored on the float16
rows, likewise exact.  Filters narrow enough that the graph would have to be
asked for too many rows, or that leave a quarter of the rows or fewer, are
scored exactly on their float16 rows; ``min_rows = 0`` makes every search exact.
The graph is saved with the store (``snapshot.py``) and restored on open, so a
reopen does not rebuild it. The index *has* its rows (``vector_graph.Rows``: the
matrix, ids, liveness, id map; written here) and its graph
(``vector_graph.VectorGraph``: its building, background inserts and restore),
which reads those rows and is told what was added or removed.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence

import numpy as np

from . import half, pages
from .bm25 import _allowed_filter
from .idrows import IdRows
from .int8_scan import Int8Rows
from .vector_graph import CATCH_UP_ROWS, Ann, Rows, VectorGraph

__all__ = ["VectorIndex", "l2_normalize"]


def l2_normalize(m: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32 (zero rows stay zero)."""
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        n = float(np.linalg.norm(m))
        return m / n if n > 0 else m.copy()
    n = np.linalg.norm(m, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (m / n).astype(np.float32, copy=False)


class VectorIndex:
    """Cosine search; see module docstring."""

    def __init__(self, dim: int, initial_capacity: int = 1024, ann: Ann = Ann()) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = int(dim)
        self.ann = ann
        # the stored vectors hold the first vectors_saved rows, and rows were only added since (snapshot.py)
        self.vectors_saved, self.vectors_appended = 0, False
        cap = max(16, int(initial_capacity))
        self.rows = Rows(pages.zeros((cap, self.dim), half.ROW))  # the matrix, ids, liveness, id map
        self.graph = VectorGraph(self.rows, self.dim, ann)  # over the live rows, once large (vector_graph.py)
        self._row_by_id = np.full(0, -1, dtype=np.int64)  # note id -> row (-1: none), for the graph's answers
        self._n_dead = 0
        self._int8: Int8Rows | None = None  # the scan's int8 copy below min_rows (int8_scan.py), made at a search

    def __len__(self) -> int:
        return len(self.rows.row_of)

    def __contains__(self, note_id: int) -> bool:
        return int(note_id) in self.rows.row_of

    def _grow(self, need: int) -> None:
        cap = self.rows.mat.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        mat = self._matrix_copy(new)
        ids = np.zeros(new, dtype=np.int64)
        ids[: self.rows.n] = self.rows.ids[: self.rows.n]
        alive = np.zeros(new, dtype=bool)
        alive[: self.rows.n] = self.rows.alive[: self.rows.n]
        self.rows.mat, self.rows.ids, self.rows.alive = mat, ids, alive

    def own_rows(self) -> None:
        """Copy a matrix still read from the vectors' snapshot file into memory of its own, and a graph still
        viewed in its file likewise, so that no file stays mapped for them (memory.forget deletes the files: their
        bytes must not outlive it, ADR 0018)."""
        if isinstance(self.rows.mat, np.memmap):
            self.rows.mat = self._matrix_copy(self.rows.mat.shape[0])
        self.graph.writable()

    def _matrix_copy(self, cap: int) -> np.ndarray:
        """A matrix of ``cap`` rows of its own holding the rows so far (plain pages: pages.py says why)."""
        mat = pages.zeros((cap, self.dim), half.ROW)
        mat[: self.rows.n] = self.rows.mat[: self.rows.n]
        return mat

    def _map_rows(self, ids: np.ndarray, rows: np.ndarray) -> None:
        top = int(ids.max()) + 1 if ids.size else 0
        if top > self._row_by_id.size:
            grown = np.full(max(top, 2 * self._row_by_id.size), -1, dtype=np.int64)
            grown[: self._row_by_id.size] = self._row_by_id
            self._row_by_id = grown
        self._row_by_id[ids] = rows

    def add(self, ids: Sequence[int] | np.ndarray, matrix: np.ndarray, *, build: bool = True,
            defer: bool = False) -> None:
        """Add rows (an existing id is replaced), normalised and held in half precision (``half.rows_of``).
        ``build=False``: do not build the graph yet even if the index is now large enough (a load first tries to
        restore a saved one; see :meth:`build_graph`). ``defer``: leave the rows' graph work for
        :meth:`catch_up_graph` (searches score them exactly meanwhile). A load hands its rows over with
        :meth:`adopt` instead."""
        m = np.asarray(matrix, dtype=np.float32)
        if m.ndim == 1:
            m = m[None, :]
        if m.shape != (len(ids), self.dim):
            raise ValueError(f"matrix shape {m.shape} != ({len(ids)}, {self.dim})")
        m = half.rows_of(l2_normalize(m))
        id_arr = np.asarray(ids, dtype=np.int64).reshape(-1)
        # last occurrence of a duplicated id wins
        if self.rows.row_of:
            self.remove(id_arr[self.rows.row_of.rows_of(id_arr) >= 0].tolist(), _compact=False)
        start = self.rows.n
        if start == 0 and id_arr.size > self.rows.mat.shape[0]:
            self.rows.mat = m  # a load into an empty index: the half-precision copy becomes the matrix (no second copy)
            self._int8 = None
            self.rows.ids = np.zeros(id_arr.size, dtype=np.int64)
            self.rows.alive = np.zeros(id_arr.size, dtype=bool)
        else:
            self._grow(self.rows.n + len(ids))
            self.rows.mat[start : start + len(ids)] = m
        if bool(np.all(id_arr[1:] > id_arr[:-1])) or np.unique(id_arr).size == id_arr.size:  # the usual case:
            # one row per id (ascending on a load), set at once
            self.rows.ids[start : start + id_arr.size] = id_arr
            self.rows.alive[start : start + id_arr.size] = True
            self.rows.row_of.set_many(id_arr, np.arange(start, start + id_arr.size))
        else:
            for j, i in enumerate(id_arr.tolist()):
                old = self.rows.row_of.get(i)
                if old is not None:  # duplicate inside this batch
                    self.rows.alive[old] = False
                    self._n_dead += 1
                self.rows.row_of[i] = start + j
                self.rows.ids[start + j] = i
                self.rows.alive[start + j] = True
        self.rows.n += len(ids)
        self._map_rows(id_arr, np.arange(start, self.rows.n, dtype=np.int64))
        self.graph.add(id_arr, m, build, defer)

    def adopt(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        """Take a load's rows as they are: ``matrix``'s first ``len(ids)`` rows are the vectors of ``ids`` (distinct,
        normalised), its further rows spare capacity (a mapped file's: writing a row copies only that page)."""
        if self.rows.n:
            raise ValueError("adopt needs an empty index")
        n = int(ids.size)
        if matrix.shape[0] < n or matrix.shape[1] != self.dim or matrix.dtype != half.ROW:
            raise ValueError(f"matrix shape {matrix.shape} ({matrix.dtype}) cannot hold {n} rows of {self.dim} "
                             f"({np.dtype(half.ROW)})")
        if isinstance(matrix, np.memmap) and (self.ann.min_rows == 0 or n < self.ann.min_rows):
            # no graph: every recall scores every row, and a (float32) scan over the mapped file's pages measured
            # 2.94 ms a recall at 10k against 2.07 over the same rows copied into memory (a plain view of the map
            # is as slow: it is the pages, not the numpy type; measured before the int8 copy, which now takes the
            # scan below min_rows and reads these rows once). Below min_rows the copy is small; with the graph off
            # it is the whole matrix, which every recall reads anyway.
            matrix = np.array(matrix)
        cap = matrix.shape[0]
        self.rows.mat = matrix
        self._int8 = None
        self.rows.ids = np.zeros(cap, dtype=np.int64)
        self.rows.ids[:n] = ids
        self.rows.alive = np.zeros(cap, dtype=bool)
        self.rows.alive[:n] = True
        self.rows.row_of.set_many(np.asarray(ids, dtype=np.int64), np.arange(n))
        self.rows.n = n
        self._map_rows(np.asarray(ids, dtype=np.int64), np.arange(n, dtype=np.int64))

    def remove(self, ids: Iterable[int], _compact: bool = True) -> int:
        n = 0
        for i in ids:
            r = self.rows.row_of.pop(int(i), None)
            if r is not None:
                self.rows.alive[r] = False
                self._row_by_id[int(i)] = -1
                self._n_dead += 1
                n += 1
                self.graph.appended_only = self.vectors_appended = False
                self.graph.remove(int(i))  # (once the queued inserts are in)
        if _compact and self._n_dead > 1024 and self._n_dead * 3 > self.rows.n:
            self._compact()
        return n

    def _compact(self) -> None:
        self.graph.drop_build()
        live = np.flatnonzero(self.rows.alive[: self.rows.n])
        n = live.size
        self.rows.mat[:n] = self.rows.mat[live]
        self.rows.ids[:n] = self.rows.ids[live]
        self.rows.alive[:n] = True
        self.rows.alive[n:] = False
        self.rows.n = n
        self._n_dead = 0
        self._int8 = None  # its rows moved
        self.rows.row_of = IdRows.of(self.rows.ids[:n], np.arange(n))
        self._row_by_id[:] = -1
        self._map_rows(self.rows.ids[:n], np.arange(n, dtype=np.int64))

    def digest(self) -> tuple:
        """The ids held and a hash of their (normalised, rounded) vectors, in id order."""
        ids = sorted(self.rows.row_of)
        rows = np.round(self.rows.mat[[self.rows.row_of[i] for i in ids]].astype(np.float32), 5) if ids else \
            np.zeros((0, self.dim))
        return tuple(ids), hashlib.sha1(rows.astype(np.float32).tobytes()).hexdigest()

    def live_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The held note ids, ascending, and their rows of the matrix."""
        rows = np.flatnonzero(self.rows.alive[: self.rows.n])
        ids = self.rows.ids[rows]
        order = np.argsort(ids, kind="stable")
        return ids[order], rows[order]

    def matrix_rows(self, rows: np.ndarray) -> np.ndarray:
        """The held rows as they are held (half precision: what a snapshot saves)."""
        return self.rows.mat[rows]

    def max_id(self) -> int:
        return self.rows.row_of.max_id() or 0

    def get(self, note_id: int) -> np.ndarray | None:
        r = self.rows.row_of.get(int(note_id))
        return None if r is None else self.rows.mat[r].astype(np.float32)

    def _query(self, qvec: np.ndarray) -> np.ndarray:
        q = l2_normalize(np.asarray(qvec, dtype=np.float32).reshape(-1))
        if q.shape[0] != self.dim:
            raise ValueError(f"query dim {q.shape[0]} != {self.dim}")
        return q

    def search(
        self, qvec: np.ndarray, k: int = 10, allowed=None, min_cosine: float | None = 0.10, _exact: bool = False
    ) -> list[tuple[int, float]]:
        """Top-``k`` ``(id, cosine)`` best first, dropping cosines below ``min_cosine``.

        ``allowed`` as in :func:`palimpsest_memory.packs.memory.engine.bm25.BM25Index.search`.
        """
        if k <= 0 or self.rows.n == 0:
            return []
        if allowed is not None and not isinstance(allowed, np.ndarray) and not hasattr(allowed, "allows") or (
            isinstance(allowed, np.ndarray) and allowed.dtype != np.bool_
        ):
            ids_list = allowed.tolist() if isinstance(allowed, np.ndarray) else list(allowed)
            if len(ids_list) * 4 <= self.rows.n:
                # a narrow scope: score only its rows instead of the whole matrix
                rows = np.array(sorted({r for r in (self.rows.row_of.get(int(i)) for i in ids_list) if r is not None}),
                                dtype=np.int64)
                if rows.size == 0:
                    return []
                sub = half.cosines(self.rows.mat, self._query(qvec), rows)
                keep = np.ones(rows.size, dtype=bool) if min_cosine is None else sub >= min_cosine
                return self._top(rows[keep], sub[keep], k)
        n = self.rows.n
        ok = self.rows.alive[:n].copy()
        if allowed is not None:
            ok &= _allowed_filter(allowed, self.rows.ids[:n])
        count = int(ok.sum())
        if count == 0:
            return []
        q = self._query(qvec)
        a = self.ann
        if self.graph.searches(count) and count > k and not _exact:
            # ask the graph for enough rows that ~oversample x k of them pass the filter
            ask = math.ceil(a.oversample * k * len(self.rows.row_of) / count)
            if ask <= a.max_ask:
                found = self._from_graph(q, k, ask, ok, count, min_cosine)
                if found is not None:
                    return found
        scan = None if _exact or count * 4 <= n else self._scan_copy()
        if scan is not None and count > math.ceil(a.oversample * k):
            return self._from_int8(scan, q, k, ok, count, min_cosine)
        if count * 4 <= n:  # a narrow filter: score only its rows
            cand = np.flatnonzero(ok)
            sc = half.cosines(self.rows.mat, q, cand)
        else:
            full = half.cosines(self.rows.mat, q, upto=n)
            if min_cosine is not None:  # one pass: the allowed rows at or above the cut
                ok &= full >= min_cosine
            cand = np.flatnonzero(ok)
            return self._top(cand, full[cand], k)
        if min_cosine is not None:
            keep = sc >= min_cosine
            cand, sc = cand[keep], sc[keep]
        return self._top(cand, sc, k)

    def _from_graph(self, q: np.ndarray, k: int, ask: int, ok: np.ndarray, count: int,
                    min_cosine: float | None) -> list[tuple[int, float]] | None:
        """The top-``k`` among the graph's ``ask`` nearest allowed rows, cosines exact; None when fewer than
        ``k`` of them are allowed (the caller then scans exactly)."""
        graph = self.graph.hnsw
        ef = self.graph.expansion(ask)
        if graph.expansion_search != ef:
            graph.expansion_search = ef
        keys = graph.search(q, ask, threads=1).keys.astype(np.int64)
        rows = self._row_by_id[keys[keys < self._row_by_id.size]]
        rows = rows[rows >= 0]
        rows = rows[ok[rows]]
        tail = self.graph.tail_rows(ok)
        if tail is not None:  # the rows the graph does not hold yet, all scored (once: a row re-added since the
            rows = np.unique(np.concatenate([rows, tail]))  # graph took it is found by the graph and in the tail)
        if rows.size < k and rows.size < count:
            return None
        return self._rescored(rows, q, k, min_cosine)

    def _rescored(self, rows: np.ndarray, q: np.ndarray, k: int,
                  min_cosine: float | None) -> list[tuple[int, float]]:
        """The top-``k`` of candidate ``rows`` by their exact cosine on the held rows (the graph's and the int8
        scan's candidates alike), dropping cosines below ``min_cosine``."""
        sc = half.cosines(self.rows.mat, q, rows)
        if min_cosine is not None:
            keep = sc >= min_cosine
            rows, sc = rows[keep], sc[keep]
        return self._top(rows, sc, k)

    def _scan_copy(self) -> Int8Rows | None:
        """The int8 copy the scan below ``min_rows`` reads (``int8_scan.py``); None at or past it, or with the
        graph off (``min_rows`` 0: every search exact), where no copy is kept."""
        if not 0 < self.rows.n < self.ann.min_rows:
            self._int8 = None
            return None
        if self._int8 is None:
            self._int8 = Int8Rows(self.dim)
        return self._int8

    def _from_int8(self, scan: Int8Rows, q: np.ndarray, k: int, ok: np.ndarray, count: int,
                   min_cosine: float | None) -> list[tuple[int, float]]:
        """The top-``k`` among the ``oversample × k`` allowed rows the int8 scores rank best (and every row tied
        with the last of them, so equal rows are kept or dropped together), cosines exact."""
        approx = scan.scores(self.rows.mat, self.rows.n, q)
        cand = None if count == approx.size else np.flatnonzero(ok)  # every row allowed: no gather
        if cand is not None:
            approx = approx[cand]
        ask = math.ceil(self.ann.oversample * k)
        rows = np.flatnonzero(approx >= approx[np.argpartition(approx, approx.size - ask)[approx.size - ask]])
        return self._rescored(rows if cand is None else cand[rows], q, k, min_cosine)

    def search_exact(self, qvec: np.ndarray, k: int, allowed=None,
                     min_cosine: float | None = 0.10) -> list[tuple[int, float]]:
        """``search`` without the graph (the benchmark's reference for its recall)."""
        return self.search(qvec, k, allowed=allowed, min_cosine=min_cosine, _exact=True)

    def _top(self, cand: np.ndarray, sc: np.ndarray, k: int) -> list[tuple[int, float]]:
        if cand.size == 0:
            return []
        if cand.size > k:
            kth = sc[np.argpartition(sc, cand.size - k)[cand.size - k]]  # the k-th best score
            keep = sc >= kth  # every tie at the boundary, so the id tie-break is deterministic
            cand, sc = cand[keep], sc[keep]
        order = np.lexsort((self.rows.ids[cand], -sc))[:k]
        return list(zip(self.rows.ids[cand[order]].tolist(), sc[order].tolist()))

    def score_ids(self, qvec: np.ndarray, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Cosine of ``qvec`` with each of ``ids`` (0.0 for unknown ids)."""
        q = l2_normalize(np.asarray(qvec, dtype=np.float32).reshape(-1))
        rows = [self.rows.row_of.get(int(i)) for i in ids]
        out = np.zeros(len(ids), dtype=np.float64)
        have = [j for j, r in enumerate(rows) if r is not None]
        if have:
            out[have] = half.cosines(self.rows.mat, q, np.array([rows[j] for j in have], dtype=np.int64))
        return out

    # -- the graph (vector_graph.VectorGraph), as the pack asks it ------------------------------------------------
    @property
    def graph_dirty(self) -> bool:
        """The graph changed since it was restored or saved: worth a new snapshot."""
        return self.graph.dirty

    @graph_dirty.setter
    def graph_dirty(self, value: bool) -> None:
        self.graph.dirty = value

    @property
    def saved_rows(self) -> int:
        """The stored graph holds the first ``saved_rows`` vectors (snapshot.py)."""
        return self.graph.saved_rows

    @saved_rows.setter
    def saved_rows(self, value: int) -> None:
        self.graph.saved_rows = value

    @property
    def appended_only(self) -> bool:
        """Vectors were only added since the stored graph was saved (snapshot.py)."""
        return self.graph.appended_only

    @appended_only.setter
    def appended_only(self, value: bool) -> None:
        self.graph.appended_only = value

    @property
    def has_graph(self) -> bool:
        return self.graph.current is not None

    def searches_graph(self, allowed_rows: int) -> bool:
        """Whether a search over ``allowed_rows`` of the rows asks the graph (``VectorGraph.searches``)."""
        return self.graph.searches(allowed_rows)

    def build_graph(self) -> None:
        """Build the graph over every live row once the index holds ``Ann.min_rows`` of them."""
        self.graph.build()

    def catch_up_graph(self, rows: int = CATCH_UP_ROWS) -> bool:
        """Do up to ``rows`` rows of deferred graph work in the background; whether work remains
        (``VectorGraph.catch_up``)."""
        return self.graph.catch_up(rows)

    def deferred_rows(self) -> int:
        """How many rows wait for graph work (``VectorGraph.deferred_rows``)."""
        return self.graph.deferred_rows()

    def graph_bytes(self) -> bytes | None:
        """The graph serialised (``snapshot.py`` stores it), or None below the threshold."""
        return self.graph.saved()

    def count_upto(self, max_id: int) -> int:
        """How many vectors this index holds with ids up to ``max_id``."""
        return self.rows.count_upto(max_id)

    def restore_graph(self, data: bytes | memoryview, upto: int | None = None, view: bool = False) -> bool:
        """Take a saved graph instead of building one (``VectorGraph.restore``, which says when it is refused)."""
        return self.graph.restore(data, upto, view)

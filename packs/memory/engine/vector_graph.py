"""The HNSW graph of a ``vectors.VectorIndex``: when it is built, how rows reach it, and how a saved one is taken.

Once the index holds ``Ann.min_rows`` rows it also keeps an HNSW graph (usearch, int8-quantised vectors, inner
product, keyed by note id; ADR 0020). New rows are inserted in the background (``_INSERTS``), a read waits for every
queued insert, and the graph is saved with the store (``snapshot.py``) and restored on open. A ``VectorIndex`` has a
``VectorGraph``: the index writes its rows (``Rows``: the matrix, each row's id and liveness, the id map) and tells the
graph what it added or removed; the graph reads those rows and keeps its own state, which nothing else touches.

A restored graph is searched where its snapshot file lies until it first changes. The vectors added after it was
saved — at the open, or by appends since — are its **tail** while they are few (``keeps``: at most ``TAIL_MAX`` and a
tenth of the graph): each search scores the tail's rows exactly beside the graph's candidates, instead of copying the
graph into memory of its own to insert them (at 1M notes a 400 MB copy, ~0.5 s of a reopen, and ~100 MB more
resident than the file's pages; ADR 0030). A removal, or a tail past that, copies the graph and inserts the tail.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass

import numpy as np
from usearch.index import Index as HNSW

from .idrows import IdRows

__all__ = ["Ann", "Rows", "VectorGraph"]

# Graph inserts run here, one batch at a time, while the caller goes on (usearch releases the GIL): an ingest's
# Python work (tokenising, SQL, the next batch's embedding) overlaps the graph inserts of the batches before it. Every
# read of the graph waits for every queued insert first, so a search never sees half a batch. usearch splits a batch
# evenly between its insert threads and its first one takes the GIL back for every vector (it waits while the caller
# runs Python), so a second one (``Ann.insert_threads``) halves the share that waits; more threads than cores take
# the CPU the caller's Python needs (ADR 0025, last section).
_IN_FLIGHT = 2  # graph inserts queued or running at once: one runs while the next waits, so the graph never idles
_LIST_PER_ASKED_ROW = 6  # a search list at most this many times the rows asked (a 200-row leg's: 2,400)
_INSERTS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palimpsest-hnsw")
TAIL_MAX = 5000  # "a few newer items" (also the snapshots' rule, snapshot.py): at 5,000 a tail costs a search ~0.5 ms
# deferred graph work done per call of catch_up_graph: ~0.12 ms of insert CPU a row (ann_params.md), so a chunk is
# ~0.25 s, the longest a search waits for an insert of the tail
CATCH_UP_ROWS = 2000


def keeps(covered: int, total: int) -> bool:
    """Whether a snapshot of the first ``covered`` of ``total`` items (only added since) is still good enough."""
    return 0 < covered <= total and total - covered <= min(TAIL_MAX, covered // 10)


@dataclass(frozen=True)
class Ann:
    """When and how a large scan goes through the HNSW graph (``min_rows = 0`` turns it off: always exact)."""

    min_rows: int = 0
    connectivity: int = 16  # graph edges per node (usearch's M)
    expansion_add: int = 128  # candidate list while inserting (efConstruction)
    expansion_search: int = 256  # candidate list while searching (efSearch), at least
    rows_per_expansion: int = 400  # and at least rows / this (0: off): a larger graph needs a longer list (ADR 0020)
    oversample: float = 2.0  # the graph is asked for oversample x k rows, rescored exactly
    max_ask: int = 20000  # a filter that would need more rows from the graph than this scans exactly
    insert_threads: int = 2  # usearch threads per background insert (ADR 0025: the first waits for the GIL per vector)

    def signature(self) -> dict:
        return {"connectivity": self.connectivity, "expansion_add": self.expansion_add}

    def search_list(self, rows: int, ask: int | None = None) -> int:
        """The graph's search list for its size: ``expansion_search``, or rows / ``rows_per_expansion`` if longer
        (measured at 1M distinct notes: 256 found 93.6 % of the exact top-200, 2,000 98.1 %, 2,400 98.2 %; ADR 0020,
        0025) — but no longer than ``_LIST_PER_ASKED_ROW`` × the rows asked (``ask``): a walk's ten seeds do not pay
        for a 200-row leg's list."""
        grown = rows // self.rows_per_expansion if self.rows_per_expansion else 0
        if ask is not None:
            grown = min(grown, _LIST_PER_ASKED_ROW * ask)
        return max(self.expansion_search, grown)


class Rows:
    """The rows of a ``VectorIndex``: its matrix (half precision), each row's note id and liveness, the rows in use
    (``n``) and the id → row map. The index writes them (and replaces the arrays as it grows or compacts); its graph
    reads them, never writes."""

    __slots__ = ("mat", "ids", "alive", "n", "row_of")

    def __init__(self, mat: np.ndarray) -> None:
        cap = mat.shape[0]
        self.mat = mat
        self.ids = np.zeros(cap, dtype=np.int64)
        self.alive = np.zeros(cap, dtype=bool)
        self.n = 0
        self.row_of = IdRows()  # note id -> row (idrows.py)

    def live(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The live rows in ``[start, stop)`` (``stop``: the rows in use)."""
        stop = self.n if stop is None else stop
        return start + np.flatnonzero(self.alive[start:stop])

    def count_upto(self, max_id: int) -> int:
        """How many live rows hold ids up to ``max_id``."""
        return int(np.count_nonzero(self.ids[: self.n][self.alive[: self.n]] <= max_id))


class VectorGraph:
    """The graph over a ``VectorIndex``'s live rows (see the module docstring), given the index's ``Rows`` to read,
    their dimension and the ``Ann`` settings. Its state: the graph or None, the mapped snapshot bytes a restored
    graph still reads (``viewed``), the rows ``[start, stop)`` a graph does not hold yet (``tail``), the queued
    inserts, a deferred build; and what the snapshots ask: ``dirty``, ``saved_rows``, ``appended_only``, ``owed``."""

    def __init__(self, rows: Rows, dim: int, ann: Ann) -> None:
        self._rows = rows
        self._dim = dim
        self.ann = ann
        self._g: HNSW | None = None  # the HNSW graph over every live row, keyed by note id, once large
        self._viewed: memoryview | None = None  # the snapshot file's mapped bytes while the graph searches them
        self._tail: tuple[int, int] | None = None  # rows [start, stop) the graph lacks (a viewed one's, or deferred)
        self._pending: deque[Future] = deque()  # the graph inserts queued or running in the background, oldest first
        self.owed = False  # a graph is due but was deferred (catch_up)
        self._building: tuple[HNSW, int] | None = None  # a deferred graph being built, and the rows it has been given
        self.dirty = False  # changed since it was restored or saved: worth a new snapshot
        # the stored graph holds the first saved_rows vectors, and vectors were only added since (snapshot.py)
        self.saved_rows, self.appended_only = 0, False

    @property
    def hnsw(self) -> HNSW | None:
        """The graph, once the insert in flight (if any) has finished."""
        self.sync()
        return self._g

    @property
    def current(self) -> HNSW | None:
        """The graph as it is (inserts may still be queued for it)."""
        return self._g

    @property
    def viewed(self) -> bool:
        """Whether the graph is searched where its snapshot file lies (``restore(view=True)``)."""
        return self._viewed is not None

    @property
    def tail(self) -> tuple[int, int] | None:
        """The rows ``[start, stop)`` the graph does not hold yet (scored exactly by every search), or None."""
        return self._tail

    @property
    def pending(self) -> int:
        """How many inserts are queued or running."""
        return len(self._pending)

    def writable(self) -> HNSW | None:
        """The graph, ready to change (without waiting for queued inserts, which change it too): a graph still
        viewed where its snapshot file lies (``restore(view=True)``, never with inserts queued) is first read
        into memory of its own, and the file's mapping let go."""
        graph, viewed = self._g, self._viewed
        if graph is not None and viewed is None and self._tail is not None:  # rows deferred (defer_rows): in first
            start, stop = self._tail
            self._tail, self.dirty = None, True
            self._pending.append(_INSERTS.submit(self._insert, self._rows.live(start, stop), graph))
            self.sync()  # the caller changes the graph next, on this thread
        if graph is None or viewed is None:
            return graph
        own = self._new_graph()
        own.load(viewed)  # usearch copies the mapped bytes
        own.expansion_search = graph.expansion_search
        self._g, self._viewed = own, None  # the view goes before its mapping: unmapped once nothing holds it
        del graph
        with suppress(BufferError):  # (something still holds a view of it: unmapped when that goes)
            viewed.release()
        if self._tail is not None:  # the rows the graph did not hold
            start, stop = self._tail
            self._insert(self._rows.live(start, stop), own)
            self._tail, self.dirty = None, True
        return own

    def _insert(self, rows: np.ndarray, graph: HNSW) -> None:
        for start in range(0, rows.size, 65536):  # chunks: no second copy of the whole matrix
            part = rows[start:start + 65536]
            graph.add(self._rows.ids[part], self._rows.mat[part], threads=0)

    def tail_rows(self, ok: np.ndarray) -> np.ndarray | None:
        """The rows allowed by ``ok`` that a viewed graph does not hold (a search scores them exactly), or None."""
        if self._tail is None:
            return None
        start, stop = self._tail
        return start + np.flatnonzero(ok[start:stop])

    def _tail_takes(self, start: int, stop: int) -> bool:
        """Keep the rows just appended, ``[start, stop)``, as the viewed graph's tail while it stays few (``keeps``).
        (A viewed graph has seen no removal, so its tail's rows are the last ones, contiguous.)"""
        if self._viewed is None:
            return False
        first = start if self._tail is None else self._tail[0]
        if not keeps(len(self._g), len(self._g) + int(np.count_nonzero(self._rows.alive[first:stop]))):
            return False
        self._tail = (first, stop)
        return True

    def _tail_after(self, upto: int, held: int) -> tuple[int, int] | None:
        """The rows of ids above ``upto`` (those a graph saved up to it lacks) as a tail, when they are few and the
        last rows (a load's rows are in id order); None otherwise."""
        n = self._rows.n
        ids = self._rows.ids[:n]
        if not keeps(held, len(self._rows.row_of)) or not bool(np.all(ids[1:] > ids[:-1])):
            return None
        return int(np.searchsorted(ids, upto, side="right")), n

    def sync(self, leave: int = 0) -> None:
        """Wait for queued graph inserts, oldest first, until at most ``leave`` remain (re-raising the first error,
        if one failed)."""
        while len(self._pending) > leave:
            self._pending.popleft().result()

    def add(self, id_arr: np.ndarray, m: np.ndarray, build: bool, defer: bool = False) -> None:
        """The rows just added (the last ``id_arr.size``, vectors ``m``): queued for the graph (waiting while
        ``_IN_FLIGHT`` inserts are queued), or the graph built once the index is large enough (``build``); ``defer``:
        leave that work for :meth:`catch_up`."""
        n = self._rows.n
        if defer and self._defer(n - id_arr.size, n, build):
            return
        self.sync(leave=_IN_FLIGHT - 1)  # bounded: an ingest that outruns its graph waits here
        if self._tail_takes(n - id_arr.size, n):
            return
        graph = self.writable()
        if graph is not None:
            # a duplicated id inside the batch: the graph takes its last vector, as the matrix does
            last = {int(i): j for j, i in enumerate(id_arr.tolist())}
            keep = np.fromiter(last.values(), dtype=np.int64, count=len(last))
            self._pending.append(_INSERTS.submit(graph.add, id_arr[keep], m[keep], threads=self.ann.insert_threads))
            self.dirty = True
        elif build:
            self.build()

    def remove(self, note_id: int) -> None:
        """A row's note went: out of the graph (once the queued inserts are in), and a build in progress restarts."""
        if self.hnsw is not None:
            self.writable().remove(note_id)
            self.dirty = True
        self.drop_build()

    def _new_graph(self) -> HNSW:
        a = self.ann
        return HNSW(ndim=self._dim, metric="ip", dtype="i8", connectivity=a.connectivity,
                    expansion_add=a.expansion_add, expansion_search=a.expansion_search)

    def build(self) -> None:
        """Build the graph over every live row once the index holds ``min_rows`` of them."""
        if self.hnsw is not None or not self.ann.min_rows or len(self._rows.row_of) < self.ann.min_rows:
            return
        graph = self._new_graph()
        self._insert(self._rows.live(), graph)
        self._g, self.dirty = graph, True
        self._building, self.owed = None, False

    # -- deferred graph work (a follower's: ADR 0031, "Followers that keep up") ------------------------------------
    def _defer(self, start: int, stop: int, build: bool) -> bool:
        """Leave the graph work of rows ``[start, stop)`` for later: they join the graph's tail (scored exactly by
        every search until :meth:`catch_up` inserts them), or, with no graph yet, the graph is owed once the index
        is large enough. False (do it now) for a viewed graph with inserts queued (never the case)."""
        if self._g is None:
            self.owed = self.owed or bool(build and self.ann.min_rows and len(self._rows.row_of) >= self.ann.min_rows)
            return True
        if self._pending and self._viewed is not None:
            return False
        self._tail = (start if self._tail is None else self._tail[0], stop)
        return True

    def deferred_rows(self) -> int:
        """How many rows wait for graph work: the tail's, or every row while a graph is owed."""
        if self._g is None:
            return self._rows.n if self.owed else 0
        return 0 if self._tail is None else self._tail[1] - self._tail[0]

    def catch_up(self, rows: int = CATCH_UP_ROWS) -> bool:
        """Do up to ``rows`` rows of the deferred graph work in the background: the next rows of a graph being built
        (swapped in once it holds every row: until then searches scan), or of the tail of the graph searched (a
        search waits for that insert, so a chunk is small). Returns whether work remains; a call while the last
        chunk still runs queues nothing."""
        if self._pending and not self._pending[0].done():
            return True
        self.sync()
        if self._g is None:
            if not self.owed:
                return False
            if self._building is None:
                self._building = (self._new_graph(), 0)
            graph, upto = self._building
            if upto >= self._rows.n:  # it holds every row: searched from now on
                graph.expansion_search = self.ann.expansion_search
                self._g, self._building, self.owed, self.dirty = graph, None, False, True
                return False
            stop = min(self._rows.n, upto + rows)
            self._pending.append(_INSERTS.submit(self._insert, self._rows.live(upto, stop), graph))
            self._building = (graph, stop)
            return True
        if self._tail is None:
            return False
        if self._viewed is not None:  # a viewed graph is read-only: copied (its tail inserted) first
            self.writable()
            return False
        start, stop = self._tail
        cut = min(stop, start + rows)
        self._pending.append(_INSERTS.submit(self._insert, self._rows.live(start, cut), self._g))
        self._tail, self.dirty = (None if cut == stop else (cut, stop)), True
        return self._tail is not None

    def drop_build(self) -> None:
        """Rows moved or went (a compaction, a removal): a graph being built is started again later."""
        if self._building is not None:
            self.sync()
            self._building = None

    def expansion(self, ask: int | None = None) -> int:
        """The graph's search list for this index's size (``Ann.search_list``)."""
        return self.ann.search_list(len(self._rows.row_of), ask)

    def searches(self, allowed_rows: int) -> bool:
        """Whether a search over ``allowed_rows`` of the rows asks the graph: milliseconds of walking it (at 100k+
        rows), where a scan below ``min_rows`` takes a fraction of one."""
        return self._g is not None and allowed_rows >= self.ann.min_rows

    def saved(self) -> bytes | None:
        """The graph serialised (``snapshot.py`` stores it), or None below the threshold; a tail is inserted first."""
        if self._tail is not None:
            self.writable()
        return None if self.hnsw is None else bytes(self.hnsw.save())

    def restore(self, data: bytes | memoryview, upto: int | None = None, view: bool = False) -> bool:
        """Take a saved graph instead of building one; False (and nothing changed) when it does not hold exactly
        the index's ids (with ``upto``: those up to that id, and the newer rows are then inserted into it, or kept
        as its tail).

        ``view``: search the graph where ``data`` lies (a read-only mapping of its snapshot file, which this graph
        then keeps open) instead of copying it, when it holds every row or the rest are few enough for a tail —
        until the graph first changes (:meth:`writable`). At 1M notes that spares a reopen ~0.3-0.5 s and ~110k
        page faults of a 400 MB copy (ADR 0025)."""
        r = self._rows
        total = len(r.row_of)
        held = total if upto is None else r.count_upto(upto)
        tail = self._tail_after(upto, held) if view and upto is not None and held < total else None
        view = view and (held == total or tail is not None)
        try:
            graph = self._new_graph()
            (graph.view if view else graph.load)(data)
        except (RuntimeError, ValueError):  # unreadable: the caller builds from the vectors instead
            return False
        if len(graph) != held or graph.ndim != self._dim:
            return False
        if upto is not None and held:
            last = r.ids[: r.n][r.alive[: r.n]]
            probe = np.array([last[last <= upto].max()], dtype=np.int64)
            if not graph.contains(probe).all():  # another graph of as many rows
                return False
        graph.expansion_search = self.ann.expansion_search
        self.sync()
        self._g, self.dirty = graph, False
        self._viewed, self._tail = (data, tail) if view else (None, None)
        self.saved_rows, self.appended_only = held, True
        if held < total and not view:  # the rows added after it was saved
            self._insert(np.flatnonzero(r.alive[: r.n] & (r.ids[: r.n] > upto)), graph)
            self.dirty = True
        return True

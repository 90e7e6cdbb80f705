"""BM25's statistics over one scope's notes, for a recall that searches that scope (ADR 0008, issue 19).

BM25 weighs a word by how rare it is in the collection searched (``N``, ``df``) and a note's length against the
collection's mean (``avgdl``). A recall with a ``scope`` searches that scope's notes, so those are its collection:
with the namespace's statistics instead, what other scopes hold changed a scope's ranking (a word common in this
project but rare elsewhere counted as rare; five LoCoMo conversations in one store ranked worse than one store
each). With these, a scope's BM25 scores are the ones a store holding only that scope would give.

Each BM25 row carries the *group* of its note (the memory index gives its namespace and scope as one int64,
``set_groups``), and each group's row count and summed length are kept as rows are added, replaced, regrouped and
removed (:class:`ScopeGroups`, a part of the index that is told each change): a :class:`Collection` is then built
in O(1), and a term's ``df`` in it is counted from the term's postings when a query first asks (the rows the scoring
reads anyway). Nothing here is O(notes) per write.
The information prior (``own_information``) keeps the namespace's statistics: it reads the ``df`` of every word
of the ~200 pooled notes, and counting those over a scope cost ~17 ms a recall at 100k notes (a `/tmp` script,
ADR 0008), where the namespace's ``df`` is a list look-up.
"""
from __future__ import annotations

import numpy as np

UNGROUPED = -1  # a dead row's group, and a row's until set_groups names it


class Collection:
    """``N``, ``avgdl`` and per-term ``df`` over the alive BM25 rows of one group."""

    __slots__ = ("groups", "group", "n", "avgdl", "_df")

    def __init__(self, groups: np.ndarray, group: int, n: int, total_len: float) -> None:
        self.groups, self.group, self.n = groups, group, n
        self.avgdl = total_len / n if n else 0.0
        self._df: dict[int, int] = {}

    def df(self, tid: int, parts: list[np.ndarray]) -> int:
        """How many of this collection's rows hold term ``tid``, whose postings' rows are ``parts``."""
        got = self._df.get(tid)
        if got is None:
            got = self._df[tid] = sum(int(np.count_nonzero(self.groups[rows] == self.group)) for rows in parts)
        return got


class ScopeGroups:
    """The group of each BM25 row and each group's row count and summed length. The index owns its rows: it says
    which rows move and hands over their lengths (``dl``, its per-row lengths) with each change."""

    def __init__(self, cap: int) -> None:
        self._group = np.full(cap, UNGROUPED, dtype=np.int64)
        self._group_n: dict[int, int] = {}
        self._group_len: dict[int, float] = {}

    def grow(self, cap: int, n_rows: int) -> None:
        """Room for ``cap`` rows, the first ``n_rows`` kept."""
        if cap > self._group.shape[0]:
            arr = np.full(cap, UNGROUPED, dtype=np.int64)
            arr[:n_rows] = self._group[:n_rows]
            self._group = arr

    def _move(self, rows: np.ndarray, groups: np.ndarray, sign: int, dl: np.ndarray) -> None:
        """Add (``sign`` 1) or take away (-1) ``rows`` from the counts of ``groups`` (one per row)."""
        keep = groups != UNGROUPED
        rows, groups = rows[keep], groups[keep]
        if not rows.size:
            return
        uniq, inv = np.unique(groups, return_inverse=True)
        counts = np.bincount(inv)
        lengths = np.bincount(inv, weights=dl[rows].astype(np.float64))
        for g, c, length in zip(uniq.tolist(), counts.tolist(), lengths.tolist()):
            self._count(g, sign * c, sign * length)

    def _count(self, g: int, rows: int, length: float) -> None:
        """Add ``rows`` rows (negative: take away) of summed ``length`` to group ``g``'s counts."""
        n = self._group_n.get(g, 0) + rows
        if n:
            self._group_n[g] = n
            self._group_len[g] = self._group_len.get(g, 0.0) + length
        else:  # emptied: dropped, so that a float sum's residue never outlives its rows
            self._group_n.pop(g, None)
            self._group_len.pop(g, None)

    def set(self, rows: np.ndarray, groups: np.ndarray, dl: np.ndarray) -> bool:
        """Put live ``rows`` in ``groups`` (one each); ``dl``: the index's per-row lengths. Whether any moved."""
        old = self._group[rows]
        moved = old != groups
        if not moved.any():
            return False
        rows, old, groups = rows[moved], old[moved], groups[moved]
        self._move(rows, old, -1, dl)
        self._group[rows] = groups
        self._move(rows, groups, 1, dl)
        return True

    def ungroup(self, row: int, length: float) -> None:
        """A row of ``length`` dies (replaced or removed): out of its group's counts."""
        g = int(self._group[row])
        if g != UNGROUPED:  # one row: the counts directly, not _move's arrays (a bulk forget removes row by row)
            self._count(g, -1, -length)
            self._group[row] = UNGROUPED

    def compact(self, live: list[int]) -> None:
        """The rows were renumbered: row ``j`` is the old row ``live[j]`` (the groups' counts and lengths are
        unchanged)."""
        n = len(live)
        groups = self._group[live].copy()
        self._group[:n], self._group[n:] = groups, UNGROUPED

    def collection(self, group: int, n_alive: int) -> Collection | None:
        """The statistics of ``group``'s rows, for ``BM25Index.search(within=...)``; None when the group holds every
        row (``n_alive``: the index's own statistics are then the same)."""
        n = self._group_n.get(int(group), 0)
        if n == n_alive:
            return None
        return Collection(self._group, int(group), n, self._group_len.get(int(group), 0.0))

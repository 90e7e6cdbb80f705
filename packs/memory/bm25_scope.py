"""BM25's statistics over one scope's notes, for a recall that searches that scope (ADR 0008, issue 19).

BM25 weighs a word by how rare it is in the collection searched (``N``, ``df``) and a note's length against the
collection's mean (``avgdl``). A recall with a ``scope`` searches that scope's notes, so those are its collection:
with the namespace's statistics instead, what other scopes hold changed a scope's ranking (a word common in this
project but rare elsewhere counted as rare; five LoCoMo conversations in one store ranked worse than one store
each). With these, a scope's BM25 scores are the ones a store holding only that scope would give.

A :class:`Collection` is built from the scope's rows at the index's version and dropped at its next write
(``recall_cache.collection``); a term's ``df`` in it is counted from the term's postings when a query first asks
(the same rows the scoring reads), so a scoped search costs at most one more pass over its terms' postings.
The information prior (``own_information``) keeps the namespace's statistics: it reads the ``df`` of every word
of the ~200 pooled notes, and counting those over a scope's rows cost ~17 ms a recall at 100k notes (a `/tmp`
script, ADR 0008), where the namespace's ``df`` is a list look-up.
"""
from __future__ import annotations

import numpy as np


class Collection:
    """``N``, ``avgdl`` and per-term ``df`` over the BM25 rows in ``inside`` (a boolean array over the index's rows:
    alive and in the scope)."""

    __slots__ = ("inside", "n", "avgdl", "_df")

    def __init__(self, inside: np.ndarray, dl: np.ndarray) -> None:
        self.inside = inside
        self.n = int(np.count_nonzero(inside))
        # the namespace's avgdl is a running sum of lengths over its count: the same quantity, summed in float64
        self.avgdl = float(dl[: inside.size][inside].sum(dtype=np.float64)) / self.n if self.n else 0.0
        self._df: dict[int, int] = {}

    def df(self, tid: int, rows: np.ndarray) -> int:
        """How many of this collection's rows hold term ``tid``, whose postings are ``rows``."""
        got = self._df.get(tid)
        if got is None:
            if rows.size and rows[-1] >= self.inside.size:  # rows ascend: a row added since (never, in recall)
                rows = rows[rows < self.inside.size]
            got = self._df[tid] = int(np.count_nonzero(self.inside[rows]))
        return got

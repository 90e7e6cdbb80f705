"""The term lists of the rows a restore brought back into a
:class:`~palimpsest_memory.packs.memory.engine.bm25.BM25Index`, and the snapshot arrays an index is saved as and
restored from.

A snapshot holds the postings grouped by term (``bm25_postings.py``), not each row's terms. A restored index keeps its
rows' term lists as slices of flat arrays (a pair of numpy views per row cost ~400 bytes a note) and derives them
from the postings only when something needs them: a row replaced or removed, a compaction, the information prior's
own words. :class:`RestoredRows` is that: it reads the index's :class:`~.bm25_postings.Postings` through their
methods and is told which rows to find; which note a row holds is the index's.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .bm25_postings import Postings

__all__ = ["RestoredRows", "own_lists", "snapshot_arrays", "snapshot_parts"]


def own_lists(df: np.ndarray, rows: np.ndarray, tfs: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the term ids it holds at weight ≥ 1, ascending, from postings grouped by term (``df`` each):
    (starts, term ids), a CSR → CSC transpose of the postings of weight ≥ 1."""
    from scipy.sparse import csr_matrix
    keep = (tfs >= 1.0) & (rows < n_rows)
    term = np.repeat(np.arange(df.size, dtype=np.int32), df)[keep]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(term, minlength=df.size))))
    by_row = csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), rows[keep], bounds),
                        shape=(df.size, n_rows)).tocsc()
    return by_row.indptr.astype(np.int64), by_row.indices.astype(np.int32, copy=False)


def snapshot_arrays(postings: Postings, alive: np.ndarray, ids: np.ndarray, dl: np.ndarray,
                    total_len: float) -> dict[str, np.ndarray]:
    """An index's live rows as flat arrays (what ``BM25Index.restore`` takes), postings grouped by term; ``alive``,
    ``ids``, ``dl``: per row so far. Dead rows are left out and the live ones renumbered densely (in row order)."""
    if any("\n" in w for w in postings.vocab):  # tokens are words; a custom tokenizer might not be
        raise ValueError("a token contains a newline: this index cannot be snapshotted")
    tids, rows, tfs = postings.flat()
    keep = alive[rows]
    tids, rows, tfs = tids[keep], rows[keep], tfs[keep]
    renumber = np.cumsum(alive, dtype=np.int64) - 1
    df = np.bincount(tids, minlength=len(postings)).astype(np.int64)
    used = df > 0  # a word no live row holds (a forgotten note's) is left out: the snapshot holds no trace of it
    vocab = "\n".join(w for w, u in zip(postings.vocab, used.tolist()) if u).encode("utf-8")
    live = np.flatnonzero(alive)
    rows = renumber[rows].astype(np.int32)
    own_starts, own_tids = own_lists(df, rows, tfs, live.size)
    return {"ids": ids[live].copy(), "dl": dl[live].copy(),
            "df": df[used], "rows": rows, "tfs": tfs.copy(),
            "vocab": np.frombuffer(vocab, dtype=np.uint8), "total_len": np.array([total_len]),
            # each row's own words (term ids as restored: the used ones renumbered), so a restore need not
            # derive them at its first recall (~1.4 s at 1M notes)
            "own_starts": own_starts, "own_tids": (np.cumsum(used) - 1)[own_tids].astype(np.int32),
            # how many terms each row holds, so re-indexing a restored row can check a lookup (RestoredRows.find)
            "nterms": np.bincount(rows, minlength=live.size).astype(np.int32)}


def snapshot_parts(snap: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """A :func:`snapshot_arrays` dict's (ids, dl, words, df, rows, tfs), checked for consistency. The arrays may view
    the snapshot's mapped file: the postings are kept as views (``Postings.restore``), the ids copied."""
    ids, dl = np.array(snap["ids"], dtype=np.int64), snap["dl"].astype(np.float32, copy=False)
    df = snap["df"].astype(np.int64, copy=False)
    rows, tfs = snap["rows"].astype(np.int32, copy=False), snap["tfs"].astype(np.float32, copy=False)
    text = snap["vocab"].tobytes().decode("utf-8")
    words = text.split("\n") if text else []
    n, n_terms = ids.size, len(words)
    if df.size != n_terms or int(df.sum()) != rows.size or rows.size != tfs.size or dl.size != n or (
            rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n)):
        raise ValueError("inconsistent full-text snapshot")
    return ids, dl, words, df, rows, tfs


class RestoredRows:
    """The term lists of rows ``[0, n)``, restored from a snapshot, over ``postings`` (see the module docstring)."""

    def __init__(self, postings: Postings) -> None:
        self._postings = postings
        self.n = 0  # rows [0, n) are restored ones, their lists in the flat arrays below
        self._starts: np.ndarray | None = np.zeros(1, dtype=np.int64)  # None: not derived yet
        self._some: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # until then: the few rows looked up
        self._tids = np.zeros(0, dtype=np.int32)
        self._tfs = np.zeros(0, dtype=np.float32)
        # the restored rows' own words only (the information prior's), until the full lists are derived
        self._own_starts: np.ndarray | None = None
        self._own_tids = np.zeros(0, dtype=np.int32)
        self._count: np.ndarray | None = None  # how many terms each restored row holds (snapshot "nterms")

    def restore(self, n: int, snap: Mapping[str, np.ndarray]) -> None:
        """Rows ``[0, n)`` are a snapshot's (``snap``): their lists derived from the postings when first needed."""
        self.n, self._starts = n, None
        self._own_starts, self._own_tids = None, np.zeros(0, dtype=np.int32)
        if "own_starts" in snap and snap["own_starts"].size == n + 1 and \
                int(snap["own_starts"][-1]) == snap["own_tids"].size:  # (a snapshot from before: derived when asked)
            self._own_starts = np.array(snap["own_starts"], dtype=np.int64)
            self._own_tids = np.array(snap["own_tids"], dtype=np.int32)
        self._some = {}
        count = snap.get("nterms")  # (None in a snapshot from before: the full pass instead)
        self._count = np.array(count, dtype=np.int32) if count is not None and count.size == n else None

    def clear(self) -> None:
        """No restored rows any more (a compaction gave every row a list of its own)."""
        self.n, self._starts = 0, np.zeros(1, dtype=np.int64)
        self._own_starts, self._own_tids = None, np.zeros(0, dtype=np.int32)
        self._tids, self._tfs = np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        self._some, self._count = {}, None

    @property
    def lazy(self) -> bool:
        """Whether some restored rows' lists are not derived yet (:meth:`prefetch` has work to do)."""
        return self._starts is None and self.n > 0

    def terms(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """A restored row's (term ids ascending, weights)."""
        if self._starts is None:
            got = self._some.get(row)
            if got is not None:
                return got
            self._derive()
        a, b = self._starts[row], self._starts[row + 1]
        return self._tids[a:b], self._tfs[a:b]

    def forget(self, row: int) -> None:
        """A row died: its terms are never read again."""
        self._some.pop(row, None)

    def prefetch(self, rows: list[int], bags: Mapping[int, Mapping[str, float]] | None = None) -> None:
        """The term lists of restored ``rows`` (any rows: the others are ignored) about to be replaced or removed. A
        few (an ingest after a restore re-indexes a few thread neighbours): looked up by the terms of the bag replacing
        each (``bags``, by row: :meth:`_find`), else found with one pass over the postings, kept per row; many: all
        rows' lists derived at once (``_derive``: at 1M notes ~3 s and ~1 GB while it runs)."""
        if not self.lazy:
            return
        flat = self.n
        rows = sorted({r for r in rows if r < flat} - set(self._some))
        if rows and bags is not None and self._count is not None:
            rows = [r for r in rows if not self._find(r, bags[r])]
        if not rows:
            return
        if len(rows) + len(self._some) > max(64, flat // 20):
            self._derive()
            return
        self._scan(rows)

    def _scan(self, rows: list[int]) -> None:
        """Restored rows' term lists from one pass over every posting, kept per row."""
        flat = self.n
        lengths, prow = self._postings.joined()
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        want = np.zeros(flat, dtype=bool)
        want[rows] = True
        hit = np.flatnonzero(want[np.minimum(prow, flat - 1)] & (prow < flat))
        tids = (np.searchsorted(bounds, hit, side="right") - 1).astype(np.int32)
        tf_at = self._postings.tf_at
        tfs = np.array([tf_at(t, p) for t, p in zip(tids.tolist(), (hit - bounds[tids]).tolist())], dtype=np.float32)
        prow = prow[hit]
        for r in rows:  # each row's terms ascending, as _derive gives them
            mine = prow == r
            self._some[r] = (tids[mine], tfs[mine])

    def _find(self, row: int, bag: Mapping[str, float]) -> bool:
        """A restored row's term list found by binary search in the postings of the terms of ``bag`` (the row's
        new bag: its own words and its thread neighbours', which usually holds every term of the old one), kept
        when that finds as many terms as the row holds (``_count``); False (a term of the old bag is not in the new
        one: a neighbour replaced) leaves the row to the full pass. At 1M notes the full pass joins every posting
        (~300 MB) for each such call: an ingest after a reopen, adding to threads whose last notes were restored,
        paid it on every batch."""
        tids, tfs = self._postings.find(row, bag)
        if len(tids) != int(self._count[row]):
            return False
        tid_arr = np.asarray(tids, dtype=np.int32)
        order = np.argsort(tid_arr, kind="stable")  # ascending, as _derive gives
        self._some[row] = (tid_arr[order], np.asarray(tfs, dtype=np.float32)[order])
        return True

    def _derive_own(self) -> None:
        """Each restored row's own words (the terms it holds at weight ≥ 1), term ids ascending: the postings of
        weight ≥ 1, transposed to rows as ``_derive`` does. At 1M notes ~40 % of the postings are a thread
        neighbour's words below weight 1, which the information prior never reads."""
        lengths, rows = self._postings.joined()
        self._own_starts, self._own_tids = own_lists(lengths, rows, self._postings.joined_tfs(), self.n)

    def _derive(self) -> None:
        """The restored rows' (term ids, weights), rebuilt from the postings when first needed (a row replaced or
        removed, a compaction, a recall's information prior): the postings grouped by term, transposed to rows
        (a sparse matrix's CSR → CSC conversion, linear in the postings; each row's terms ascending, as a stable
        sort of the postings by row gives them)."""
        from scipy.sparse import csr_matrix
        lengths, rows = self._postings.joined()
        tfs = self._postings.joined_tfs()
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        width = max(self.n, int(rows.max()) + 1 if rows.size else 0)
        by_row = csr_matrix((tfs, rows, bounds), shape=(lengths.size, width)).tocsc()
        starts = by_row.indptr[: self.n + 1].astype(np.int64)
        end = int(starts[-1])
        self._tids = by_row.indices[:end].astype(np.int32, copy=False)
        self._tfs = by_row.data[:end].astype(np.float32, copy=False)
        self._some = {}
        self._starts = starts
        self._own_starts, self._own_tids = None, np.zeros(0, dtype=np.int32)  # (the full lists hold them)

    def own_words(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """The terms restored ``rows`` hold, gathered at once: (term ids, their weights, or None when only the own
        words — weight ≥ 1 — were gathered, how many each row gave). Every term of each row once its full list is
        derived (for a replace or remove), else only its own words, all the information prior needs (derived at
        its first recall: smaller, and faster)."""
        if self._starts is not None:
            starts, flat_tids, flat_tfs = self._starts, self._tids, self._tfs
        else:
            if self._own_starts is None:
                self._derive_own()
            starts, flat_tids, flat_tfs = self._own_starts, self._own_tids, None
        start, size = starts[rows], starts[rows + 1] - starts[rows]
        pos = np.repeat(start - np.r_[0, np.cumsum(size)[:-1]], size) + np.arange(int(size.sum()))
        return flat_tids[pos], None if flat_tfs is None else flat_tfs[pos], size

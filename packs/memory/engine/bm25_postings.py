"""The postings of a :class:`~palimpsest_memory.packs.memory.engine.bm25.BM25Index`: its vocabulary and, per term,
the rows that hold it, their term frequencies and the term's document frequency.

Per term the postings are two buffers, rows ascending (int32) and frequencies (float32): an ``array`` appended to
in amortised O(1), or after a restore a read-only numpy view of the snapshot (of its mapped file, which stays mapped
while a view lives; ADR 0025). A viewed term's appended postings wait in its **tail** (rows newer than the view's):
at 1M notes copying each appended-to term's view, as an append did, held 214 MB more after 1,000 notes (ADR 0030).
A search reads a term as its parts (:meth:`Postings.parts`, the view and the tail under one idf); a snapshot and
every full pass join them in term order (:meth:`Postings.joined`).

The rows are the index's row numbers; what a row is (its note, length, liveness) is the index's, not known here.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

__all__ = ["Postings"]


def own_copy(view: np.ndarray, code: str) -> array:
    """An ``array`` holding a copy of a restored term's postings (``view``: rows ``"i"`` or frequencies ``"f"``)."""
    out = array(code)
    out.frombytes(memoryview(view).cast("B"))
    return out


class Postings:
    """Each term's id (``vocab``), document frequency (``df``, kept by the index) and postings; see the module
    docstring."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self.df: list[int] = []
        self._rows: list[array | np.ndarray] = []
        self._tfs: list[array | np.ndarray] = []
        self._tails: dict[int, tuple[array, array]] = {}  # a viewed term's appended (rows, tfs), newer rows

    def __len__(self) -> int:
        return len(self.vocab)

    def term_ids(self, terms: list[str]) -> list[int]:
        """Each term's id, a term new to the index numbered in the order it first comes."""
        vocab = self.vocab
        tids = list(map(vocab.get, terms))
        if None in tids:
            for j, tid in enumerate(tids):
                if tid is None:
                    tid = vocab.get(terms[j])  # a term new to the index, maybe twice in this batch
                    if tid is None:
                        tid = vocab[terms[j]] = len(vocab)
                        self._rows.append(array("i"))
                        self._tfs.append(array("f"))
                        self.df.append(0)
                    tids[j] = tid
        return tids

    def append(self, tids: list[int], starts: list[int], ends: list[int], row_b: bytes, tf_b: bytes) -> None:
        """Append to term ``tids[j]`` the postings ``[starts[j], ends[j])`` of ``row_b`` / ``tf_b`` (int32 rows,
        float32 frequencies, rows newer than the term's), counting them in its ``df``."""
        df, post_rows, post_tf = self.df, self._rows, self._tfs
        for tid, a, b in zip(tids, starts, ends):
            rows_of, tfs_of = post_rows[tid], post_tf[tid]
            if type(rows_of) is not array:  # a restored term's view of the snapshot: appended to its tail
                tail = self._tails.get(tid)
                if tail is None:
                    tail = self._tails[tid] = (array("i"), array("f"))
                rows_of, tfs_of = tail
            rows_of.frombytes(row_b[4 * a:4 * b])
            tfs_of.frombytes(tf_b[4 * a:4 * b])
            df[tid] += b - a

    def parts(self, tid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """A term's postings as (rows, tfs) parts, rows ascending across them: its own, or its snapshot view and
        the tail appended to it since."""
        parts = [(np.frombuffer(self._rows[tid], dtype=np.int32), np.frombuffer(self._tfs[tid], dtype=np.float32))]
        tail = self._tails.get(tid)
        if tail is not None:
            parts.append((np.frombuffer(tail[0], dtype=np.int32), np.frombuffer(tail[1], dtype=np.float32)))
        return parts

    def viewed(self, tid: int) -> bool:
        """Whether a term's postings are still a view of a snapshot (not an ``array`` of the index's own)."""
        return type(self._rows[tid]) is not array

    def tail(self, tid: int) -> tuple[array, array] | None:
        """A viewed term's appended (rows, tfs), or None."""
        return self._tails.get(tid)

    def _with_tails(self, lists: list, at: int) -> Iterator:
        """Each term's postings (``lists``: rows or tfs) followed by its tail's (``at``: 0 rows, 1 tfs)."""
        tails = self._tails
        for tid, part in enumerate(lists):
            yield part
            if tid in tails:
                yield tails[tid][at]

    def joined(self) -> tuple[np.ndarray, np.ndarray]:
        """Every posting's row joined into one flat array, grouped by term, rows ascending in a term: (postings per
        term, rows). :meth:`joined_tfs` is their weights, joined only by a pass that reads them all."""
        lengths = np.fromiter(map(len, self._rows), dtype=np.int64, count=len(self._rows))
        for tid, (rows, _) in self._tails.items():
            lengths[tid] += len(rows)
        return lengths, np.frombuffer(b"".join(self._with_tails(self._rows, 0)), dtype=np.int32)

    def joined_tfs(self) -> np.ndarray:
        return np.frombuffer(b"".join(self._with_tails(self._tfs, 1)), dtype=np.float32)

    def flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting as three flat arrays (term id, row, tf), grouped by term, rows ascending in a term."""
        lengths, rows = self.joined()
        return np.repeat(np.arange(lengths.size, dtype=np.int32), lengths), rows, self.joined_tfs()

    def tf_at(self, tid: int, at: int) -> float:
        """The frequency of a term's ``at``-th posting (a restored row's: in the term's view, before any tail)."""
        return self._tfs[tid][at]

    def find(self, row: int, terms: Iterable[str]) -> tuple[list[int], list[float]]:
        """The ids and frequencies of those of ``terms`` that ``row`` holds (a restored row: in the terms' views),
        by binary search in each term's postings, in the order of ``terms``."""
        tids, tfs = [], []
        post_rows, post_tf, vocab = self._rows, self._tfs, self.vocab
        for term in terms:
            tid = vocab.get(term)
            if tid is None:
                continue
            post = post_rows[tid]  # rows ascending
            at = bisect_left(post, row)
            if at < len(post) and post[at] == row:
                tids.append(tid)
                tfs.append(post_tf[tid][at])
        return tids, tfs

    def own_copies(self) -> None:
        """Give every term still reading a snapshot's postings where they lie a copy of its own (its tail joined),
        so that no file stays mapped for them."""
        for tid, rows_of in enumerate(self._rows):
            if type(rows_of) is not array:
                self._rows[tid], self._tfs[tid] = own_copy(rows_of, "i"), own_copy(self._tfs[tid], "f")
                tail = self._tails.pop(tid, None)
                if tail is not None:
                    self._rows[tid].extend(tail[0])
                    self._tfs[tid].extend(tail[1])

    def rebuild(self, terms: Sequence[tuple[np.ndarray, np.ndarray]]) -> None:
        """Every term's postings anew, as ``array``s of the index's own, from each row's (term ids, weights), rows
        numbered by their place in ``terms`` (a compaction; the vocabulary and ``df`` are unchanged)."""
        n_terms = len(self.vocab)
        self._rows = [array("i") for _ in range(n_terms)]
        self._tfs = [array("f") for _ in range(n_terms)]
        self._tails = {}
        for new_row, (tids, tfs) in enumerate(terms):
            for tid, tf in zip(tids.tolist(), tfs.tolist()):
                self._rows[tid].append(new_row)
                self._tfs[tid].append(tf)

    def restore(self, words: list[str], df: np.ndarray, rows: np.ndarray, tfs: np.ndarray) -> None:
        """Take a snapshot's postings (grouped by term, ``df`` each): each term's are a read-only view of ``rows`` and
        ``tfs`` (of its mapped file, which stays mapped while a view lives), what is appended to it waits in its
        tail: at 1M notes a copy per term was ~280 MB of fresh pages on every reopen (ADR 0025), and a copy per
        appended-to term 214 MB after 1,000 notes (ADR 0030)."""
        self.vocab = {w: i for i, w in enumerate(words)}
        bounds = np.concatenate(([0], np.cumsum(df))).tolist()
        rows, tfs = np.ascontiguousarray(rows), np.ascontiguousarray(tfs)
        self._rows = [rows[a:b] for a, b in zip(bounds, bounds[1:])]
        self._tfs = [tfs[a:b] for a, b in zip(bounds, bounds[1:])]
        self._tails = {}
        self.df = df.tolist()

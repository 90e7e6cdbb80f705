"""The restored half of :class:`~palimpsest_memory.packs.memory.bm25.BM25Index`: its snapshot, its restore, and the
term lists of the rows a restore brought back.

A restored index keeps its rows as slices of flat arrays (a pair of numpy views per row cost ~400 bytes a note) and
derives each row's term list from the postings only when something needs it: a row replaced or removed, a
compaction, the information prior's own words. Split from bm25.py by what the code is for (bringing an index
back, here; indexing and searching, there), not by data: both halves work on the postings and rows that
``BM25Index.__init__`` sets up, so this class is a part of it, not an index of its own.
"""
from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np

from .idrows import IdRows


def own_copy(view: np.ndarray, code: str) -> array:
    """An ``array`` holding a copy of a restored term's postings (``view``: rows ``"i"`` or frequencies ``"f"``)."""
    out = array(code)
    out.frombytes(memoryview(view).cast("B"))
    return out


class RestoredRows:
    """Snapshot, restore and the restored rows' term lists of :class:`BM25Index` (its attributes, its rows), and
    what reads a row's own words from them (``own_information``, the information prior's)."""

    def _term_postings(self, tid: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """A term's postings as (rows, tfs) parts, rows ascending across them: its own, or its snapshot view and
        the tail appended to it since."""
        parts = [(np.frombuffer(self._post_rows[tid], dtype=np.int32),
                  np.frombuffer(self._post_tf[tid], dtype=np.float32))]
        tail = self._post_tail.get(tid)
        if tail is not None:
            parts.append((np.frombuffer(tail[0], dtype=np.int32), np.frombuffer(tail[1], dtype=np.float32)))
        return parts

    def _with_tails(self, lists: list, at: int) -> Iterator:
        """Each term's postings (``lists``: rows or tfs) followed by its tail's (``at``: 0 rows, 1 tfs)."""
        tails = self._post_tail
        for tid, part in enumerate(lists):
            yield part
            if tid in tails:
                yield tails[tid][at]

    def _joined(self) -> tuple[np.ndarray, np.ndarray]:
        """Every posting's row joined into one flat array, grouped by term, rows ascending in a term: (postings per
        term, rows). ``_joined_tfs`` is their weights, joined only by a pass that reads them all."""
        lengths = np.fromiter(map(len, self._post_rows), dtype=np.int64, count=len(self._post_rows))
        for tid, (rows, _) in self._post_tail.items():
            lengths[tid] += len(rows)
        return lengths, np.frombuffer(b"".join(self._with_tails(self._post_rows, 0)), dtype=np.int32)

    def _joined_tfs(self) -> np.ndarray:
        return np.frombuffer(b"".join(self._with_tails(self._post_tf, 1)), dtype=np.float32)

    def _postings(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every posting as three flat arrays (term id, row, tf), grouped by term, rows ascending in a term."""
        lengths, rows = self._joined()
        return np.repeat(np.arange(lengths.size, dtype=np.int32), lengths), rows, self._joined_tfs()

    def _prefetch_flat(self, ids: Iterable[int], bags: Sequence[Mapping[str, float]] | None = None) -> None:
        """The term lists of the restored rows these ids are about to replace or remove. A few (an ingest after a
        restore re-indexes a few thread neighbours): looked up by the terms of the bag replacing them (``bags``,
        :meth:`_lookup_row`), else found with one pass over the postings, kept per row; many: all rows' lists
        derived at once (``_derive_flat``: at 1M notes ~3 s and ~1 GB while it runs)."""
        if self._flat_starts is not None or not self._flat_rows:
            return
        flat, row_of = self._flat_rows, self._row_of
        ids = list(ids)
        rows = sorted({r for r in (row_of.get(int(i)) for i in ids) if r is not None and r < flat}
                      - set(self._flat_some))
        if rows and bags is not None and self._flat_count is not None:
            bag_of = dict(zip((int(i) for i in ids), bags))
            rows = [r for r in rows if not self._lookup_row(r, bag_of[int(self._ids[r])])]
        if not rows:
            return
        if len(rows) + len(self._flat_some) > max(64, flat // 20):
            self._derive_flat()
            return
        self._scan_flat(rows)

    def _scan_flat(self, rows: list[int]) -> None:
        """Restored rows' term lists from one pass over every posting, kept per row."""
        flat = self._flat_rows
        lengths, prow = self._joined()
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        want = np.zeros(flat, dtype=bool)
        want[rows] = True
        hit = np.flatnonzero(want[np.minimum(prow, flat - 1)] & (prow < flat))
        tids = (np.searchsorted(bounds, hit, side="right") - 1).astype(np.int32)
        tfs = np.array([self._post_tf[t][p] for t, p in zip(tids.tolist(), (hit - bounds[tids]).tolist())],
                       dtype=np.float32)
        prow = prow[hit]
        for r in rows:  # each row's terms ascending, as _derive_flat gives them
            mine = prow == r
            self._flat_some[r] = (tids[mine], tfs[mine])

    def _lookup_row(self, row: int, bag: Mapping[str, float]) -> bool:
        """A restored row's term list found by binary search in the postings of the terms of ``bag`` (the row's
        new bag: its own words and its thread neighbours', which usually holds every term of the old one), kept
        when that finds as many terms as the row holds (``_flat_count``); False (a term of the old bag is not in
        the new one: a neighbour replaced) leaves the row to the full pass. At 1M notes the full pass joins
        every posting (~300 MB) for each such call: an ingest after a reopen, adding to threads whose last
        notes were restored, paid it on every batch."""
        tids, tfs = [], []
        post_rows, post_tf, vocab = self._post_rows, self._post_tf, self._vocab
        for term in bag:
            tid = vocab.get(term)
            if tid is None:
                continue
            post = post_rows[tid]  # rows ascending
            at = bisect_left(post, row)
            if at < len(post) and post[at] == row:
                tids.append(tid)
                tfs.append(post_tf[tid][at])
        if len(tids) != int(self._flat_count[row]):
            return False
        tid_arr = np.asarray(tids, dtype=np.int32)
        order = np.argsort(tid_arr, kind="stable")  # ascending, as _derive_flat gives
        self._flat_some[row] = (tid_arr[order], np.asarray(tfs, dtype=np.float32)[order])
        return True

    def _derive_own(self) -> None:
        """Each restored row's own words (the terms it holds at weight ≥ 1), term ids ascending: the postings of
        weight ≥ 1, transposed to rows as ``_derive_flat`` does. At 1M notes ~40 % of the postings are a thread
        neighbour's words below weight 1, which the information prior never reads."""
        lengths, rows = self._joined()
        self._own_starts, self._own_tids = self._own_lists(lengths, rows, self._joined_tfs(), self._flat_rows)

    def _derive_flat(self) -> None:
        """The restored rows' (term ids, weights), rebuilt from the postings when first needed (a row replaced or
        removed, a compaction, a recall's information prior): the postings grouped by term, transposed to rows
        (a sparse matrix's CSR → CSC conversion, linear in the postings; each row's terms ascending, as a stable
        sort of the postings by row gives them)."""
        from scipy.sparse import csr_matrix
        lengths, rows = self._joined()
        tfs = self._joined_tfs()
        bounds = np.concatenate(([0], np.cumsum(lengths)))
        width = max(self._flat_rows, int(rows.max()) + 1 if rows.size else 0)
        by_row = csr_matrix((tfs, rows, bounds), shape=(lengths.size, width)).tocsc()
        starts = by_row.indptr[: self._flat_rows + 1].astype(np.int64)
        end = int(starts[-1])
        self._flat_tids = by_row.indices[:end].astype(np.int32, copy=False)
        self._flat_tfs = by_row.data[:end].astype(np.float32, copy=False)
        self._flat_some = {}
        self._flat_starts = starts
        self._own_starts, self._own_tids = None, np.zeros(0, dtype=np.int32)  # (the full lists hold them)

    def snapshot(self) -> dict[str, np.ndarray]:
        """The live rows as flat arrays (what :meth:`restore` needs), postings grouped by term; dead rows are left
        out and the live ones renumbered densely (in row order)."""
        if any("\n" in w for w in self._vocab):  # tokens are words; a custom tokenizer might not be
            raise ValueError("a token contains a newline: this index cannot be snapshotted")
        alive = self._alive[: self._n_rows]
        tids, rows, tfs = self._postings()
        keep = alive[rows]
        tids, rows, tfs = tids[keep], rows[keep], tfs[keep]
        renumber = np.cumsum(alive, dtype=np.int64) - 1
        df = np.bincount(tids, minlength=len(self._vocab)).astype(np.int64)
        used = df > 0  # a word no live row holds (a forgotten note's) is left out: the snapshot holds no trace of it
        vocab = "\n".join(w for w, u in zip(self._vocab, used.tolist()) if u).encode("utf-8")
        live = np.flatnonzero(alive)
        rows = renumber[rows].astype(np.int32)
        own_starts, own_tids = self._own_lists(df, rows, tfs, live.size)
        return {"ids": self._ids[live].copy(), "dl": self._dl[live].copy(),
                "df": df[used], "rows": rows, "tfs": tfs.copy(),
                "vocab": np.frombuffer(vocab, dtype=np.uint8), "total_len": np.array([self._total_len]),
                # each row's own words (term ids as restored: the used ones renumbered), so a restore need not
                # derive them at its first recall (~1.4 s at 1M notes)
                "own_starts": own_starts, "own_tids": (np.cumsum(used) - 1)[own_tids].astype(np.int32),
                # how many terms each row holds, so re-indexing a restored row can check a lookup (_lookup_row)
                "nterms": np.bincount(rows, minlength=live.size).astype(np.int32)}

    @staticmethod
    def _own_lists(df: np.ndarray, rows: np.ndarray, tfs: np.ndarray, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        """Per row, the term ids it holds at weight ≥ 1, ascending, from postings grouped by term (``df`` each):
        (starts, term ids), a CSR → CSC transpose of the postings of weight ≥ 1."""
        from scipy.sparse import csr_matrix
        keep = (tfs >= 1.0) & (rows < n_rows)
        term = np.repeat(np.arange(df.size, dtype=np.int32), df)[keep]
        bounds = np.concatenate(([0], np.cumsum(np.bincount(term, minlength=df.size))))
        by_row = csr_matrix((np.ones(int(keep.sum()), dtype=np.int8), rows[keep], bounds),
                            shape=(df.size, n_rows)).tocsc()
        return by_row.indptr.astype(np.int64), by_row.indices.astype(np.int32, copy=False)

    def own_information(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Per id, ``Σ idf(t)`` over the distinct terms its row holds at weight ≥ 1 — the note's own words: a
        thread neighbour's word is in the bag at the expansion weight (< 1) unless both neighbours say it. How much
        a note says, in the index's own statistics (recall's information prior, ADR 0008); 0 for unknown ids."""
        rows = self._row_of.rows_of(np.asarray(ids, dtype=np.int64).reshape(-1))
        out = np.zeros(rows.size, dtype=np.float64)
        found = np.flatnonzero(rows >= 0)
        if found.size == 0 or self._n_alive == 0:
            return out
        rows = rows[found]
        tids, tfs, owner = [], [], []
        flat = rows < self._flat_rows
        if flat.any():  # rows restored from a snapshot: one gather from the flat arrays
            if self._flat_starts is not None:  # every term of each restored row (derived for a replace or remove)
                starts, flat_tids, flat_tfs = self._flat_starts, self._flat_tids, self._flat_tfs
            else:  # only their own words, all this needs (derived at the first recall: smaller, and faster)
                if self._own_starts is None:
                    self._derive_own()
                starts, flat_tids, flat_tfs = self._own_starts, self._own_tids, None
            fr = rows[flat]
            start, size = starts[fr], starts[fr + 1] - starts[fr]
            pos = np.repeat(start - np.r_[0, np.cumsum(size)[:-1]], size) + np.arange(int(size.sum()))
            tids.append(flat_tids[pos])
            tfs.append(flat_tfs[pos] if flat_tfs is not None else np.ones(pos.size, dtype=np.float32))
            owner.append(np.repeat(np.flatnonzero(flat), size))
        for j in np.flatnonzero(~flat).tolist():  # rows added since (or restored, looked up): small arrays each
            t, w = self._terms(int(rows[j]))
            tids.append(t)
            tfs.append(w)
            owner.append(np.full(t.size, j, dtype=np.int64))
        tid, own = np.concatenate(tids), np.concatenate(tfs) >= 1.0
        tid, who = tid[own], np.concatenate(owner)[own]
        # each row's terms in term order, whichever store they came from (restored, looked up, added): the float
        # sum is then the same for the same note in a live, a restored and a rebuilt index (ties stay ties)
        order = np.lexsort((tid, who))
        tid, who = tid[order], who[order]
        uniq, inv = np.unique(tid, return_inverse=True)  # each distinct term's df looked up once
        df = np.fromiter(map(self._df.__getitem__, uniq.tolist()), dtype=np.float64, count=uniq.size)
        idf = np.log1p((self._n_alive - df + 0.5) / (df + 0.5))[inv]
        out[found] = np.bincount(who, weights=idf, minlength=found.size)
        return out

    def own_postings(self) -> None:
        """Give every term still reading a snapshot's postings where they lie a copy of its own, so that no file
        stays mapped for them (memory.forget deletes the files: their bytes must not outlive it, ADR 0018)."""
        for tid, rows_of in enumerate(self._post_rows):
            if type(rows_of) is not array:
                self._post_rows[tid], self._post_tf[tid] = own_copy(rows_of, "i"), own_copy(self._post_tf[tid], "f")
                tail = self._post_tail.pop(tid, None)
                if tail is not None:
                    self._post_rows[tid].extend(tail[0])
                    self._post_tf[tid].extend(tail[1])

    def restore(self, snap: dict[str, np.ndarray]) -> None:
        """Replace this (empty) index's content with a :meth:`snapshot`'s."""
        if self._n_rows:
            raise ValueError("restore needs an empty index")
        # the snapshot's arrays may view its mapped file: the postings are kept as views (below), the rest copied
        ids, dl = np.array(snap["ids"], dtype=np.int64), snap["dl"].astype(np.float32, copy=False)
        df = snap["df"].astype(np.int64, copy=False)
        rows, tfs = snap["rows"].astype(np.int32, copy=False), snap["tfs"].astype(np.float32, copy=False)
        text = snap["vocab"].tobytes().decode("utf-8")
        words = text.split("\n") if text else []
        n, n_terms = ids.size, len(words)
        if df.size != n_terms or int(df.sum()) != rows.size or rows.size != tfs.size or dl.size != n or (
                rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n)):
            raise ValueError("inconsistent full-text snapshot")
        self._vocab = {w: i for i, w in enumerate(words)}
        self._grow(n)
        self._ids[:n], self._dl[:n], self._alive[:n] = ids, dl, True
        self._row_terms = []
        self._flat_rows, self._flat_starts = n, None  # derived from the postings when first needed
        self._own_starts, self._own_tids = None, np.zeros(0, dtype=np.int32)
        if "own_starts" in snap and snap["own_starts"].size == n + 1 and \
                int(snap["own_starts"][-1]) == snap["own_tids"].size:  # (a snapshot from before: derived when asked)
            self._own_starts = np.array(snap["own_starts"], dtype=np.int64)
            self._own_tids = np.array(snap["own_tids"], dtype=np.int32)
        self._flat_some = {}
        count = snap.get("nterms")  # (None in a snapshot from before: the full pass instead)
        self._flat_count = np.array(count, dtype=np.int32) if count is not None and count.size == n else None
        bounds = np.concatenate(([0], np.cumsum(df))).tolist()
        # each term's postings are a read-only view of the snapshot's arrays (of its mapped file, which stays mapped
        # while a view lives), and what ``add_weighted`` appends to the term waits in its tail (``_post_tail``): at
        # 1M notes a copy per term was ~280 MB of fresh pages on every reopen (ADR 0025), and a copy per appended-to
        # term 214 MB after 1,000 notes (ADR 0030)
        rows, tfs = np.ascontiguousarray(rows), np.ascontiguousarray(tfs)
        self._post_rows = [rows[a:b] for a, b in zip(bounds, bounds[1:])]
        self._post_tf = [tfs[a:b] for a, b in zip(bounds, bounds[1:])]
        self._post_tail = {}
        self._df = df.tolist()
        self._row_of = IdRows.of(ids, np.arange(n))
        self._n_rows = self._n_alive = n
        self._total_len = float(snap["total_len"][0])
        self._n_dead = 0
        self._last = None

    def snapshot_ids(self) -> np.ndarray:
        """The live ids (row order)."""
        return self._ids[np.flatnonzero(self._alive[: self._n_rows])]

    def digest(self) -> tuple:
        """What the index holds, comparable across builds: each live note's id and length (rounded: a bag's
        weights may sum in another order), and the document frequency of every term in use."""
        live = np.flatnonzero(self._alive[: self._n_rows])
        order = np.argsort(self._ids[live], kind="stable")
        docs = tuple(zip(self._ids[live][order].tolist(), np.round(self._dl[live][order], 3).tolist()))
        df = tuple(sorted((w, self._df[t]) for w, t in self._vocab.items() if self._df[t] > 0))
        return docs, hashlib.sha1(repr(df).encode()).hexdigest()

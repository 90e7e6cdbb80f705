"""Incremental Okapi BM25 index keyed by integer note ids.

Layout
------
* Each document gets a *row* (append-only).  Per term, the postings are two
  ``array.array`` buffers (rows as int32, term frequencies as float32) that grow
  by amortised appends; a query views them with ``np.frombuffer`` (no copy).
  After a restore a term's postings are views of the snapshot, what is appended
  to them kept as their tail (bm25_postings.py).
* Adding one document costs O(#distinct terms of that document); nothing is
  rebuilt.  Re-adding an existing id (an update) tombstones the old row and
  appends a new one.
* ``remove`` tombstones rows and fixes document frequencies at once; when more
  than a third of the rows are dead the postings are compacted (amortised O(1)
  per removal).
* Term frequencies may be fractional (``add_weighted``): that is how a caller
  expands a note with down-weighted text of its neighbours.

Scoring: ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (always positive),
``score = Σ_t idf(t) · tf·(k1+1) / (tf + k1·(1 - b + b·dl/avgdl))`` over the
distinct query terms, OR semantics. ``N``, ``df`` and ``avgdl`` are the index's, or a scope's when a search is
given one (``within``, bm25_scope.py).  A query is cut to its first
``max_query_terms`` distinct tokens (default 16) so a pasted paragraph cannot
become a full scan; the cap is applied after stopword removal.

Parts: the index holds its rows (note id, length, liveness, the term lists of rows added since a restore) and has
its postings (``bm25_postings.Postings``), the term lists of the rows a restore brought back
(``bm25_rows.RestoredRows``, derived from the postings when first needed) and its rows' scope groups
(``bm25_scope.ScopeGroups``). Each part is its own object with its own methods; none reads another's attributes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import accumulate, chain
from typing import TYPE_CHECKING

import numpy as np

from .bm25_postings import Postings
from .bm25_rows import RestoredRows, snapshot_arrays, snapshot_parts
from .bm25_scope import Collection, ScopeGroups
from .idrows import IdRows
from .text import tokenize, tokenize_query

if TYPE_CHECKING:
    from .bags import FlatBags

__all__ = ["BM25Index"]


def _allowed_filter(allowed, ids: np.ndarray) -> np.ndarray:
    """Boolean mask over ``ids`` telling which are allowed.

    ``allowed`` is either a boolean array indexed by note id (ids past its end
    are not allowed), an array/sequence/set of allowed ids, or an object whose
    ``allows(ids)`` answers (the memory index's mask over its slots).
    """
    allows = getattr(allowed, "allows", None)
    if allows is not None:
        return allows(ids)
    if isinstance(allowed, (set, frozenset)):
        allowed = np.fromiter(allowed, dtype=np.int64, count=len(allowed))
    a = np.asarray(allowed)
    if a.dtype == np.bool_:
        ok = ids < a.shape[0]
        out = np.zeros(ids.shape[0], dtype=bool)
        out[ok] = a[ids[ok]]
        return out
    return np.isin(ids, a.astype(np.int64, copy=False))


_SAMPLE = 8  # search's lower bound on the k-th best score: from every 8th match…
_SAMPLED_TOP = 4 * _SAMPLE  # …once there are this many times k matches (a sample of at least 4 k)


class BM25Index:
    """Okapi BM25 over integer ids; see the module docstring."""

    def __init__(
        self,
        k1: float = 1.2,
        b: float = 0.75,
        *,
        tokenizer: Callable[[str], list[str]] = tokenize,
        max_query_terms: int = 16,
    ) -> None:
        if k1 < 0 or not (0.0 <= b <= 1.0):
            raise ValueError("need k1 >= 0 and 0 <= b <= 1")
        self.k1 = float(k1)
        self.b = float(b)
        self.max_query_terms = int(max_query_terms)
        self._tokenize = tokenizer
        self.postings = Postings()  # the vocabulary, each term's df and postings (bm25_postings.py)
        self._row_of = IdRows()  # note id -> row (idrows.py)
        self._ids = np.zeros(1024, dtype=np.int64)
        self._dl = np.zeros(1024, dtype=np.float32)
        self._alive = np.zeros(1024, dtype=bool)
        # each row's (term ids, weights): rows added one by one keep a pair of small arrays; rows restored from a
        # snapshot are the restored part's (bm25_rows.py), rows [0, restored.n)
        self._row_terms: list[tuple[np.ndarray, np.ndarray] | None] = []
        self.restored = RestoredRows(self.postings)
        self.groups = ScopeGroups(self._ids.shape[0])  # each row's scope group and each group's statistics
        self._n_rows = 0
        self._n_alive = 0
        self._total_len = 0.0
        self._n_dead = 0
        self._last: tuple[str, Collection | None, np.ndarray | None] | None = None

    # ------------------------------------------------------------------ size
    def __len__(self) -> int:
        return self._n_alive

    def __contains__(self, note_id: int) -> bool:
        return int(note_id) in self._row_of

    @property
    def avgdl(self) -> float:
        return self._total_len / self._n_alive if self._n_alive else 0.0

    def row_of(self, note_id: int) -> int | None:
        """The row of a held note id, or None."""
        return self._row_of.get(int(note_id))

    def terms(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """A live row's (term ids, weights)."""
        if row < self.restored.n:
            return self.restored.terms(row)
        got = self._row_terms[row - self.restored.n]
        assert got is not None, "a dead row has no terms"
        return got

    # ----------------------------------------------------------------- write
    def _grow(self, need: int) -> None:
        cap = self._ids.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name in ("_ids", "_dl", "_alive"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype)
            arr[: self._n_rows] = old[: self._n_rows]
            setattr(self, name, arr)
        self.groups.grow(new, self._n_rows)

    def add(self, ids: Sequence[int] | np.ndarray, texts: Sequence[str]) -> None:
        """Index ``texts`` under ``ids`` (an existing id is replaced)."""
        if len(ids) != len(texts):
            raise ValueError("ids and texts differ in length")
        self.add_weighted(ids, [Counter(self._tokenize(t)) for t in texts])

    def add_weighted(self, ids: Sequence[int] | np.ndarray, bags: Sequence[Mapping[str, float]]) -> None:
        """Index bags of ``{term: weight}``; weights act as (fractional) term frequencies.

        The document length is the sum of the weights.
        """
        if len(ids) != len(bags):
            raise ValueError("ids and bags differ in length")
        if len(set(map(int, ids))) != len(ids):  # an id twice in one call: the later bag wins, one at a time
            for note_id, bag in zip(ids, bags):
                self.add_weighted([note_id], [bag])
            return
        self._prefetch(ids, bags)
        note_ids = [int(i) for i in ids]
        # the whole batch's terms and weights in one pass each (a follower applies every other process's notes:
        # a Python step per (note, term) was most of what it spent, issue 41); a weight of 0 or less is no term
        terms = list(chain.from_iterable(bags))
        weights = list(chain.from_iterable(bag.values() for bag in bags))
        counts = list(map(len, bags))
        if weights and not min(weights) > 0.0:
            kept = [[t for t, w in bag.items() if w > 0.0] for bag in bags]
            weights = [bag[t] for bag, ts in zip(bags, kept) for t in ts]
            terms, counts = list(chain.from_iterable(kept)), list(map(len, kept))
        self._add_rows(note_ids, self.postings.term_ids(terms), weights, counts)

    def add_flat(self, ids: np.ndarray, bags: "FlatBags") -> None:
        """Index bags given as flat arrays (``bags.FlatBags``: a batch's, made without a dict per note), as
        :meth:`add_weighted` indexes the same bags as dicts. ``ids`` are distinct; every weight is above 0."""
        note_ids = [int(i) for i in ids]
        row_of = self._row_of
        again = [j for j, i in enumerate(note_ids) if i in row_of]
        if again:  # rows replaced (a thread neighbour re-indexed): the restored ones' term lists are read first
            self._prefetch([note_ids[j] for j in again], [bags.bag(j) for j in again])
        # the batch's distinct terms mapped once, in the order of their first entry (new ones numbered in it)
        seen = np.unique(bags.codes, return_index=True)
        used = seen[0][np.argsort(seen[1], kind="stable")]
        lut = np.zeros(len(bags.terms), dtype=np.int64)
        lut[used] = self.postings.term_ids([bags.terms[c] for c in used.tolist()])
        self._add_rows(note_ids, lut[bags.codes], bags.weights.tolist(), bags.counts.tolist())

    def _prefetch(self, ids: Iterable[int], bags: Sequence[Mapping[str, float]] | None = None) -> None:
        """Have the restored part find the term lists of the restored rows these ids are about to replace or
        remove, by the bags replacing them when given (``RestoredRows.prefetch``)."""
        if not self.restored.lazy:
            return
        ids = list(ids)
        rows = [self._row_of.get(int(i)) for i in ids]
        bag_of = None if bags is None else {r: bag for r, bag in zip(rows, bags) if r is not None}
        self.restored.prefetch([r for r in rows if r is not None], bag_of)

    def _add_rows(self, note_ids: list[int], tids: Sequence[int] | np.ndarray, weights: list[float],
                  counts: list[int]) -> None:
        """Append the rows of ``note_ids`` (each replacing its old row), row ``i`` holding the next ``counts[i]``
        of ``tids`` with their ``weights``; its length is the sum of its weights."""
        self._grow(self._n_rows + len(note_ids))
        first = self._n_rows
        n = len(note_ids)
        tid_all = np.array(tids, dtype=np.int32)
        tf_all = np.array(weights, dtype=np.float64).astype(np.float32)
        ends = list(accumulate(counts))
        dls = [float(sum(weights[a:b])) for a, b in zip([0, *ends[:-1]], ends)]
        rows = np.arange(first, first + n)
        self._ids[first:first + n] = note_ids
        self._dl[first:first + n] = dls
        self._alive[first:first + n] = True
        self._row_terms.extend((tid_all[a:b].copy(), tf_all[a:b].copy()) for a, b in zip([0, *ends[:-1]], ends))
        row_of = self._row_of
        for note_id, dl in zip(note_ids, dls):  # a note at a time, as before: the same float sums
            if note_id in row_of:
                self._remove_one(note_id)
            self._total_len += dl
        row_of.set_many(np.array(note_ids, dtype=np.int64), rows)
        self._n_rows += n
        self._n_alive += n
        lengths = np.array(counts, dtype=np.int64)
        # postings: appended per term, not per (term, note) — rows ascending within each term, as one at a time
        if lengths.sum():
            row_all = np.repeat(np.arange(first, self._n_rows, dtype=np.int32), lengths)
            order = np.argsort(tid_all, kind="stable")
            tid_s, row_s, tf_s = tid_all[order], row_all[order], tf_all[order]
            cut = np.flatnonzero(np.diff(tid_s)) + 1
            starts = np.concatenate(([0], cut)).tolist()
            ends = np.concatenate((cut, [tid_s.size])).tolist()
            self.postings.append(tid_s[starts].tolist(), starts, ends, row_s.tobytes(), tf_s.tobytes())
        self._last = None

    def _remove_one(self, note_id: int) -> bool:
        row = self._row_of.pop(note_id, None)
        if row is None:
            return False
        tids, tfs = self.terms(row)
        df = self.postings.df
        for tid in tids.tolist():
            df[tid] -= 1
        self.groups.ungroup(row, float(self._dl[row]))
        self._alive[row] = False
        self.restored.forget(row)  # a dead row's terms are never read again
        if row >= self.restored.n:
            self._row_terms[row - self.restored.n] = None
        self._n_alive -= 1
        self._total_len -= float(self._dl[row])
        self._n_dead += 1
        return True

    def remove(self, ids: Iterable[int]) -> int:
        """Remove ids (unknown ids are ignored); returns how many were removed."""
        ids = [int(i) for i in ids]
        self._prefetch(ids)
        n = sum(self._remove_one(int(i)) for i in ids)
        if self._n_dead > 1024 and self._n_dead * 3 > self._n_rows:
            self._compact()
        self._last = None
        return n

    def _compact(self) -> None:
        live = [r for r in range(self._n_rows) if self._alive[r]]
        ids = self._ids[live].copy()
        dl = self._dl[live].copy()
        self.groups.compact(live)
        terms = [self.terms(r) for r in live]
        self.postings.rebuild(terms)
        n = len(live)
        self._n_rows = n
        self._ids[:n] = ids
        self._dl[:n] = dl
        self._alive[:n] = True
        self._alive[n:] = False
        self._row_terms = terms
        self.restored.clear()
        self._row_of = IdRows.of(ids, np.arange(ids.size))
        self._n_dead = 0

    def set_groups(self, ids: Sequence[int] | np.ndarray, groups: Sequence[int] | np.ndarray) -> None:
        """Put the current rows of ``ids`` in ``groups`` (unknown ids are ignored; bm25_scope.py)."""
        rows = self._row_of.rows_of(np.asarray(ids, dtype=np.int64).reshape(-1))
        groups = np.asarray(groups, dtype=np.int64).reshape(-1)
        known = rows >= 0
        if self.groups.set(rows[known], groups[known], self._dl):
            self._last = None

    def collection(self, group: int) -> Collection | None:
        """The statistics of ``group``'s rows, for ``search(within=...)``; None when the group holds every row (the
        index's own statistics are then the same)."""
        return self.groups.collection(group, self._n_alive)

    # ------------------------------------------------------------------ read
    def query_terms(self, query: str) -> list[str]:
        """The distinct tokens of ``query`` that the index would use (capped)."""
        return tokenize_query(query, self.max_query_terms) if self._tokenize is tokenize else list(
            dict.fromkeys(self._tokenize(query))
        )[: self.max_query_terms]

    def _score_rows(self, query: str, within: Collection | None = None) -> np.ndarray | None:
        """Dense score per row (dead rows may hold garbage); None when no term is known. ``within``: the
        statistics of the collection searched (a scope's), else the index's."""
        last = self._last
        if last is not None and last[0] == query and last[1] is within:
            return last[2]
        n = self._n_rows
        N = self._n_alive if within is None else within.n
        if n == 0 or N == 0:
            return None
        avgdl = (self.avgdl if within is None else within.avgdl) or 1.0
        k1, b = self.k1, self.b
        # k1 (1 − b + b·dl/avgdl) as dl·per_len + fixed: two passes over a posting list instead of four
        per_len, fixed = k1 * b / avgdl, k1 * (1.0 - b)
        rows_parts = []
        w_parts = []
        postings = self.postings
        for term in self.query_terms(query):
            tid = postings.vocab.get(term)
            if tid is None:
                continue
            df = postings.df[tid]
            if df <= 0:
                continue
            parts = postings.parts(tid)
            if within is not None and (df := within.df(tid, [rows for rows, _ in parts])) == 0:
                continue  # a word no note of the collection says (its rows elsewhere are filtered out anyway)
            idf = np.log1p((N - df + 0.5) / (df + 0.5))
            for rows, tf in parts:
                norm = self._dl[rows] * np.float32(per_len)
                norm += np.float32(fixed)
                norm += tf
                w = tf / norm
                w *= np.float32(idf * (k1 + 1.0))
                rows_parts.append(rows)
                w_parts.append(w)
        if not rows_parts:
            scores = None
        else:
            rows = np.concatenate(rows_parts) if len(rows_parts) > 1 else rows_parts[0]
            w = np.concatenate(w_parts) if len(w_parts) > 1 else w_parts[0]
            scores = np.bincount(rows, weights=w, minlength=n)
        self._last = (query, within, scores)
        return scores

    def search(self, query: str, k: int = 10, allowed=None, within: Collection | None = None
               ) -> list[tuple[int, float]]:
        """Top-``k`` ``(id, score)`` by BM25, best first; only scores > 0.

        ``allowed``: ``None`` (all ids), a boolean array indexed by note id, or
        an array/sequence/set of allowed ids. ``within``: score with the statistics of this collection (a
        scope's group, :meth:`collection`) instead of the whole index's.
        """
        if k <= 0:
            return []
        scores = self._score_rows(query, within)
        if scores is None:
            return []
        cand = np.flatnonzero(scores > 0)
        cand = cand[self._alive[cand]]  # over the matches, not every row
        if allowed is not None and cand.size:
            if hasattr(allowed, "allows"):  # asked for every row at once: the answer is remembered per row array
                cand = cand[allowed.allows(self._ids[: self._n_rows], cand)]
            else:
                cand = cand[_allowed_filter(allowed, self._ids[cand])]
        if cand.size == 0:
            return []
        s = scores[cand]
        if cand.size > _SAMPLED_TOP * k:
            # the k-th best of every _SAMPLE-th match is at most the k-th best of all: keep only the matches at or
            # above it before the exact partition (a common query word matches ~10 % of a large store)
            sub = s[::_SAMPLE]
            keep = s >= np.partition(sub, sub.size - k)[sub.size - k]
            cand, s = cand[keep], s[keep]
        if cand.size > k:
            kth = np.partition(s, s.size - k)[s.size - k]
            keep = s >= kth  # every tie at the boundary, so the id tie-break is deterministic
            cand, s = cand[keep], s[keep]
        order = np.lexsort((self._ids[cand], -s))[:k]
        return list(zip(self._ids[cand[order]].tolist(), s[order].tolist()))

    def score_ids(self, query: str, ids: Sequence[int] | np.ndarray, within: Collection | None = None
                  ) -> np.ndarray:
        """BM25 score of ``query`` for each of ``ids`` (0.0 for unknown ids or no match); ``within`` as in
        :meth:`search`."""
        out = np.zeros(len(ids), dtype=np.float64)
        scores = self._score_rows(query, within)
        if scores is None:
            return out
        for j, i in enumerate(ids):
            r = self._row_of.get(int(i))
            if r is not None:
                out[j] = scores[r]
        return out

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
        flat = rows < self.restored.n
        if flat.any():  # rows restored from a snapshot: one gather from the restored part's flat arrays
            got, weights, size = self.restored.own_words(rows[flat])
            tids.append(got)
            tfs.append(weights if weights is not None else np.ones(got.size, dtype=np.float32))
            owner.append(np.repeat(np.flatnonzero(flat), size))
        for j in np.flatnonzero(~flat).tolist():  # rows added since (or restored, looked up): small arrays each
            t, w = self.terms(int(rows[j]))
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
        df = np.fromiter(map(self.postings.df.__getitem__, uniq.tolist()), dtype=np.float64, count=uniq.size)
        idf = np.log1p((self._n_alive - df + 0.5) / (df + 0.5))[inv]
        out[found] = np.bincount(who, weights=idf, minlength=found.size)
        return out

    # ------------------------------------------------------------- snapshot
    def snapshot(self) -> dict[str, np.ndarray]:
        """The live rows as flat arrays (what :meth:`restore` needs), postings grouped by term; dead rows are left
        out and the live ones renumbered densely (in row order; ``bm25_rows.snapshot_arrays``)."""
        n = self._n_rows
        return snapshot_arrays(self.postings, self._alive[:n], self._ids[:n], self._dl[:n], self._total_len)

    def restore(self, snap: dict[str, np.ndarray]) -> None:
        """Replace this (empty) index's content with a :meth:`snapshot`'s."""
        if self._n_rows:
            raise ValueError("restore needs an empty index")
        ids, dl, words, df, rows, tfs = snapshot_parts(snap)
        n = ids.size
        self._grow(n)
        self._ids[:n], self._dl[:n], self._alive[:n] = ids, dl, True
        self._row_terms = []
        self.restored.restore(n, snap)  # their term lists derived from the postings when first needed
        self.postings.restore(words, df, rows, tfs)
        self._row_of = IdRows.of(ids, np.arange(n))
        self._n_rows = self._n_alive = n
        self._total_len = float(snap["total_len"][0])
        self._n_dead = 0
        self._last = None

    def own_postings(self) -> None:
        """Give every term still reading a snapshot's postings where they lie a copy of its own, so that no file
        stays mapped for them (memory.forget deletes the files: their bytes must not outlive it, ADR 0018)."""
        self.postings.own_copies()

    def snapshot_ids(self) -> np.ndarray:
        """The live ids (row order)."""
        return self._ids[np.flatnonzero(self._alive[: self._n_rows])]

    def digest(self) -> tuple:
        """What the index holds, comparable across builds: each live note's id and length (rounded: a bag's
        weights may sum in another order), and the document frequency of every term in use."""
        live = np.flatnonzero(self._alive[: self._n_rows])
        order = np.argsort(self._ids[live], kind="stable")
        docs = tuple(zip(self._ids[live][order].tolist(), np.round(self._dl[live][order], 3).tolist()))
        df = self.postings.df
        df = tuple(sorted((w, df[t]) for w, t in self.postings.vocab.items() if df[t] > 0))
        return docs, hashlib.sha1(repr(df).encode()).hexdigest()

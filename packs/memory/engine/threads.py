"""Threads: which notes sit next to which (a chat session, a meeting), and write-time document expansion.

See ``packs/memory/engine/context_signals.py`` for how the signals are used and what they measured.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import chain

import numpy as np

__all__ = ["Episodes", "ThreadExpander", "ThreadLinks", "expand_bag"]


# ------------------------------------------------------------- thread links
class ThreadLinks:
    """Previous/next note of the same thread, maintained incrementally.

    Order inside a thread is by note id (ids increase in insertion order).
    ``prev``/``next`` pointers are kept per note, so :meth:`neighbours` is two
    dict look-ups; an append is O(1) and an out-of-order insert a
    ``bisect.insort`` into the thread's member list.
    """

    def __init__(self) -> None:
        self._members: dict[Hashable, list[int]] = {}
        self._thread_of: dict[int, Hashable] = {}
        self._prev: dict[int, int] = {}
        self._next: dict[int, int] = {}

    def _link(self, a: int | None, b: int | None) -> None:
        if a is not None:
            if b is None:
                self._next.pop(a, None)
            else:
                self._next[a] = b
        if b is not None:
            if a is None:
                self._prev.pop(b, None)
            else:
                self._prev[b] = a

    def add(self, note_id: int, thread: Hashable | None) -> None:
        if thread is None:
            return
        note_id = int(note_id)
        if note_id in self._thread_of:
            self.remove(note_id)
        ids = self._members.setdefault(thread, [])
        if not ids or ids[-1] < note_id:
            j = len(ids)
            ids.append(note_id)
        else:
            j = bisect.bisect_left(ids, note_id)
            ids.insert(j, note_id)
        prev = ids[j - 1] if j > 0 else None
        nxt = ids[j + 1] if j + 1 < len(ids) else None
        self._link(prev, note_id)
        self._link(note_id, nxt)
        self._thread_of[note_id] = thread

    def remove(self, note_id: int) -> None:
        note_id = int(note_id)
        thread = self._thread_of.pop(note_id, None)
        if thread is None:
            return
        ids = self._members[thread]
        j = bisect.bisect_left(ids, note_id)
        if j < len(ids) and ids[j] == note_id:
            ids.pop(j)
        prev, nxt = self._prev.pop(note_id, None), self._next.pop(note_id, None)
        self._link(prev, nxt)
        if not ids:
            del self._members[thread]

    def thread_of(self, note_id: int) -> Hashable | None:
        return self._thread_of.get(note_id)

    def neighbours(self, note_id: int) -> tuple[int | None, int | None]:
        """``(prev_id, next_id)`` inside the note's thread (None at the ends / no thread)."""
        return (self._prev.get(note_id), self._next.get(note_id))


# ------------------------------------------------- inferred threads (episodes)
WINDOW = 64  # the scope's rhythm: its last 64 gaps (quartiles to about ±12 %; a few sessions of a chat)
MIN_GAPS = 4  # quartiles of fewer gaps say nothing: until a scope has 4 gaps, the floor alone decides
FENCE = 1.5  # Tukey's fence: a gap is an outlier above Q3 + 1.5·IQR of the scope's recent (log) gaps


def log_gap(gap_seconds: np.ndarray) -> np.ndarray:
    """A gap as the rhythm rule weighs it: ``ln(1 + seconds)`` (pauses are multiplicative: 10 s against 20 s is
    what 1 h is against 2 h; a zero gap, notes written at one instant, is 0)."""
    return np.log1p(np.abs(gap_seconds))


def fences(windows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Tukey's upper fence ``Q3 + 1.5·(Q3 − Q1)`` of each row's first ``counts[r]`` values (the row padded after
    them with +inf), quartiles by linear interpolation: ``Q(p) = s[⌊h⌋] + (h − ⌊h⌋)·(s[⌊h⌋+1] − s[⌊h⌋])``,
    ``h = (m − 1)·p`` over the row's sorted values ``s`` (``m`` of them). ``-inf`` where ``m < MIN_GAPS``.

    One function for a note at a time and for a batch, so both compute the same floats."""
    s = np.sort(np.asarray(windows, dtype=np.float64), axis=1)
    m = np.asarray(counts, dtype=np.int64)
    rows = np.arange(s.shape[0])

    def quartile(p: float) -> np.ndarray:
        h = (np.maximum(m, 1) - 1) * p
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, np.maximum(m - 1, 0))
        a, b = s[rows, lo], s[rows, hi]
        return a + (h - lo) * (b - a)

    if not s.shape[0]:
        return np.zeros(0)
    with np.errstate(invalid="ignore"):  # a row of fewer than MIN_GAPS values may read its +inf padding
        q1, q3 = quartile(0.25), quartile(0.75)
        return np.where(m >= MIN_GAPS, q3 + FENCE * (q3 - q1), -np.inf)


class Episodes:
    """The thread of a note remembered without one: an *episode* of its scope (ADR 0008, ADR 0034).

    Notes remembered one after another in the same ``(namespace, scope)`` are one episode until a pause ends it,
    so they are thread neighbours (expansion, smoothing and propagation all see them) exactly as if the caller had
    passed one ``thread``. A pause is the gap ``g`` between a note's ``occurred_at`` and the previous such note's
    (either way: clocks skew). It ends the episode when

        g > gap_seconds  and  ln(1 + g) > Q3 + 1.5·(Q3 − Q1) of the scope's last 64 values ln(1 + g')

    (Tukey's fence over the scope's own rhythm, ``fences``; with fewer than 4 earlier gaps the first condition
    alone decides). ``gap_seconds`` is a floor: a shorter pause never ends an episode, a longer one only when it
    is also long for this conversation (a chat whose replies take hours keeps its episodes). ``rhythm=False``:
    the floor alone (the rule before ADR 0034). A note with an explicit ``thread`` never joins an episode and
    does not break one, nor is its gap counted. An older note seen after a newer one of its scope is its own
    episode and leaves the scope's state as it was. The key depends only on the notes before it in id order, so
    rebuilding the index from the table (id order), a follower applying the same notes and any split into
    batches infer the same episodes. ``gap_seconds <= 0`` turns inference off (such notes have no thread).
    """

    def __init__(self, gap_seconds: float, *, rhythm: bool = True) -> None:
        self.gap = float(gap_seconds)
        self.rhythm = bool(rhythm)
        # (ns, scope) → (last id, its occurred, its episode, the scope's last WINDOW log gaps, oldest first)
        self._last: dict[Hashable, tuple[int, float, Hashable, tuple[float, ...]]] = {}

    def _cuts(self, gaps: np.ndarray, window: tuple[float, ...]) -> tuple[np.ndarray, tuple[float, ...]]:
        """Which of a scope's consecutive ``gaps`` (seconds, in id order, after the notes of ``window``) end an
        episode, and the window after them."""
        g = np.abs(np.asarray(gaps, dtype=np.float64))
        finite = np.isfinite(g)
        cut = ~finite | (g > self.gap)  # no time to compare (NaN): a new episode, as before
        x = log_gap(np.where(finite, g, 0.0))
        seq = np.r_[np.asarray(window, dtype=np.float64), x[finite]]  # the gaps that make the rhythm
        if self.rhythm:
            ask = np.flatnonzero(cut & finite)  # only a gap above the floor needs its fence
            if ask.size:
                k = len(window) + np.cumsum(finite)[ask] - 1  # its position in seq: the window is what precedes
                pos = k[:, None] - WINDOW + np.arange(WINDOW)[None, :]
                win = np.where(pos >= 0, seq[np.maximum(pos, 0)], np.inf)
                cut[ask] = x[ask] > fences(win, np.minimum(k, WINDOW))
        return cut, tuple(seq[-WINDOW:].tolist())

    def key(self, note_id: int, namespace: str, scope: str | None, occurred_seconds: float) -> Hashable | None:
        """The episode key of a note without a thread (None when inference is off)."""
        if self.gap <= 0:
            return None
        where = (namespace, scope)
        last = self._last.get(where)
        if last is not None and note_id < last[0]:  # an older note seen late (out of order): its own episode
            return ("~episode", namespace, scope, int(note_id))
        if last is None:
            episode, window = ("~episode", namespace, scope, int(note_id)), ()
        else:
            cut, window = self._cuts(np.array([occurred_seconds - last[1]]), last[3])
            episode = ("~episode", namespace, scope, int(note_id)) if cut[0] else last[2]
        self._last[where] = (int(note_id), float(occurred_seconds), episode, window)
        return episode

    def batch(self, ids: np.ndarray, group: np.ndarray, where: Callable[[int], tuple[str, str | None]],
              occurred: np.ndarray) -> tuple[np.ndarray, list[Hashable], np.ndarray]:
        """The episodes of a batch of notes without a thread, ids ascending, as :meth:`key` gives them one note at
        a time (a load passes a million notes: a few array operations per scope, not a Python step per note).

        ``group``: each note's (namespace, scope) as one integer; ``where(g)``: that group's ``(namespace, scope)``.
        Returns each note's episode (a position in the list), the episodes' keys, and each episode's first note
        (a position in the batch). Inference off (``gap <= 0``): no episodes, every note's position -1."""
        at = np.full(ids.size, -1, dtype=np.int64)
        keys: list[Hashable] = []
        firsts: list[int] = []
        if self.gap <= 0 or not ids.size:
            return at, keys, np.zeros(0, dtype=np.int64)
        order = np.argsort(group, kind="stable")  # by scope, ids ascending inside each
        bounds = np.flatnonzero(np.r_[True, group[order][1:] != group[order][:-1], True])
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            rows = order[lo:hi]
            namespace, scope = here = where(int(group[rows[0]]))
            last = self._last.get(here)
            if last is not None:  # older than the scope's last note: each its own episode, the state unchanged
                late = int(np.searchsorted(ids[rows], last[0]))
                for j in rows[:late].tolist():
                    at[j] = len(keys)
                    keys.append(("~episode", namespace, scope, int(ids[j])))
                    firsts.append(j)
                rows = rows[late:]
                if not rows.size:
                    continue
            occ = occurred[rows]
            if last is None:  # the scope's first note starts its first episode; the gaps are the ones after it
                cut, window = self._cuts(np.diff(occ), ())
                starts = np.r_[True, cut]
            else:
                cut, window = self._cuts(np.diff(np.r_[last[1], occ]), last[3])
                starts = cut
            number = np.cumsum(starts) - 1 + len(keys)
            if not starts[0]:  # the first notes go on with the scope's last episode
                number += 1
                keys.append(last[2])
                firsts.append(int(rows[0]))
            for j in rows[starts].tolist():
                keys.append(("~episode", namespace, scope, int(ids[j])))
                firsts.append(j)
            at[rows] = number
            self._last[here] = (int(ids[rows[-1]]), float(occ[-1]), keys[int(number[-1])], window)
        return at, keys, np.array(firsts, dtype=np.int64)


# -------------------------------------------------- write-time doc expansion
def expand_bag(own: Iterable[str], neighbours: Iterable[Iterable[str]], weight: float = 0.5) -> Counter:
    """``Counter(own) + weight · Σ Counter(neighbour)`` - the BM25 bag of an expanded note."""
    bag: Counter = Counter(own)
    if weight > 0:
        # the neighbours' words counted in C, then each distinct one added ``weight`` at a time: the same sums, in
        # the same order of first appearance, as adding word by word (a follower expands every note it applies)
        for t, n in Counter(chain.from_iterable(neighbours)).items():
            v = bag.get(t, 0) + weight  # (dict.get: Counter's missing-key method is a Python call)
            for _ in range(n - 1):
                v += weight
            bag[t] = v
    return bag


class ThreadExpander:
    """Incremental thread-neighbour expansion for the full-text leg.

    ``add(note_id, thread, tokens)`` returns ``{note_id: bag}`` for every note
    whose expanded bag changed: the new note and its previous/next thread
    neighbours (usually just the previous one, since notes are appended).  The
    caller re-indexes those bags (``BM25Index.add_weighted`` replaces by id),
    so ingest costs O(tokens of 2-3 notes), never a rebuild.  Notes without a
    thread are not expanded.
    """

    def __init__(self, weight: float = 0.5, tokens_of: Callable[[int], list[str]] | None = None) -> None:
        self.weight = float(weight)
        self.links = ThreadLinks()
        self._tokens: dict[int, list[str]] = {}
        # a note indexed without its tokens kept (restored from a snapshot) is re-tokenised on demand
        self._tokens_of = tokens_of

    def tokens(self, note_id: int) -> list[str]:
        """A note's own tokens (kept for the batch, else made again from its row)."""
        return self._toks(note_id)

    def _toks(self, note_id: int) -> list[str]:
        toks = self._tokens.get(note_id)
        if toks is None:
            toks = self._tokens_of(note_id) if self._tokens_of is not None else []
            self._tokens[note_id] = toks
        return toks

    def keep_tokens(self, pairs: Iterable[tuple[int, list[str]]]) -> None:
        """Cache notes' tokens for the bags about to be computed (``forget_tokens`` drops them again)."""
        self._tokens.update(pairs)

    def forget_tokens(self) -> None:
        """Drop the cached tokens: a later bag re-tokenises the neighbour it needs (``tokens_of``)."""
        self._tokens.clear()

    def bag(self, note_id: int) -> Counter:
        prev, nxt = self.links.neighbours(note_id)
        neigh = [self._toks(j) for j in (prev, nxt) if j is not None]
        return expand_bag(self._toks(int(note_id)), neigh, self.weight)

    def add(self, note_id: int, thread: Hashable | None, tokens: Sequence[str]) -> dict[int, Counter]:
        return self.add_many([(note_id, thread, tokens)])

    def add_many(self, items: Iterable[tuple[int, Hashable | None, Sequence[str]]]) -> dict[int, Counter]:
        """Add notes, then return the bag of every note whose expansion changed, each computed once."""
        changed: dict[int, None] = {}
        for note_id, thread, tokens in items:
            note_id = int(note_id)
            self._tokens[note_id] = list(tokens)
            self.links.add(note_id, thread)
            prev, nxt = self.links.neighbours(note_id)
            changed[note_id] = None
            for j in (prev, nxt):
                if j is not None:
                    changed[j] = None
        return {j: self.bag(j) for j in changed}

    def remove(self, note_id: int) -> dict[int, Counter]:
        """Forget a note; returns the re-expanded bags of its former neighbours."""
        note_id = int(note_id)
        prev, nxt = self.links.neighbours(note_id)
        self.links.remove(note_id)
        self._tokens.pop(note_id, None)
        return {j: self.bag(j) for j in (prev, nxt) if j is not None}

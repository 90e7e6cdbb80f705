"""Threads: which notes sit next to which (a chat session, a meeting), and write-time document expansion.

See ``packs/memory/context.py`` for how the signals are used and what they measured.
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
class Episodes:
    """The thread of a note remembered without one: an *episode* of its scope (ADR 0008).

    Notes remembered one after another in the same ``(namespace, scope)`` whose ``occurred_at`` lie within
    ``gap_seconds`` of the previous such note's are one episode, so they are thread neighbours (expansion,
    smoothing and propagation all see them) exactly as if the caller had passed one ``thread``. A
    pause longer than the gap (or a note that went back in time by more than it) starts a new episode. A note
    with an explicit ``thread`` never joins an episode and does not break one. The key depends only on the notes
    before it in id order, so rebuilding the index from the table (id order) infers the same episodes.
    ``gap_seconds <= 0`` turns inference off (such notes have no thread, as before).
    """

    def __init__(self, gap_seconds: float) -> None:
        self.gap = float(gap_seconds)
        self._last: dict[Hashable, tuple[int, float, Hashable]] = {}  # (ns, scope) → (id, occurred, episode)

    def key(self, note_id: int, namespace: str, scope: str | None, occurred_seconds: float) -> Hashable | None:
        """The episode key of a note without a thread (None when inference is off)."""
        if self.gap <= 0:
            return None
        where = (namespace, scope)
        last = self._last.get(where)
        if last is not None and note_id < last[0]:  # an older note seen late (out of order): its own episode
            return ("~episode", namespace, scope, int(note_id))
        if last is not None and abs(occurred_seconds - last[1]) <= self.gap:
            episode = last[2]
        else:
            episode = ("~episode", namespace, scope, int(note_id))
        self._last[where] = (int(note_id), float(occurred_seconds), episode)
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
            before = np.r_[last[1] if last is not None else np.nan, occ[:-1]]
            starts = ~(np.abs(occ - before) <= self.gap)  # a pause longer than the gap (NaN: no note before)
            number = np.cumsum(starts) - 1 + len(keys)
            if not starts[0]:  # the first notes go on with the scope's last episode
                number += 1
                keys.append(last[2])
                firsts.append(int(rows[0]))
            for j in rows[starts].tolist():
                keys.append(("~episode", namespace, scope, int(ids[j])))
                firsts.append(j)
            at[rows] = number
            self._last[here] = (int(ids[rows[-1]]), float(occ[-1]), keys[int(number[-1])])
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

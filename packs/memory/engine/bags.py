"""A batch's expanded BM25 bags as flat arrays (write-time document expansion, ``threads.expand_bag``).

A note's bag is its own tokens plus ``weight`` × the tokens of its thread neighbours. Made one ``Counter`` per note,
the bags were most of what a follower spent applying another process's notes (issue 41, item 7: ~40 % of its CPU,
and as much again turning them into postings), and the same for a writer's own ingest. Here the whole batch is
counted at once: each distinct token of the batch gets a local code, each bag is a run of (code, weight) entries,
and numpy sums the entries of equal (note, code).

The sums are those of ``expand_bag``, bit for bit: a bag's entries are its own tokens, then its previous neighbour's,
then its next one's, and ``np.bincount`` adds each (note, code)'s weights in that order, as ``expand_bag`` adds
``weight`` one at a time after the own count; a bag's terms come in the order of their first entry, as a
``Counter``'s do. (A test holds the two equal on random batches.)
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import chain
from typing import NamedTuple

import numpy as np


class FlatBags(NamedTuple):
    """Bags of ``len(counts)`` notes: note ``i``'s are the ``counts[i]`` entries after the previous notes', entry
    ``k`` being the term ``terms[codes[k]]`` with the weight ``weights[k]`` (each term once per bag)."""

    terms: list[str]
    codes: np.ndarray  # int64
    weights: np.ndarray  # float64
    counts: np.ndarray  # int64

    def bag(self, i: int) -> dict[str, float]:
        """Note ``i``'s bag as a dict (for the few places that take one)."""
        a = int(self.counts[:i].sum())
        b = a + int(self.counts[i])
        return {self.terms[c]: w for c, w in zip(self.codes[a:b].tolist(), self.weights[a:b].tolist())}


def expanded(notes: np.ndarray, prev: np.ndarray, nxt: np.ndarray, tokens_of: Callable[[int], list[str]],
             weight: float) -> FlatBags:
    """The bags of ``notes`` (ids), each its own tokens and ``weight`` × those of its neighbours ``prev[i]`` and
    ``nxt[i]`` (note ids, -1 for none); ``tokens_of(id)`` gives a note's own tokens."""
    m = int(notes.size)
    neighbours = weight > 0
    wanted = [notes.tolist()]
    if neighbours:
        wanted += [prev[prev >= 0].tolist(), nxt[nxt >= 0].tolist()]
    need = list(dict.fromkeys(chain.from_iterable(wanted)))  # every note whose tokens a bag takes, once
    at = {j: k for k, j in enumerate(need)}
    lists = [tokens_of(j) for j in need]
    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    starts = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    local: dict[str, int] = {}
    codes = np.fromiter((local.setdefault(t, len(local)) for t in chain.from_iterable(lists)), dtype=np.int64,
                        count=int(starts[-1]))
    terms = list(local)
    # one segment per (note, source): its own tokens, then its previous neighbour's, then its next one's
    own = np.fromiter((at[j] for j in notes.tolist()), dtype=np.int64, count=m)
    if neighbours:
        before = np.fromiter((at[j] if j >= 0 else -1 for j in prev.tolist()), dtype=np.int64, count=m)
        after = np.fromiter((at[j] if j >= 0 else -1 for j in nxt.tolist()), dtype=np.int64, count=m)
        seg = np.stack([own, before, after], axis=1).ravel()
        seg_w = np.tile(np.array([1.0, weight, weight]), m)
        keep = seg >= 0
        seg, seg_w, seg_note = seg[keep], seg_w[keep], np.repeat(np.arange(m), 3)[keep]
    else:
        seg, seg_w, seg_note = own, np.ones(m), np.arange(m)
    size = lengths[seg]
    total = int(size.sum())
    # entry k of segment s is token starts[seg[s]] + k of the flat token list
    first_entry = np.cumsum(size) - size
    entry = np.repeat(starts[seg] - first_entry, size) + np.arange(total)
    note_of = np.repeat(seg_note, size)
    width = max(len(terms), 1)
    key = note_of * width + codes[entry]
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=np.repeat(seg_w, size), minlength=uniq.size)
    order = np.argsort(first, kind="stable")  # by first entry: notes in order, each bag's terms as first seen
    kept = uniq[order]
    return FlatBags(terms, kept % width, sums[order], np.bincount(kept // width, minlength=m).astype(np.int64))

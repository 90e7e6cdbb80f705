"""The context signals recall ranks with (``ranking.context``), over numpy columns.

At a few hundred pooled candidates a dict-per-note version cost ~3 ms a recall, so this is the only
implementation. ``tests/packs/memory/test_context_arrays.py`` holds it bit-equal, on random pools and threads,
to a readable dict version of the two formulas (ADR 0008):

- neighbour smoothing: ``s'_i = s_i + α · max(s_prev(i), s_next(i))``, over the candidates and their thread
  neighbours (whose own score is 0);
- thread propagation: each thread's value is the mean of its top-``top`` smoothed scores, normalised by the
  best thread; every pooled note adds ``β`` times its thread's value.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class PoolScores:
    """The pooled note ids (sorted) with their final scores and per-signal components."""

    ids: np.ndarray
    scores: np.ndarray
    base: np.ndarray
    neighbour: np.ndarray
    thread: np.ndarray
    information: np.ndarray | None = None  # the information prior's factor per note (None: the prior is off)


def unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` for the small int arrays a recall pools (a sort and a compare; numpy's hash-based unique
    cost ~4x as much at a few hundred ids)."""
    s = np.sort(x)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


def unique_first(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(x, return_index=True, return_inverse=True)``: the distinct values ascending, the position of
    each one's first occurrence in ``x``, and each element's position among the distinct values."""
    order = np.argsort(x, kind="stable")
    s = x[order]
    keep = np.empty(s.size, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    inverse = np.empty(x.size, dtype=np.int64)
    inverse[order] = np.cumsum(keep) - 1
    return s[keep], order[keep], inverse


def _lookup(pool: np.ndarray, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values`` at the positions of ``ids`` in the sorted ``pool``; 0 for ids not pooled (or -1)."""
    if pool.size == 0:
        return np.zeros(ids.shape, dtype=np.float64)
    pos = np.minimum(np.searchsorted(pool, ids), pool.size - 1)
    return np.where((pool[pos] == ids) & (ids >= 0), values[pos], 0.0)


def context_scores(ids: np.ndarray, fused: np.ndarray, *, prev: np.ndarray, nxt: np.ndarray,
                   thread: np.ndarray, alpha: float, beta: float, top: int) -> PoolScores:
    """Neighbour smoothing then thread propagation. ``prev``/``nxt``/``thread`` are index columns by note id
    (-1 / 0 for none); ``ids`` are distinct candidate ids with their ``fused`` scores."""
    ids = np.asarray(ids, dtype=np.int64)
    fused = np.asarray(fused, dtype=np.float64)
    if alpha:
        p, n = prev[ids], nxt[ids]
        pool = unique(np.concatenate([ids, p[p >= 0], n[n >= 0]]))
    else:
        pool = unique(ids)
    base = np.zeros(pool.size, dtype=np.float64)
    base[np.searchsorted(pool, ids)] = fused
    neighbour = np.zeros(pool.size, dtype=np.float64)
    scores = base
    if alpha and pool.size:
        # both neighbours' scores in one lookup: pool notes' prev ids then their next ids
        both = _lookup(pool, base, np.concatenate([prev[pool], nxt[pool]]))
        best = np.maximum(both[: pool.size], both[pool.size:])
        neighbour = (base + best) - base  # written as the reference computes it, so floats agree exactly
        scores = base + alpha * neighbour
    feat = np.zeros(pool.size, dtype=np.float64)
    if beta and pool.size:
        t = thread[pool].astype(np.int64)
        has = np.flatnonzero(t > 0)
        if has.size:
            tt, ss = t[has], scores[has]
            order = np.lexsort((-ss, tt))  # by thread, best score first
            tt, ss = tt[order], ss[order]
            first = np.empty(tt.size, dtype=bool)  # where each thread's run starts
            first[0] = True
            np.not_equal(tt[1:], tt[:-1], out=first[1:])
            start = np.flatnonzero(first)
            size = np.diff(np.append(start, tt.size))
            group = np.cumsum(first) - 1  # each sorted note's thread, 0..threads-1
            rank = np.arange(tt.size) - start[group]
            sums = np.zeros(start.size, dtype=np.float64)
            for r in range(top):  # add the r-th best of every thread in turn: the reference's summation order
                sel = rank == r
                sums[group[sel]] += ss[sel]
            value = sums / np.minimum(top, size)
            hi = float(value.max())
            if hi > 0:
                feat[has[order]] = value[group] / hi
        scores = scores + beta * feat
    return PoolScores(ids=pool, scores=scores, base=base, neighbour=neighbour, thread=feat)

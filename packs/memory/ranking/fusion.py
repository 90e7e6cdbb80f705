"""Score fusion across retrieval legs (pure functions).

A *leg* is a ranked list of ``(id, raw_score)`` (best first), or a mapping
``{id: raw_score}``.  ``legs`` is a mapping ``{leg_name: leg}`` (e.g.
``{"text": bm25_hits, "vector": vec_hits}``).

Each function returns a :class:`Fused` with

* ``scores``: ``{id: fused_score}`` (higher is better);
* ``per_leg``: ``{leg_name: {id: normalised_score}}`` - the min-max (or, for
  RRF, reciprocal-rank) score each leg gave each id, 0 when the leg missed it.
  Callers expose these as ``text_match`` / ``vector_match`` features.

Min-max normalisation maps a leg's best hit to 1 and its worst *returned* hit
to 0; a leg with a single hit, or all-equal scores, maps every hit to 1.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Fused", "minmax", "minmax_array", "ranked", "rrf", "union", "weighted", "weighted_sum"]

Leg = Sequence[tuple[int, float]] | Mapping[int, float]


@dataclass
class Fused:
    scores: dict[int, float]
    per_leg: dict[str, dict[int, float]] = field(default_factory=dict)


def ranked(scores: Mapping[int, float], k: int | None = None) -> list[tuple[int, float]]:
    out = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return out if k is None else out[:k]


def _as_pairs(leg: Leg) -> list[tuple[int, float]]:
    if isinstance(leg, Mapping):
        return sorted(leg.items(), key=lambda kv: (-kv[1], kv[0]))
    return list(leg)


def _leg_arrays(leg: Leg) -> tuple[np.ndarray, np.ndarray]:
    pairs = _as_pairs(leg)
    if not pairs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    ids, scores = zip(*pairs)
    return np.array(ids, dtype=np.int64), np.array(scores, dtype=np.float64)


def minmax_array(scores: np.ndarray) -> np.ndarray:
    if scores.size == 0:
        return scores
    lo, hi = float(scores.min()), float(scores.max())
    if hi - lo <= 1e-12:
        return np.ones(scores.size, dtype=np.float64)
    return (scores - lo) / (hi - lo)


def minmax(leg: Leg) -> dict[int, float]:
    """Min-max normalise one leg's raw scores to [0, 1]."""
    ids, scores = _leg_arrays(leg)
    return dict(zip(ids.tolist(), minmax_array(scores).tolist()))


def _aligned(per_leg: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every id any leg returned (first leg's order, then each later leg's new ids) and each leg's value per id
    (0 where the leg missed it): the columns the fusions combine, in numpy (a recall fuses a few hundred ids)."""
    ids = np.zeros(0, dtype=np.int64)
    for leg_ids, _ in per_leg.values():
        ids = np.concatenate([ids, leg_ids[~np.isin(leg_ids, ids)]]) if ids.size else leg_ids
    order = np.argsort(ids, kind="stable")
    cols = {}
    for name, (leg_ids, vals) in per_leg.items():
        col = np.zeros(ids.size, dtype=np.float64)
        col[order[np.searchsorted(ids[order], leg_ids)]] = vals
        cols[name] = col
    return ids, cols


def _fused(ids: np.ndarray, scores: np.ndarray, cols: Mapping[str, np.ndarray]) -> Fused:
    keys = ids.tolist()
    return Fused(dict(zip(keys, scores.tolist())), {n: dict(zip(keys, c.tolist())) for n, c in cols.items()})


def weighted_sum(cols: Mapping[str, np.ndarray], w: Mapping[str, float], size: int) -> np.ndarray:
    total = np.zeros(size, dtype=np.float64)  # Σ in leg order, from 0: the sum a Python loop would compute
    for n, c in cols.items():
        total = total + w[n] * c
    return total


def rrf(legs: Mapping[str, Leg], k: float = 60.0, weights: Mapping[str, float] | None = None) -> Fused:
    """Reciprocal rank fusion: ``Σ_leg w_leg / (k + rank)`` with rank starting at 1.

    ``per_leg`` holds each leg's ``1/(k+rank)`` contribution (unweighted).
    """
    arrays = {}
    for name, leg in legs.items():
        ids, _ = _leg_arrays(leg)
        arrays[name] = (ids, 1.0 / (k + np.arange(1, ids.size + 1, dtype=np.float64)))
    ids, cols = _aligned(arrays)
    w = {name: (1.0 if weights is None else float(weights.get(name, 0.0))) for name in legs}
    return _fused(ids, weighted_sum(cols, w, ids.size), cols)


def weighted(legs: Mapping[str, Leg], weights: Mapping[str, float]) -> Fused:
    """Min-max each leg, then ``Σ w_leg · ŝ_leg`` (a leg missing from ``weights`` gets weight 0)."""
    arrays = {}
    for name, leg in legs.items():
        ids, scores = _leg_arrays(leg)
        arrays[name] = (ids, minmax_array(scores))
    ids, cols = _aligned(arrays)
    w = {name: float(weights.get(name, 0.0)) for name in legs}
    return _fused(ids, weighted_sum(cols, w, ids.size), cols)


def union(legs: Mapping[str, Leg]) -> Fused:
    """Min-max each leg, then the max over legs."""
    arrays = {}
    for name, leg in legs.items():
        ids, scores = _leg_arrays(leg)
        arrays[name] = (ids, minmax_array(scores))
    ids, cols = _aligned(arrays)
    scores = np.zeros(ids.size, dtype=np.float64)
    for i, c in enumerate(cols.values()):
        scores = c.copy() if i == 0 else np.maximum(scores, c)
    return _fused(ids, scores, cols)

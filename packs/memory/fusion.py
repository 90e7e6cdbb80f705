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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Fused", "minmax", "ranked", "rrf", "union", "weighted"]

Leg = Sequence[tuple[int, float]] | Mapping[int, float]


@dataclass
class Fused:
    scores: dict[int, float]
    per_leg: dict[str, dict[int, float]] = field(default_factory=dict)

    def ranking(self, k: int | None = None) -> list[tuple[int, float]]:
        """``(id, score)`` best first; ties broken by id for determinism."""
        return ranked(self.scores, k)


def ranked(scores: Mapping[int, float], k: int | None = None) -> list[tuple[int, float]]:
    out = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return out if k is None else out[:k]


def _as_pairs(leg: Leg) -> list[tuple[int, float]]:
    if isinstance(leg, Mapping):
        return sorted(leg.items(), key=lambda kv: (-kv[1], kv[0]))
    return list(leg)


def minmax(leg: Leg) -> dict[int, float]:
    """Min-max normalise one leg's raw scores to [0, 1]."""
    pairs = _as_pairs(leg)
    if not pairs:
        return {}
    vals = [s for _, s in pairs]
    lo, hi = min(vals), max(vals)
    if hi - lo <= 1e-12:
        return {i: 1.0 for i, _ in pairs}
    span = hi - lo
    return {i: (s - lo) / span for i, s in pairs}


def _ids(per_leg: Mapping[str, Mapping[int, float]]) -> Iterable[int]:
    seen: dict[int, None] = {}
    for d in per_leg.values():
        for i in d:
            seen.setdefault(i, None)
    return seen


def _fill(per_leg: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    ids = list(_ids(per_leg))
    return {name: {i: d.get(i, 0.0) for i in ids} for name, d in per_leg.items()}


def rrf(legs: Mapping[str, Leg], k: float = 60.0, weights: Mapping[str, float] | None = None) -> Fused:
    """Reciprocal rank fusion: ``Σ_leg w_leg / (k + rank)`` with rank starting at 1.

    ``per_leg`` holds each leg's ``1/(k+rank)`` contribution (unweighted).
    """
    per_leg: dict[str, dict[int, float]] = {}
    for name, leg in legs.items():
        per_leg[name] = {i: 1.0 / (k + r) for r, (i, _) in enumerate(_as_pairs(leg), start=1)}
    per_leg = _fill(per_leg)
    w = {name: (1.0 if weights is None else float(weights.get(name, 0.0))) for name in legs}
    scores = {i: sum(w[n] * per_leg[n][i] for n in per_leg) for i in _ids(per_leg)}
    return Fused(scores, per_leg)


def weighted(legs: Mapping[str, Leg], weights: Mapping[str, float]) -> Fused:
    """Min-max each leg, then ``Σ w_leg · ŝ_leg`` (a leg missing from ``weights`` gets weight 0)."""
    per_leg = _fill({name: minmax(leg) for name, leg in legs.items()})
    w = {name: float(weights.get(name, 0.0)) for name in legs}
    scores = {i: sum(w[n] * per_leg[n][i] for n in per_leg) for i in _ids(per_leg)}
    return Fused(scores, per_leg)


def union(legs: Mapping[str, Leg]) -> Fused:
    """Min-max each leg, then the max over legs."""
    per_leg = _fill({name: minmax(leg) for name, leg in legs.items()})
    scores = {i: max(per_leg[n][i] for n in per_leg) for i in _ids(per_leg)}
    return Fused(scores, per_leg)

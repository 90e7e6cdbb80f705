"""The brain's arithmetic, pure and deterministic: credit assignment, the capped Beta update, replay, sampling.

Everything the stored state is derived from goes through these functions, so replaying the event log with
them rebuilds the stored posteriors exactly (ADR 0010).
"""
from __future__ import annotations

import hashlib
import math
from typing import Any, Iterable, Mapping

import numpy as np

COMPONENTS = ("relevance", "salience", "temporal")
# the breakdown column each recall weight multiplies
FEATURE_OF = {"relevance": "relevance", "salience": "effective_salience", "temporal": "recency"}
SIGN = {"useful": 1.0, "not_useful": -1.0, "correction": -1.0}
FLAT = 1e-9  # a component whose values do not vary within a recall gets no credit

State = dict[str, tuple[float, float]]  # component -> (alpha, beta)


def credit(features: Mapping[str, list[float]], index: int, relative: bool = False) -> dict[str, float]:
    """How clearly the note at ``index`` stood out in each component among the recall's results, in [-1, 1].

    ``z_c = clip((x_c − mean_c) / sd_c, −1, 1)``: positive when the note scored above the recall's average
    under component c, negative below, 0 when the component is flat (sd ≤ 1e-9) or the recall had one result.
    ``relative``: ``g_c = clip(z_c − mean(z over the non-flat components), −1, 1)`` — what the note stood out
    in *more than in the others*; the weights only matter relative to each other, and without this a component
    that does not matter to the user gets credits and debits alike and drifts to 0.5 (ADR 0010).
    """
    z: dict[str, float] = {}
    for c in COMPONENTS:
        col = np.asarray(features[FEATURE_OF[c]], dtype=np.float64)
        sd = float(col.std()) if col.size > 1 else 0.0
        z[c] = math.nan if sd <= FLAT else float(np.clip((col[index] - col.mean()) / sd, -1.0, 1.0))
    live = [v for v in z.values() if not math.isnan(v)]
    centre = sum(live) / len(live) if (relative and live) else 0.0
    return {c: 0.0 if math.isnan(v) else float(np.clip(v - centre, -1.0, 1.0)) for c, v in z.items()}


def deltas(g: Mapping[str, float], signal: str, weight: float) -> dict[str, tuple[float, float]]:
    """(Δα, Δβ) per component: useful credits the components the note stood out in (α += w·g) and debits the
    ones it lagged in (β += w·|g|); not_useful and correction do the reverse."""
    sign = SIGN[signal]
    out = {}
    for c in COMPONENTS:
        v = sign * g[c] * weight
        out[c] = (v, 0.0) if v > 0 else (0.0, -v if v < 0 else 0.0)
    return out


def apply(state: State, delta: Mapping[str, Any], cap: float, floor: float) -> State:
    """Add the deltas, then keep every posterior inside the effective-sample-size cap and above the floor.

    ``α + β > cap`` rescales both by ``cap / (α + β)`` (old evidence fades, the mean is kept); then a parameter
    below ``floor`` is raised to it and the other lowered by as much (the total is kept). So each mean stays
    in ``[floor/cap, 1 − floor/cap]`` and one event can always move it by about ``w / cap``.
    """
    out: State = {}
    for c in COMPONENTS:
        a, b = state[c]
        da, db = delta[c]
        a, b = a + float(da), b + float(db)
        total = a + b
        if total > cap:
            a, b = a * cap / total, b * cap / total
            total = cap
        if a < floor:
            a, b = floor, total - floor
        elif b < floor:
            a, b = total - floor, floor
        out[c] = (a, b)
    return out


def mean(state: State) -> dict[str, float]:
    return {c: a / (a + b) for c, (a, b) in state.items()}


def sample(state: State, seed_text: str) -> dict[str, float]:
    """A Thompson sample of the three weights, seeded by ``seed_text`` (so a replay draws the same numbers)."""
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    return {c: float(min(max(rng.beta(a, b), 1e-6), 1 - 1e-6)) for c, (a, b) in state.items()}


def prior_state(prior: Mapping[str, Mapping[str, float]]) -> State:
    return {c: (float(prior[c]["alpha"]), float(prior[c]["beta"])) for c in COMPONENTS}


def replay(events: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[State | None, int]:
    """Fold ``(kind, payload)`` events, oldest first, into a state; returns it and the feedback count since the
    last init/reset (``None`` when the log is empty)."""
    state: State | None = None
    n = 0
    for kind, payload in events:
        if kind in ("init", "reset"):
            state, n = prior_state(payload["prior"]), 0
        elif kind == "feedback":
            if state is None:
                raise ValueError("a feedback event before the profile's init event")
            state = apply(state, payload["delta"], payload["cap"], payload["floor"])
            n += 1
        else:
            raise ValueError(f"unknown event kind {kind!r}")
    return state, n


def is_finite_state(state: State) -> bool:
    return all(math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0 for a, b in state.values())

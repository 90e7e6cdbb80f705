"""The brain's arithmetic, pure and deterministic: credit assignment, the capped Beta update, replay, sampling.

Everything the stored state is derived from goes through these functions, so replaying the event log with
them rebuilds the stored posteriors exactly (ADR 0010).
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterable, Mapping

import numpy as np

COMPONENTS = ("relevance", "salience", "temporal")
# the breakdown column each recall weight multiplies
FEATURE_OF = {"relevance": "relevance", "salience": "effective_salience", "temporal": "recency"}
SIGN = {"useful": 1.0, "not_useful": -1.0, "correction": -1.0}
FLAT = 1e-9  # a component whose values do not vary within a recall gets no credit

State = dict[str, tuple[float, float]]  # component -> (alpha, beta)


def credit(features: Mapping[str, list[float]], index: int, weights: Mapping[str, float] | None = None,
           relative: bool = True) -> dict[str, float]:
    """How the note at ``index`` stood out in each component among the recall's results, in [-1, 1].

    ``relative`` (the default): ``d_c = x_c − mean_c`` (the note's lead over the recall's average under
    component c), ``d_s = Σ w_c d_c / Σ w`` (its lead in the score, with the weights the recall ranked with),
    ``g_c = (d_c − d_s) / max_c' |d_c' − d_s|``. ``d_c − d_s`` is, up to the factor 1/Σw, the derivative of the
    note's lead in the score with respect to ``w_c``: raising ``w_c`` lifts the note above the recall's average
    exactly when it stood out under c more than in the score itself. Only the weights' ratios rank, and
    ``Σ w_c g_c = 0``: no credit along scaling them all. Dividing by the largest keeps that direction and
    makes the strongest component ±1, so the event's weight alone sets its size.
    ``absolute``: ``g_c = clip((x_c − mean_c) / sd_c, −1, 1)`` — the literal "scored above the recall's
    average" (0 for a flat component, sd ≤ 1e-9).
    A recall of one result, or a note that stands out in nothing, gets 0 everywhere.
    """
    cols = {c: np.asarray(features[FEATURE_OF[c]], dtype=np.float64) for c in COMPONENTS}
    d = {c: float(col[index] - col.mean()) for c, col in cols.items()}
    if not relative:
        return {c: 0.0 if cols[c].std() <= FLAT else float(np.clip(d[c] / cols[c].std(), -1.0, 1.0))
                for c in COMPONENTS}
    w = {c: float((weights or {}).get(c, 0.0)) for c in COMPONENTS}
    total = sum(w.values())
    if not total > 0:  # no weights recorded (or none positive): every component counts alike
        w, total = {c: 1.0 for c in COMPONENTS}, float(len(COMPONENTS))
    lead = sum(w[c] * d[c] for c in COMPONENTS) / total
    g = {c: d[c] - lead for c in COMPONENTS}
    top = max(abs(v) for v in g.values())
    return {c: 0.0 if top <= FLAT else g[c] / top for c in COMPONENTS}


def deltas(g: Mapping[str, float], signal: str, weight: float, state: State) -> dict[str, tuple[float, float]]:
    """(Δα, Δβ) per component: the event is a pseudo-observation ``y`` of weight ``w`` at each component.

    ``v = sign · g`` (sign +1 useful, −1 not_useful and correction), ``μ = α / (α + β)``,
    ``y = μ + μ(1 − μ)·v`` (in [μ², 1 − (1 − μ)²] ⊂ [0, 1]), ``Δα = w·y``, ``Δβ = w·(1 − y)``.
    The mean then moves by ``w·μ(1 − μ)·v / (α + β + w)`` — a step of ``w·v / (α + β + w)`` in log-odds — so
    it settles where the expected credit is zero. Adding ``w·v⁺`` to α and ``w·v⁻`` to β instead would settle
    it at the component's share of credit, which for a component that does not matter to the user is about
    as often credit as debit: it never falls towards 0 (ADR 0010).
    """
    sign = SIGN[signal]
    out = {}
    for c in COMPONENTS:
        a, b = state[c]
        mu = a / (a + b)
        y = mu + mu * (1.0 - mu) * sign * float(g[c])
        out[c] = (weight * y, weight * (1.0 - y))
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



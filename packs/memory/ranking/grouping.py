"""Episodes from a ranked list of notes: which notes go together, and how an episode's score is made (ADR 0036).

Pure arithmetic over numpy columns (no index, no runtime), so ``memory.recall(group="episode")`` and the bench
(bench/locomo_sessions.py) rank episodes with the same function. The input is a recall's scored pool in rank
order (best first) and each note's thread code (the index's ``thread`` column: the caller's thread, else the
inferred episode; 0 = neither, and such a note is an episode of its own).

The shipped rule (``RULE``) and the ones ADR 0036's ablation measured beside it, over an episode's pooled notes
``s_1 ≥ s_2 ≥ …`` (scores in [0, 1]) at ranks ``r_1 < r_2 < …`` (1-based, in the whole pooled ranking):

- ``max``: ``s_1`` — the episode is as good as its best turn (what "sessions ranked by their best turn" is);
- ``softor``: ``1 − Π_{i ≤ TOP} (1 − s_i)`` — the chance that one of its best turns answers, each read as an
  independent probability;
- ``sum``: ``Σ_{i ≤ TOP} s_i``;
- ``mean``: ``(1/min(TOP, n)) Σ_{i ≤ TOP} s_i`` — the context stage's thread value (``thread_top``);
- ``rrf``: ``Σ_i 1 / (RRF_K + r_i)`` over every pooled turn — reciprocal-rank fusion of the turns' places;
- ``lse``: ``τ · ln Σ_{i ≤ TOP} exp(s_i / τ)`` — a soft maximum.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from palimpsest_memory.packs.memory.ranking.context_scores import unique_first

RULES = ("max", "softor", "sum", "mean", "rrf", "lse")
RULE = "max"  # ADR 0036: no rule beat the best turn on the dev file with an interval above 0
# How many of an episode's best turns the top-k rules read: 3, the context stage's ``thread_top`` default (a thread's
# value is the mean of its top 3, ADR 0008) — an existing constant of the product, not one fitted here.
TOP = 3
RRF_K = 60.0  # Cormack, Clarke & Büttcher (2009)'s constant, the product's ``rrf_k`` default
LSE_TAU = 0.1  # a tenth of the score range [0, 1]: one tenth apart weighs e times less (a round value, not fitted)


@dataclass(frozen=True)
class Groups:
    """Episodes ranked best first. ``members[g]``: the positions (in the input ranking, best first) of episode
    ``g``'s notes; ``score[g]`` its score; ``code[g]`` its thread code (0: a note with no thread or episode)."""

    members: list[np.ndarray]
    score: np.ndarray
    code: np.ndarray


def group(scores: np.ndarray, codes: np.ndarray, rule: str = RULE) -> Groups:
    """Group a ranking (``scores`` best first, ``codes`` aligned) into episodes scored by ``rule``, best first;
    ties keep the order of the episodes' best turns (so ``max`` orders episodes exactly as their best turns)."""
    if rule not in RULES:
        raise ValueError(f"unknown episode rule {rule!r}; one of {', '.join(RULES)}")
    s = np.asarray(scores, dtype=np.float64)
    c = np.asarray(codes, dtype=np.int64)
    if not s.size:
        return Groups([], np.zeros(0), np.zeros(0, dtype=np.int64))
    # a note without a thread is its own episode: a key of its own, below every real code
    key = np.where(c > 0, c, -1 - np.arange(c.size))
    _, first, inverse = unique_first(key)
    order = np.argsort(first, kind="stable")  # episodes in the order of their best turn (the input is ranked)
    where = np.empty(order.size, dtype=np.int64)
    where[order] = np.arange(order.size)
    g = where[inverse]  # each note's episode, numbered by its best turn's place
    pos = np.arange(s.size)
    by = np.lexsort((pos, g))  # by episode, rank order inside: each episode's run of positions
    starts = np.r_[0, np.flatnonzero(np.diff(g[by])) + 1]
    members = np.split(by, starts[1:])
    value = np.array([_value(s[m], m, rule) for m in members])
    best = np.lexsort((np.arange(value.size), -value))
    code = np.maximum(c[first[order]], 0)
    return Groups([members[j] for j in best], value[best], code[best])


def _value(s: np.ndarray, positions: np.ndarray, rule: str) -> float:
    """One episode's score from its notes' scores ``s`` (best first) at ``positions`` (0-based ranks)."""
    top = s[:TOP]
    if rule == "max":
        return float(s[0])
    if rule == "softor":
        return float(1.0 - np.prod(1.0 - np.clip(top, 0.0, 1.0)))
    if rule == "sum":
        return float(top.sum())
    if rule == "mean":
        return float(top.mean())
    if rule == "rrf":
        return float((1.0 / (RRF_K + positions + 1.0)).sum())
    return float(LSE_TAU * np.log(np.exp((top - top[0]) / LSE_TAU).sum()) + top[0])  # lse, shifted: no overflow

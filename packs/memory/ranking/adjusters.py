"""Every number that orders memory's answers, in one room: the named ranking adjusters (ADR 0008, ADR 0011).

A recall runs them in this order, each over columns (one list or array per feature, aligned by position):

1. ``fuse_legs`` — the BM25 and vector legs fused (rrf | weighted | union | vector_only | keyword_only);
2. ``context`` — neighbour smoothing and thread propagation (``context_scores.context_scores``), then
   ``information_prior`` — each matched note's score × ``ln(e + I)``, ``I`` the information of its own words;
   then ``relevance = score / max(score)``; then ``time_prior`` — when the query names a time, each note's
   relevance × ``(1 + γ·w)``, ``w`` how near its time lies to the named one (ADR 0041), over its new maximum;
3. ``graph_expansion`` (``expand_graph`` only) — notes walked to from the best candidates join them;
4. ``score`` — the ADR 0008 formula (``tests/packs/memory/test_scoring.py`` executes the ADR's text against it);
5. ``rerank`` — when any rerank weight is non-zero, ``Σ w·feature / Σ w`` replaces the score;
6. ``demote_near_duplicates`` — a note whose first characters equal a better-ranked note's loses a share;
7. ``explain_boosts`` — ``memory.explain`` only: decision and fact-source boosts added to the recall score.

Each one leaves its trace in the breakdown: the formula's inputs and weights, ``formula`` ("score" or
"rerank"), and per-note values under ``context`` (``neighbour``, ``thread``, ``information``, ``graph``,
``near_duplicate``, ``date``, and in explain's hits ``decision_boost`` and ``fact_boost``). These functions are
pure: the stages (``stages.py``) read the index, settings and tunables and hand them the numbers.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from palimpsest_memory.packs.memory.ranking import fusion as fusion_fns
from palimpsest_memory.packs.memory.ranking.context_scores import PoolScores, context_scores, unique_first
from palimpsest_memory.packs.memory.models.notes import Candidates, Scored

RERANK_FEATURES = {"relevance": "relevance", "salience": "effective_salience", "temporal": "recency",
                   "text_match": "text_match", "vector_match": "vector_match"}  # rerank weight → Scored column
SECONDS_PER_DAY = 86400.0


# -- 1. fusion --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fused:
    """Every note a leg returned (ascending ids), its fused score, and each leg's min-max score (0 = missed):
    the ``text_match`` / ``vector_match`` columns."""

    ids: np.ndarray
    scores: np.ndarray
    match: dict[str, np.ndarray]
    fused: np.ndarray  # which of ids the fusion scored (all of them, but a *_only fusion's other leg's ids)


Leg = tuple[Sequence[int] | np.ndarray, Sequence[float] | np.ndarray]  # a leg's (ids, scores), best first


def fuse_legs(text: Leg, vector: Leg, fusion: str, *, rrf_k: float, weights: Mapping[str, float]) -> Fused:
    """The fused score of every candidate (``fusion.py``'s formulas, over numpy columns: rrf ``Σ 1/(k+rank)``,
    weighted ``Σ w·ŝ``, union ``max ŝ``, vector_only / keyword_only ``ŝ`` of that leg), and each leg's min-max
    score ``ŝ`` (``text_match`` / ``vector_match``)."""
    legs = {name: (np.asarray(leg[0], dtype=np.int64), np.asarray(leg[1], dtype=np.float64))
            for name, leg in (("text", text), ("vector", vector))}
    t_ids, v_ids = legs["text"][0], legs["vector"][0]
    ids, _, inv = unique_first(np.concatenate([t_ids, v_ids]))
    at = {"text": inv[: t_ids.size], "vector": inv[t_ids.size:]}
    match: dict[str, np.ndarray] = {}
    for name, (_, sc) in legs.items():
        col = np.zeros(ids.size, dtype=np.float64)
        col[at[name]] = fusion_fns.minmax_array(sc)
        match[name] = col
    fused = np.ones(ids.size, dtype=bool)
    if fusion == "rrf":
        cols = {}
        for name, (leg_ids, _) in legs.items():
            col = np.zeros(ids.size, dtype=np.float64)
            col[at[name]] = 1.0 / (rrf_k + np.arange(1, leg_ids.size + 1, dtype=np.float64))
            cols[name] = col
        scores = fusion_fns.weighted_sum(cols, {"text": 1.0, "vector": 1.0}, ids.size)
    elif fusion == "weighted":
        scores = fusion_fns.weighted_sum(match, {n: float(weights.get(n, 0.0)) for n in legs}, ids.size)
    elif fusion == "union":
        scores = np.maximum(match["text"], match["vector"])
    else:
        only = "vector" if fusion == "vector_only" else "text"
        fused = np.zeros(ids.size, dtype=bool)
        fused[at[only]] = True
        scores = fusion_fns.weighted_sum({only: match[only]}, {only: 1.0}, ids.size)
    return Fused(ids=ids, scores=scores, match=match, fused=fused)


# -- 2. context ---------------------------------------------------------------------------------------------------
def context(fused: Mapping[int, float] | Fused, *, prev: np.ndarray, nxt: np.ndarray, thread: np.ndarray,
            alpha: float, beta: float, top: int) -> PoolScores:
    """Neighbour smoothing ``s'_i = s_i + α·max(s_prev, s_next)`` (thread neighbours join the pool), then thread
    propagation ``+ β·T(thread)/max T`` with ``T`` the mean of the thread's top-``top`` scores."""
    if isinstance(fused, Fused):
        ids, scores = fused.ids[fused.fused], fused.scores[fused.fused]
    else:
        ids = np.fromiter(fused, dtype=np.int64, count=len(fused))
        scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    return context_scores(ids, scores, prev=prev, nxt=nxt, thread=thread, alpha=alpha, beta=beta, top=top)


def information_prior(pool: PoolScores, information: np.ndarray) -> PoolScores:
    """A document prior: each pooled note's score × ``ln(e + I)``, with ``I`` = Σ idf over the distinct words
    the note says itself (``BM25Index.own_information``, aligned with ``pool.ids``). A turn that says nothing
    of its own — a greeting, "thanks!", "wow, cool" — has a small ``I`` and gives way to the turn that answers,
    however much of the query its neighbours' words or its thread lent it. The factor is 1 for a note with no
    indexed word of its own (it keeps its score, never zeroed) and grows with the log of what a note says; a
    note that joined the pool only as a thread neighbour (no leg matched it: ``base`` 0) keeps factor 1 — what
    it says is not what the query asked for. No constant to set."""
    info = np.maximum(np.asarray(information, dtype=np.float64), 0.0)
    factor = np.where(pool.base > 0, np.log(np.e + info), 1.0)
    return PoolScores(ids=pool.ids, scores=pool.scores * factor, base=pool.base, neighbour=pool.neighbour,
                      thread=pool.thread, information=factor)


def candidates(pool: PoolScores, keep: np.ndarray, fused: Fused) -> Candidates:
    """The pooled notes that pass ``keep``, with ``relevance = score / max(score)`` ∈ [0, 1], as numpy columns
    (``as_lists`` gives the verbs' lists)."""
    ids = pool.ids[keep]
    raw = pool.scores[keep]
    top = float(raw.max()) if raw.size else 0.0
    zeros = np.zeros(ids.size, dtype=np.float64)
    info = {} if pool.information is None else {"information": pool.information[keep]}
    return Candidates.model_construct(
        ids=ids, relevance=raw / top if top > 0 else raw * 0,
        text_match=lookup(fused.ids, fused.match["text"], ids),  # 0 where the leg missed the note
        vector_match=lookup(fused.ids, fused.match["vector"], ids),
        context={"neighbour": pool.neighbour[keep], "thread": pool.thread[keep], "date": zeros,
                 "speaker": zeros.copy(), **info})


def time_prior(c: Candidates, occurred: np.ndarray, windows: np.ndarray, gamma: float) -> Candidates:
    """The times the query names as a soft prior on the notes' times (ADR 0041): for a note at ``t`` (seconds,
    aligned with ``c.ids``; NaN for no time) and windows ``[a_k, b_k)`` (an array of shape (k, 2), seconds),
    ``gap_k = max(0, a_k − t, t − b_k)`` and ``w = max_k 2^(−gap_k / (b_k − a_k))`` — 1 inside a window, halved
    one window length away, 0 for a note without a time —, then
    ``relevance = s·(1 + γ·w) / max(s·(1 + γ·w))``
    (``relevance`` is ``s / max s``, so scaling it is scaling ``s``). ``context["date"]`` records ``w``. No
    window, or ``γ`` 0: unchanged."""
    windows = np.asarray(windows, dtype=np.float64).reshape(-1, 2)
    if not gamma or not windows.shape[0] or not len(c.ids):
        return c
    t = np.asarray(occurred, dtype=np.float64)[:, None]
    a, b = windows[:, 0][None, :], windows[:, 1][None, :]
    gap = np.maximum(0.0, np.maximum(a - t, t - b))
    with np.errstate(invalid="ignore"):
        w = np.max(np.exp2(-gap / (b - a)), axis=1)
    w = np.where(np.isfinite(w), w, 0.0)  # NaN: a note without a time meets no window
    s = np.asarray(c.relevance, dtype=np.float64) * (1.0 + gamma * w)
    top = float(s.max())
    return Candidates.model_construct(ids=c.ids, relevance=s / top if top > 0 else s * 0,
                                      text_match=c.text_match, vector_match=c.vector_match,
                                      context={**c.context, "date": w})


def lookup(keys: np.ndarray, values: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``values`` at the positions of ``ids`` in the ascending ``keys``; 0 for ids not among them."""
    if keys.size == 0:
        return np.zeros(ids.shape, dtype=np.float64)
    pos = np.minimum(np.searchsorted(keys, ids), keys.size - 1)
    return np.where(keys[pos] == ids, values[pos], 0.0)


def as_lists(model: Candidates | Scored) -> Candidates | Scored:
    """A ``Candidates`` or ``Scored`` whose columns are numpy arrays (inside recall) as the lists its model
    declares (what a verb hands out)."""
    cols = {}
    for name in type(model).model_fields:
        v = getattr(model, name)
        if isinstance(v, np.ndarray):
            v = v.tolist()
        elif name == "context":
            v = {k: c.tolist() if isinstance(c, np.ndarray) else list(c) for k, c in v.items()}
        cols[name] = v
    return type(model).model_construct(**cols)


# -- 3. graph expansion -------------------------------------------------------------------------------------------
def expansion_seeds(c: Candidates, n: int) -> dict[int, float]:
    """The ``n`` best candidates by relevance (ties by id): the walk starts there, each with factor 1."""
    order = sorted(range(len(c.ids)), key=lambda j: (-c.relevance[j], c.ids[j]))[:n]
    return {c.ids[j]: c.relevance[j] for j in order}


def graph_expansion(c: Candidates, seed_relevance: Mapping[int, float],
                    reached: Mapping[int, tuple[float, int]]) -> tuple[Candidates, list[int]]:
    """A reached note (``{note: (edge factor, seed)}``) that is not a candidate joins with
    ``relevance = relevance(seed) × edge_factor``; ``context["graph"]`` records the factor (0 for the others)."""
    have = set(c.ids)
    added = sorted(n for n in reached if n not in have)
    cols = {k: list(v) + [0.0] * len(added) for k, v in c.context.items()}
    cols["graph"] = [0.0] * len(c.ids) + [reached[n][0] for n in added]
    return Candidates.model_construct(
        ids=list(c.ids) + added,
        relevance=list(c.relevance) + [seed_relevance[reached[n][1]] * reached[n][0] for n in added],
        text_match=list(c.text_match) + [0.0] * len(added),
        vector_match=list(c.vector_match) + [0.0] * len(added), context=cols), added


# -- 4. the score -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NoteFeatures:
    """What the formula reads from each candidate note, aligned with the candidates."""

    salience: np.ndarray
    decay: np.ndarray
    occurred: np.ndarray  # seconds since the epoch


def sort_columns(cols: dict, order: np.ndarray) -> dict:
    """Every list/array column (and each ``context`` column) reordered by ``order``, as numpy arrays; scalars
    kept."""
    return {k: (np.asarray(v)[order] if isinstance(v, (list, np.ndarray)) else
                {kk: np.asarray(vv)[order] for kk, vv in v.items()} if k == "context" else v)
            for k, v in cols.items()}


def score(c: Candidates, feats: NoteFeatures, now_seconds: float, weights: Mapping[str, float],
          half_life_days: float) -> Scored:
    """``(w_rel·relevance + w_sal·salience·e^(−decay·age) + w_temp·2^(−age/half_life)) / Σw``, sorted best
    first (ties by note id); ages in days, never negative."""
    total = sum(weights.values()) or 1.0
    age = np.maximum(0.0, (now_seconds - feats.occurred) / SECONDS_PER_DAY)
    with np.errstate(over="ignore"):  # a huge decay × age is -inf, and exp(-inf) = 0 is the right salience
        effective_salience = feats.salience * np.exp(-feats.decay * age)
    recency = 2.0 ** (-age / half_life_days)
    relevance = np.asarray(c.relevance, dtype=np.float64)
    s = (weights["relevance"] * relevance + weights["salience"] * effective_salience
         + weights["temporal"] * recency) / total
    ids = np.asarray(c.ids, dtype=np.int64)
    order = np.lexsort((ids, -s))
    return Scored.model_construct(**sort_columns(
        {"formula": "score", "weights": dict(weights), "ids": ids, "score": s, "relevance": relevance,
         "effective_salience": effective_salience, "recency": recency, "text_match": c.text_match,
         "vector_match": c.vector_match, "age_days": age, "context": c.context}, order))


# -- 5. rerank ----------------------------------------------------------------------------------------------------
def rerank_enabled(weights: Mapping[str, float]) -> bool:
    return sum(weights.values()) > 0


def rerank(r: Scored, weights: Mapping[str, float]) -> Scored:
    """Replace each score by ``Σ w·feature / Σ w`` over relevance, salience (effective), temporal (recency),
    text_match and vector_match; unchanged when every weight is 0."""
    total = sum(weights.values())
    if total <= 0:
        return r
    s = sum(weights[k] * np.asarray(getattr(r, col), dtype=np.float64) for k, col in RERANK_FEATURES.items()) / total
    ids = np.asarray(r.ids, dtype=np.int64)
    order = np.lexsort((ids, -s))
    cols = {name: getattr(r, name) for name in Scored.model_fields}
    cols.update(formula="rerank", weights=dict(weights), score=s, ids=ids)
    return Scored.model_construct(**sort_columns(cols, order))


# -- 6. near duplicates -------------------------------------------------------------------------------------------
def demote_near_duplicates(scored: Scored, prefixes: np.ndarray, penalty: float) -> Scored:
    """A note whose prefix (``prefixes``, aligned with ``scored.ids``) equals a better-ranked note's loses
    ``penalty`` of its score (``context["near_duplicate"]``, 0 for the best of each prefix); re-sorted, so the
    breakdown's ``score`` stays the number the results are ordered by."""
    if not penalty or not len(scored.ids):
        return scored
    _, first, _ = unique_first(np.asarray(prefixes))  # the best-ranked note of each prefix
    share = np.full(len(scored.ids), penalty)
    share[first] = 0.0
    if not share.any():
        return scored
    s = np.asarray(scored.score) * (1.0 - share)
    ids = np.asarray(scored.ids, dtype=np.int64)
    order = np.lexsort((ids, -s))
    cols = {name: getattr(scored, name) for name in Scored.model_fields}
    cols.update(score=s, context=dict(scored.context, near_duplicate=share))
    return Scored.model_construct(**sort_columns(cols, order))


# -- 7. explain's boosts ------------------------------------------------------------------------------------------
def explain_boosts(recall_scores: Sequence[float], decision: Sequence[float], fact: Sequence[float]
                   ) -> tuple[list[float], list[int]]:
    """``score = recall_score + decision_boost + fact_boost`` per hit, and the hits' positions best first (ties
    keep recall's order)."""
    boosted = [r + d + f for r, d, f in zip(recall_scores, decision, fact)]
    return boosted, sorted(range(len(boosted)), key=lambda j: (-boosted[j], j))


# -- the served part ---------------------------------------------------------------------------------------------
def head(scored: Scored, positions: Sequence[int] | np.ndarray) -> Scored:
    """The scored notes at ``positions`` (e.g. the first ``limit``), their columns as lists of Python numbers:
    what recall serves, read out of the numpy columns only for the notes it can serve."""
    at = np.asarray(positions, dtype=np.int64)
    cols = {name: getattr(scored, name) for name in Scored.model_fields}
    picked = {k: (np.asarray(v)[at].tolist() if isinstance(v, (list, np.ndarray)) else
                  {kk: np.asarray(vv)[at].tolist() for kk, vv in v.items()} if k == "context" else v)
              for k, v in cols.items()}
    return Scored.model_construct(**picked)


# -- what the brain learns from -----------------------------------------------------------------------------------
def components(scored: Scored, j: int) -> tuple[float, float, float]:
    """``(relevance, effective_salience, recency)`` of the ``j``-th scored note: the formula's three inputs."""
    return scored.relevance[j], scored.effective_salience[j], scored.recency[j]

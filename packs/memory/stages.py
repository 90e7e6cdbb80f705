"""The recall pipeline's sub-handlers: embed → candidates → fuse (+ context) → score → rerank.

Each stage is a hidden verb, callable alone for debugging (``pal call memory.recall_fuse --internal``).
Candidates travel between stages as columns, and scoring is vectorised. The formulas are the ones in
ADR 0008; ``tests/packs/memory/test_scoring.py`` reads both.
"""
from __future__ import annotations

import numpy as np

from packs.memory import fusion as fusion_fns
from packs.memory.context_arrays import context_scores
from packs.memory.index import seconds
from packs.memory.models import (Candidates, CandidatesParams, CandidatesResult, EmbedParams, EmbedResult,
                                 FuseParams, FuseResult, Leg, RerankParams, Scored, ScoreParams, ScoreResult)
from packs.memory.core import pack
from packs.memory.settings import MemorySettings
from packs.memory.text import cjk_ratio
from runtime import Act, Context, Visibility

SUB = {"act": Act.ASSERTIVE, "visibility": Visibility.SUBHANDLER}
RERANK_FEATURES = {"relevance": "relevance", "salience": "effective_salience", "temporal": "recency",
                   "text_match": "text_match", "vector_match": "vector_match"}


@pack.verb("recall_embed", **SUB)
def recall_embed(params: EmbedParams, ctx: Context) -> EmbedResult:
    """Embed the query (LRU-cached); a mostly-CJK query goes to the configured multilingual model."""
    s: MemorySettings = ctx.settings
    cjk = cjk_ratio(params.query) > s.cjk_threshold
    model = s.cjk_embedder if (cjk and s.cjk_embedder) else s.embedder
    vec = ctx.state.embedders.embed_query(model, params.query)
    return EmbedResult.model_construct(model=model, vector=vec.tolist(), cjk=cjk)


@pack.verb("recall_candidates", **SUB)
def recall_candidates(params: CandidatesParams, ctx: Context) -> CandidatesResult:
    """BM25 leg and exact-cosine vector leg, each top-k, over this namespace's notes that pass the filters."""
    index = ctx.state.index
    mask = index.mask(ctx.namespace, params.filters)
    text = index.bm25.search(params.query, params.k, allowed=mask)
    vec_hits: list[tuple[int, float]] = []
    vectors = index.vectors.get(params.model)
    if params.vector and vectors is not None:
        q = np.asarray(params.vector, dtype=np.float32)
        vec_hits = vectors.search(q, params.k, allowed=mask, min_cosine=ctx.settings.min_cosine)
    return CandidatesResult.model_construct(
        text=Leg.model_construct(ids=[i for i, _ in text], scores=[s for _, s in text]),
        vector=Leg.model_construct(ids=[i for i, _ in vec_hits], scores=[s for _, s in vec_hits]))


@pack.verb("recall_fuse", **SUB)
def recall_fuse(params: FuseParams, ctx: Context) -> FuseResult:
    """Fuse the legs (rrf | weighted | union | vector_only | keyword_only), then add the context signals."""
    s: MemorySettings = ctx.settings
    legs = {"text": list(zip(params.text.ids, params.text.scores)),
            "vector": list(zip(params.vector.ids, params.vector.scores))}
    if params.fusion == "rrf":
        fused = fusion_fns.rrf(legs, k=s.rrf_k)
    elif params.fusion == "weighted":
        fused = fusion_fns.weighted(legs, s.fusion_weights)
    elif params.fusion == "union":
        fused = fusion_fns.union(legs)
    else:
        only = "vector" if params.fusion == "vector_only" else "text"
        fused = fusion_fns.weighted({only: legs[only]}, {only: 1.0})
    per_leg = {name: fusion_fns.minmax(leg) for name, leg in legs.items()}
    index = ctx.state.index
    c = s.context  # the signals of context.apply_context, computed over columns (context_arrays.py)
    pool = context_scores(np.fromiter(fused.scores, dtype=np.int64, count=len(fused.scores)),
                          np.fromiter(fused.scores.values(), dtype=np.float64, count=len(fused.scores)),
                          prev=index.cols["prev"], nxt=index.cols["next"], thread=index.cols["thread"],
                          alpha=c.neighbour_alpha, beta=c.thread_beta, top=c.thread_top)
    # neighbours pulled in by the context stage must pass the same namespace and filters as the legs
    ok = index.mask(ctx.namespace, params.filters, ids=pool.ids)
    ids = pool.ids[ok].tolist()
    raw = pool.scores[ok]
    top = float(raw.max()) if raw.size else 0.0
    zeros = [0.0] * len(ids)
    return FuseResult.model_construct(candidates=Candidates.model_construct(
        ids=ids, relevance=(raw / top if top > 0 else raw * 0).tolist(),
        text_match=[per_leg["text"].get(i, 0.0) for i in ids],
        vector_match=[per_leg["vector"].get(i, 0.0) for i in ids],
        context={"neighbour": pool.neighbour[ok].tolist(), "thread": pool.thread[ok].tolist(),
                 "date": zeros, "speaker": list(zeros)}))


def score_weights(ctx: Context) -> dict[str, float]:
    """The three score weights: tunables (set by e.g. the brain pack) over the configured defaults."""
    w = ctx.settings.score_weights
    return {"relevance": ctx.tunable("relevance_weight", w.relevance),
            "salience": ctx.tunable("salience_weight", w.salience),
            "temporal": ctx.tunable("temporal_weight", w.temporal)}


def sort_columns(cols: dict, order: np.ndarray) -> dict:
    """Every list/array column (and each ``context`` column) reordered by ``order``; scalars kept."""
    return {k: (np.asarray(v)[order].tolist() if isinstance(v, (list, np.ndarray)) else
                {kk: np.asarray(vv)[order].tolist() for kk, vv in v.items()} if k == "context" else v)
            for k, v in cols.items()}


@pack.verb("recall_score", **SUB)
def recall_score(params: ScoreParams, ctx: Context) -> ScoreResult:
    """score = (w_rel·relevance + w_sal·salience·e^(−decay·age) + w_temp·2^(−age/half_life)) / Σw."""
    s: MemorySettings = ctx.settings
    w = score_weights(ctx)
    total = sum(w.values()) or 1.0
    cand = params.candidates
    feats = ctx.state.index.features(cand.ids)
    age = np.maximum(0.0, (seconds(params.now) - feats["occurred"]) / 86400.0)
    with np.errstate(over="ignore"):  # a huge decay × age is -inf, and exp(-inf) = 0 is the right salience
        eff_sal = feats["salience"] * np.exp(-feats["decay"] * age)
    recency = 2.0 ** (-age / s.recency_half_life_days)
    relevance = np.asarray(cand.relevance, dtype=np.float64)
    score = (w["relevance"] * relevance + w["salience"] * eff_sal + w["temporal"] * recency) / total
    ids = np.asarray(cand.ids, dtype=np.int64)
    order = np.lexsort((ids, -score))
    cols = sort_columns({"formula": "score", "weights": w, "ids": ids, "score": score, "relevance": relevance,
                    "effective_salience": eff_sal, "recency": recency, "text_match": cand.text_match,
                    "vector_match": cand.vector_match, "age_days": age, "context": cand.context}, order)
    scored = Scored.model_construct(**cols)
    if params.rerank and sum(s.rerank.model_dump().values()) > 0:
        scored = ctx.call("memory.recall_rerank", RerankParams.model_construct(results=scored)).results
    return ScoreResult.model_construct(results=scored)


@pack.verb("recall_rerank", **SUB)
def recall_rerank(params: RerankParams, ctx: Context) -> ScoreResult:
    """Replace each score by Σ w·feature / Σ w over relevance, salience, temporal, text_match, vector_match."""
    w = ctx.settings.rerank.model_dump()
    total = sum(w.values())
    r = params.results
    if total <= 0:
        return ScoreResult.model_construct(results=r)
    score = sum(w[k] * np.asarray(getattr(r, col), dtype=np.float64) for k, col in RERANK_FEATURES.items()) / total
    ids = np.asarray(r.ids, dtype=np.int64)
    order = np.lexsort((ids, -score))
    cols = sort_columns({**r.model_dump(), "formula": "rerank", "weights": w, "score": score, "ids": ids}, order)
    return ScoreResult.model_construct(results=Scored.model_construct(**cols))

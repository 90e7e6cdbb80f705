"""The recall pipeline's sub-handlers: embed → candidates → fuse (+ context) → score → rerank.

Each stage is a hidden verb, callable alone for debugging (``pal call memory.recall_fuse --internal``).
The formulas are the ones in ADR 0008; ``tests/packs/memory/test_scoring.py`` reads both.
"""
from __future__ import annotations

import math

import numpy as np

from packs.memory import fusion as fusion_fns
from packs.memory.context import ContextConfig, apply_context
from packs.memory.index import seconds
from packs.memory.models import (Breakdown, Candidate, CandidatesParams, CandidatesResult, EmbedParams,
                                 EmbedResult, FuseParams, FuseResult, Leg, RerankParams, Scored, ScoreParams,
                                 ScoreResult)
from packs.memory.pack import pack
from packs.memory.settings import MemorySettings
from packs.memory.text import cjk_ratio
from runtime import Act, Context, Visibility

SUB = {"act": Act.ASSERTIVE, "visibility": Visibility.SUBHANDLER}


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
    c = s.context
    ctx_result = apply_context(
        fused.scores, params.query, neighbours=index.neighbours, thread_of=index.thread_of,
        config=ContextConfig(neighbour_alpha=c.neighbour_alpha, thread_beta=c.thread_beta,
                             thread_top=c.thread_top, date_gamma=0.0, speaker_gamma=0.0))
    # neighbours pulled in by the context stage must pass the same namespace and filters as the legs
    mask = index.mask(ctx.namespace, params.filters)
    scores = {i: v for i, v in ctx_result.scores.items() if i < mask.shape[0] and mask[i]}
    top = max(scores.values(), default=0.0)
    out = []
    for i, v in scores.items():
        feats = ctx_result.features(i)
        out.append(Candidate.model_construct(
            id=i, relevance=(v / top if top > 0 else 0.0), text_match=per_leg["text"].get(i, 0.0),
            vector_match=per_leg["vector"].get(i, 0.0),
            context={k: round(float(x), 6) for k, x in feats.items() if k != "base"}))
    return FuseResult.model_construct(candidates=out)


def score_weights(ctx: Context) -> dict[str, float]:
    """The three score weights: tunables (set by e.g. the brain pack) over the configured defaults."""
    w = ctx.settings.score_weights
    return {"relevance": ctx.tunable("relevance_weight", w.relevance),
            "salience": ctx.tunable("salience_weight", w.salience),
            "temporal": ctx.tunable("temporal_weight", w.temporal)}


@pack.verb("recall_score", **SUB)
def recall_score(params: ScoreParams, ctx: Context) -> ScoreResult:
    """score = (w_rel·relevance + w_sal·salience·e^(−decay·age) + w_temp·2^(−age/half_life)) / Σw."""
    s: MemorySettings = ctx.settings
    w = score_weights(ctx)
    total = sum(w.values()) or 1.0
    index = ctx.state.index
    feats = index.features(c.id for c in params.candidates)
    now_s = seconds(params.now)
    out = []
    for j, cand in enumerate(params.candidates):
        age = max(0.0, float(now_s - feats["occurred"][j]) / 86400.0)
        eff_sal = float(feats["salience"][j]) * math.exp(-float(feats["decay"][j]) * age)
        recency = 2.0 ** (-age / s.recency_half_life_days)
        score = (w["relevance"] * cand.relevance + w["salience"] * eff_sal + w["temporal"] * recency) / total
        out.append(Scored.model_construct(id=cand.id, score=score, breakdown=Breakdown.model_construct(
            relevance=cand.relevance, effective_salience=eff_sal, recency=recency, weights=w, score=score,
            text_match=cand.text_match, vector_match=cand.vector_match, context=cand.context, age_days=age,
            formula="score")))
    if params.rerank and sum(s.rerank.model_dump().values()) > 0:
        out = ctx.call("memory.recall_rerank", {"results": out}).results
    out.sort(key=lambda r: (-r.score, r.id))
    return ScoreResult.model_construct(results=out)


@pack.verb("recall_rerank", **SUB)
def recall_rerank(params: RerankParams, ctx: Context) -> ScoreResult:
    """Replace each score by Σ w·feature / Σ w over relevance, salience, temporal, text_match, vector_match."""
    w = ctx.settings.rerank.model_dump()
    total = sum(w.values())
    if total <= 0:
        return ScoreResult.model_construct(results=list(params.results))
    out = []
    for r in params.results:
        b = r.breakdown
        feats = {"relevance": b.relevance, "salience": b.effective_salience, "temporal": b.recency,
                 "text_match": b.text_match, "vector_match": b.vector_match}
        score = sum(w[k] * feats[k] for k in w) / total
        out.append(Scored.model_construct(id=r.id, score=score, breakdown=b.model_copy(
            update={"score": score, "weights": w, "formula": "rerank"})))
    out.sort(key=lambda r: (-r.score, r.id))
    return ScoreResult.model_construct(results=out)

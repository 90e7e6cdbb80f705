"""The recall pipeline's stages: embed → candidates → fuse (+ context) → [expand] → score (→ rerank).

Each stage is a plain function over the call's context, which ``memory.recall`` calls directly (one dispatch a
recall, not six), and a hidden verb that wraps it, callable alone for debugging (``pal call memory.recall_fuse
--internal``) with the same result. The stages read the index, settings and tunables; the arithmetic that
orders the results is in ``ranking/adjusters.py``. The query checks every query-taking verb shares are here too.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from datetime import datetime, timezone
from functools import partial

import numpy as np

from palimpsest_memory.packs.memory.ranking import query_time, adjusters, recall_cache
from palimpsest_memory.packs.memory.engine.index_writes import seconds
from palimpsest_memory.packs.memory.models.notes import (Candidates, CandidatesParams, CandidatesResult, EmbedParams,
                                                   EmbedResult, FuseParams, FuseResult, Leg, RecallFilters,
                                                   RerankParams, Scored, ScoreParams, ScoreResult)
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.engine.text import cjk_ratio, has_content
from palimpsest_memory.runtime import Act, Context, Visibility, errors

SUB = {"act": Act.ASSERTIVE, "visibility": Visibility.SUBHANDLER}

# The vector leg's thread. The runtime runs one call at a time, so while a recall's BM25 leg runs, the second core
# would idle; the graph walk (usearch) and BM25's array work let go of the GIL, and at 1M notes the two legs side
# by side take ~3 ms less than one after the other (ADR 0008). One thread per process: a runtime's calls are one at
# a time, and a second runtime's recall in the same process queues behind the first's search.
_VECTOR_LEG = ThreadPoolExecutor(max_workers=1, thread_name_prefix="palimpsest-vector-leg")


def check_query(query: str, s: MemorySettings, verb: str) -> None:
    """Only an empty query (no letter or digit) or an over-long one is an error. A short or stop-word-only query
    ("hello", "what", "a") is an ordinary question: the vector leg still ranks by meaning, the keyword leg finds
    what it can, and no result is an answer too (issue 20, item 4)."""
    if len(query) > s.max_query_chars:
        raise errors.LimitExceeded(f"query is {len(query)} characters; the limit is {s.max_query_chars}",
                                   verb=verb, details={"errors": [{"loc": ["query"], "msg": "query too long"}]})
    if not has_content(query):
        raise errors.InvalidParams(
            f"query {query!r} is empty: it has no letter or digit to search for", verb=verb,
            details={"errors": [{"loc": ["query"], "msg": "empty query"}]})


# -- the stages as plain functions --------------------------------------------------------------------------------
def embed_array(ctx: Context, query: str) -> tuple[str, np.ndarray, bool]:
    """Embed the query (LRU-cached): (model, vector, whether it is mostly CJK); a mostly-CJK query goes to the
    configured multilingual model."""
    s: MemorySettings = ctx.settings
    cjk = (0.0 if query.isascii() else cjk_ratio(query)) > s.cjk_threshold  # ASCII holds no CJK: skip the scan
    model = s.cjk_embedder if (cjk and s.cjk_embedder) else s.embedder
    return model, ctx.state.embedders.embed_query(model, query), cjk


def embed(ctx: Context, query: str) -> EmbedResult:
    """``embed_array`` as the ``memory.recall_embed`` verb answers it."""
    model, vec, cjk = embed_array(ctx, query)
    return EmbedResult.model_construct(model=model, vector=vec.tolist(), cjk=cjk)


def legs(ctx: Context, query: str, vector: list[float] | np.ndarray, model: str, k: int,
         filters: RecallFilters) -> tuple[adjusters.Leg, adjusters.Leg]:
    """BM25 leg and exact-cosine vector leg, each top-k ``(ids, scores)``, over this namespace's notes that pass
    the filters (the mask is kept per filter set until the index changes, ``recall_cache.py``). With a scope, BM25
    weighs words by that scope's statistics (``bm25_scope.py``). When the vector leg walks the HNSW graph it runs on
    ``_VECTOR_LEG`` while the BM25 leg runs here (ADR 0008, "The two legs side by side")."""
    index = ctx.state.index.of(ctx.namespace)
    mask = recall_cache.allowed(index, ctx.namespace, filters)
    within = recall_cache.collection(index, ctx.namespace, filters.scope)
    keywords = partial(index.bm25.search, query, k, allowed=mask, within=within)
    vectors = index.vectors.get(model)
    if not len(vector) or vectors is None:
        return _columns(keywords()), _columns([])
    search = partial(vectors.search, np.asarray(vector, dtype=np.float32), k, allowed=mask,
                     min_cosine=ctx.settings.min_cosine)
    if not vectors.searches_graph(mask.count):
        return _columns(keywords()), _columns(search())
    vec = _VECTOR_LEG.submit(search)
    try:
        text = keywords()
    finally:
        wait([vec])  # the search ends inside the call, under the runtime's lock, whatever the BM25 leg did
    return _columns(text), _columns(vec.result())


def _columns(hits: list[tuple[int, float]]) -> adjusters.Leg:
    return ([i for i, _ in hits], [s for _, s in hits])


def candidates(ctx: Context, query: str, vector: list[float], model: str, k: int,
               filters: RecallFilters) -> CandidatesResult:
    """``legs`` as the ``memory.recall_candidates`` verb answers them."""
    text, vec = legs(ctx, query, vector, model, k, filters)
    return CandidatesResult.model_construct(text=Leg.model_construct(ids=text[0], scores=text[1]),
                                            vector=Leg.model_construct(ids=vec[0], scores=vec[1]))


def fuse(ctx: Context, text: adjusters.Leg, vector: adjusters.Leg, fusion: str, filters: RecallFilters,
         query: str = "", now: datetime | None = None) -> Candidates:
    """Fuse the legs, add the context signals, keep the pooled notes that pass the filters, then the time prior
    when ``query`` names a time (relative ones counted back from ``now``, default the clock) (ranking 1–2). The
    candidates' columns are numpy arrays (``adjusters.as_lists`` for a verb's answer)."""
    s: MemorySettings = ctx.settings
    fused = adjusters.fuse_legs(text, vector, fusion, rrf_k=s.rrf_k, weights=s.fusion_weights)
    index = ctx.state.index.of(ctx.namespace)
    c = s.context
    pool = adjusters.context(fused, prev=index.column("prev"), nxt=index.column("next"),
                           thread=index.column("thread"), alpha=c.neighbour_alpha, beta=c.thread_beta,
                           top=c.thread_top)
    if c.information_prior:
        pool = adjusters.information_prior(pool, information(index, pool))
    # neighbours pulled in by the context stage must pass the same namespace and filters as the legs
    keep = recall_cache.allowed(index, ctx.namespace, filters).mask[index.slots(pool.ids)]
    cand = adjusters.candidates(pool, keep, fused)
    if c.time_prior and query:
        named = query_time.spans(query, (now or ctx.now()).replace(tzinfo=None))
        if named:
            occurred = index.column("occurred")[cand.ids]
            cand = adjusters.time_prior(cand, occurred, named_windows(named, occurred), c.time_prior)
    return cand


def named_windows(named: list[query_time.Span], occurred: np.ndarray) -> np.ndarray:
    """The query's spans as ``[start, end)`` seconds, shape (k, 2); a yearly span in every year of the
    candidates' times, and the years either side (a note in late December is near a January)."""
    finite = occurred[np.isfinite(occurred)]
    if finite.size:
        lo, hi = (datetime.fromtimestamp(float(x), timezone.utc).year for x in (finite.min(), finite.max()))
    else:
        lo = hi = query_time.REFERENCE_YEAR
    return np.array([[seconds(a), seconds(b)] for a, b in query_time.instances(named, lo - 1, hi + 1)],
                    dtype=np.float64).reshape(-1, 2)


def information(index, pool: adjusters.PoolScores) -> np.ndarray:
    """The own information of each pooled note a leg matched (0 for the neighbours the context stage added:
    the prior leaves them at factor 1, so their information is never needed); kept per note until the index
    changes (``recall_cache.information``)."""
    out = np.zeros(pool.ids.size, dtype=np.float64)
    matched = pool.base > 0
    out[matched] = recall_cache.information(index, pool.ids[matched])
    return out


def score_weights(ctx: Context) -> dict[str, float]:
    """The three score weights: tunables (set by e.g. the brain pack) over the configured defaults."""
    w = ctx.settings.score_weights
    return {"relevance": ctx.tunable("relevance_weight", w.relevance),
            "salience": ctx.tunable("salience_weight", w.salience),
            "temporal": ctx.tunable("temporal_weight", w.temporal)}


def score(ctx: Context, cand: Candidates, now: datetime, weights: dict[str, float], rerank: bool = True) -> Scored:
    """The ADR 0008 score over the candidates (ranking 4), then the rerank stage when it is on (ranking 5)."""
    s: MemorySettings = ctx.settings
    index = ctx.state.index.of(ctx.namespace)
    ids = np.asarray(cand.ids, dtype=np.int64)
    feats = adjusters.NoteFeatures(salience=index.column("salience")[ids], decay=index.column("decay")[ids],
                                 occurred=index.column("occurred")[ids])
    scored = adjusters.score(cand, feats, seconds(now), weights, s.recency_half_life_days)
    rw = s.rerank.model_dump()
    return adjusters.rerank(scored, rw) if rerank and adjusters.rerank_enabled(rw) else scored


def demote_near_duplicates(ctx: Context, scored: Scored) -> Scored:
    """Ranking 6 over the index's prefix hashes of the scored notes."""
    s: MemorySettings = ctx.settings
    if not s.near_duplicate_prefix or not len(scored.ids):
        return scored
    ids = np.asarray(scored.ids, dtype=np.int64)
    # the candidates' ids ascending are those the score stage just read columns for (index.slots remembers them)
    asc = np.sort(ids)
    prefixes = ctx.state.index.of(ctx.namespace).column("prefix")[asc][np.searchsorted(asc, ids)]
    return adjusters.demote_near_duplicates(scored, prefixes, s.near_duplicate_penalty)


# -- the same stages as hidden verbs ------------------------------------------------------------------------------
@pack.verb("recall_embed", **SUB)
def recall_embed(params: EmbedParams, ctx: Context) -> EmbedResult:
    """Embed the query (LRU-cached); a mostly-CJK query goes to the configured multilingual model."""
    return embed(ctx, params.query)


@pack.verb("recall_candidates", **SUB)
def recall_candidates(params: CandidatesParams, ctx: Context) -> CandidatesResult:
    """BM25 leg and exact-cosine vector leg, each top-k, over this namespace's notes that pass the filters."""
    return candidates(ctx, params.query, params.vector, params.model, params.k, params.filters)


@pack.verb("recall_fuse", **SUB)
def recall_fuse(params: FuseParams, ctx: Context) -> FuseResult:
    """Fuse the legs (rrf | weighted | union | vector_only | keyword_only), then add the context signals."""
    return FuseResult.model_construct(candidates=adjusters.as_lists(
        fuse(ctx, (params.text.ids, params.text.scores), (params.vector.ids, params.vector.scores), params.fusion,
             params.filters, params.query, params.now)))


@pack.verb("recall_score", **SUB)
def recall_score(params: ScoreParams, ctx: Context) -> ScoreResult:
    """score = (w_rel·relevance + w_sal·salience·e^(−decay·age) + w_temp·2^(−age/half_life)) / Σw."""
    return ScoreResult.model_construct(results=adjusters.as_lists(score(ctx, params.candidates, params.now,
                                                                      score_weights(ctx), params.rerank)))


@pack.verb("recall_rerank", **SUB)
def recall_rerank(params: RerankParams, ctx: Context) -> ScoreResult:
    """Replace each score by Σ w·feature / Σ w over relevance, salience, temporal, text_match, vector_match."""
    return ScoreResult.model_construct(results=adjusters.as_lists(
        adjusters.rerank(params.results, ctx.settings.rerank.model_dump())))

"""The semantic walk over memory edges, graph expansion inside recall, and centrality (ADR 0012).

See ``packs/memory/graph.py`` for the edges themselves and the walk's formula.
"""
from __future__ import annotations

import numpy as np

from palimpsest_memory.packs.memory.ranking import adjusters
from palimpsest_memory.packs.memory.mirrors.changes import CentralitySet, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.graph import CENTRALITY_SCOPE
from palimpsest_memory.packs.memory.mirrors.graph import MemoryGraph
from palimpsest_memory.packs.memory.engine.index import Allowed
from palimpsest_memory.packs.memory.models.notes import Candidates, RecallFilters
from palimpsest_memory.packs.memory.models.graph import (CentralityParams, CentralityResult, ExpandParams, ExpandResult,
                                       NoteCentrality, WalkHit, WalkHop, WalkParams, WalkResult)
from palimpsest_memory.packs.memory.note_store import note_from_index
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.stages import check_query, embed_array
from palimpsest_memory.runtime import Act, Context, Visibility, errors


# -- walk -----------------------------------------------------------------------------------------------------
def run_walk(ctx: Context, q: np.ndarray, model: str, seeds: dict[int, float], mask: Allowed, *,
             max_depth: int, cut: float, relations: set[str] | None) -> tuple[dict[int, tuple], dict[int, float]]:
    """Walk from ``seeds`` ({note: starting factor}); returns ({note: (factor, depth, seed, path)}, cosines).

    A path is a tuple of ``(edge id, source, target, relation)``. A note keeps its best factor; it is entered
    only if it passes ``mask`` and its cosine to ``q`` is at least ``cut``.
    """
    s: MemorySettings = ctx.settings
    factors = s.graph.relation_factors.model_dump()
    graph: MemoryGraph = ctx.state.graph
    vectors = ctx.state.index.of(ctx.namespace).vectors.get(model)
    ns = ctx.namespace
    best: dict[int, tuple] = {n: (f, 0, n, ()) for n, f in seeds.items()}
    cos: dict[int, float] = {}
    frontier = sorted(seeds)
    for level in range(1, max_depth + 1):
        ctx.check_deadline(f"walk: depth {level}")
        proposals: dict[int, tuple] = {}
        for u in frontier:
            fu, _, seed, path = best[u]
            for eid in graph.incident(ns, u):
                _, a, b, rel, _ = graph.edges[eid]
                if relations is not None and rel not in relations:
                    continue
                v = b if a == u else a
                if v not in mask:
                    continue
                f = fu * factors[rel]
                if (v in best and best[v][0] >= f) or (v in proposals and proposals[v][0] >= f):
                    continue
                proposals[v] = (f, level, seed, path + ((eid, a, b, rel),))
        need = [v for v in proposals if v not in cos]
        if need and vectors is not None:
            cos.update(zip(need, vectors.score_ids(q, need).tolist()))
        frontier = []
        for v in sorted(proposals):
            if cos.get(v, 0.0) < cut:
                continue  # never enter (nor cross) a note below the similarity cut
            if v not in best and len(best) >= s.graph.walk_max_visited:
                continue
            best[v] = proposals[v]
            frontier.append(v)
        if not frontier:
            break
    return best, cos


def _walk_mask(ctx: Context, include_superseded: bool, filters: RecallFilters | None = None) -> Allowed:
    f = filters or RecallFilters(include_superseded=include_superseded)
    index = ctx.state.index.of(ctx.namespace)
    return index.allowed(index.mask(ctx.namespace, f))


@pack.verb("walk", act=Act.ASSERTIVE)
def walk(params: WalkParams, ctx: Context) -> WalkResult:
    """Semantic walk: kNN seeds, then typed edges, never below a cosine cut; ranked by cos × edge factor × (1+PR).

    Each result carries the path of edges that reached it from its seed. Archived notes are never entered.
    """
    s: MemorySettings = ctx.settings
    g = s.graph
    check_query(params.query, s, ctx.verb)
    depth = g.walk_max_depth if params.max_depth is None else params.max_depth
    if depth > g.walk_max_depth_cap:
        raise errors.LimitExceeded(f"max_depth is at most {g.walk_max_depth_cap}",
                                   details={"errors": [{"loc": ["max_depth"], "msg": "too deep"}]})
    cut = g.walk_min_similarity if params.min_similarity is None else params.min_similarity
    model, q, _ = embed_array(ctx, params.query)  # as recall does: the stage itself, not its hidden verb
    q = np.asarray(q, dtype=np.float32)
    mask = _walk_mask(ctx, params.include_superseded)
    vectors = ctx.state.index.of(ctx.namespace).vectors.get(model)
    hits = vectors.search(q, params.seeds or g.walk_seeds, allowed=mask, min_cosine=cut) if vectors else []
    seeds = {i: 1.0 for i, _ in hits}
    best, cos = run_walk(ctx, q, model, seeds, mask, max_depth=depth, cut=cut,
                         relations=set(params.relations) if params.relations else None)
    cos.update(hits)
    cent = ctx.state.graph.centrality.get(ctx.namespace, {})
    factors = s.graph.relation_factors.model_dump()
    ranked = sorted(((cos[n] * f * (1.0 + cent.get(n, 0.0)), n) for n, (f, *_rest) in best.items()),
                    key=lambda t: (-t[0], t[1]))[: params.limit]
    rows = ctx.state.index.of(ctx.namespace).rows
    notes = {n: note_from_index(rows[n]) for _, n in ranked}
    results = []
    for score, n in ranked:
        f, d, seed, path = best[n]
        results.append(WalkHit(note=notes[n], score=score, cosine=cos[n], edge_factor=f, centrality=cent.get(n, 0.0),
                               depth=d, seed_id=seed,
                               path=[WalkHop(edge_id=e, source_id=a, target_id=b, relation=r, factor=factors[r])
                                     for e, a, b, r in path]))
    return WalkResult(query=params.query, embedder=model, seeds=list(seeds), results=results, visited=len(best))


def expand(ctx: Context, c: Candidates, vector: list[float], model: str, filters: RecallFilters
           ) -> tuple[Candidates, list[int]]:
    """Recall's expand_graph step (``adjusters.graph_expansion``): walk from the best fused candidates and add
    the notes reached. ``memory.recall`` calls this directly; ``memory.recall_expand`` wraps it."""
    g = ctx.settings.graph
    seed_relevance = adjusters.expansion_seeds(c, g.expand_seeds)
    if not seed_relevance or not vector:
        return c, []
    q = np.asarray(vector, dtype=np.float32)
    mask = _walk_mask(ctx, False, filters)
    best, _ = run_walk(ctx, q, model, dict.fromkeys(seed_relevance, 1.0), mask, max_depth=g.expand_max_depth,
                       cut=g.walk_min_similarity, relations=None)
    return adjusters.graph_expansion(c, seed_relevance, {n: (f, seed) for n, (f, _, seed, _) in best.items()})


@pack.verb("recall_expand", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
def recall_expand(params: ExpandParams, ctx: Context) -> ExpandResult:
    """Recall's expand_graph step: walk from the best fused candidates and add the notes reached.

    Seeds are the top ``expand_seeds`` candidates by relevance; a reached note that is not already a candidate
    joins with ``relevance = relevance(seed) × edge_factor`` (recorded as ``context["graph"]``), after passing
    the recall's filters and the walk's cosine cut.
    """
    out, added = expand(ctx, params.candidates, params.vector, params.model, params.filters)
    return ExpandResult.model_construct(candidates=out, added=added)


# -- centrality -----------------------------------------------------------------------------------------------
@pack.verb("centrality", act=Act.COMMISSIVE)
def centrality(params: CentralityParams, ctx: Context) -> CentralityResult:
    """Run the kg's PageRank over this namespace's positive memory edges and store each note's score.

    Relations from config (``centrality_relations``; contradicts never counts); scores normalised so the top
    note is 1.0; notes without a positive edge score 0. The walk multiplies by ``1 + centrality``.
    """
    g = ctx.settings.graph
    graph: MemoryGraph = ctx.state.graph
    rels = list(g.centrality_relations)
    res = ctx.call("kg.centrality", {"relations": rels, "node_types": ["m"], "include_facts": False, "top": 1,
                                     "scope": CENTRALITY_SCOPE})
    ns = ctx.namespace
    nodes = sorted({n for eid in {e for lst in graph.adj.get(ns, {}).values() for e in lst}
                    for n in graph.edges[eid][1:3] if graph.edges[eid][3] in rels})
    scores: dict[int, float] = {}
    if nodes:
        got = ctx.call("kg.centrality_scores", {"node_ids": [f"m:{n}" for n in nodes],
                                                "scope": CENTRALITY_SCOPE}).scores
        scores = {int(k[2:]): v for k, v in got.items()}
        known = {r[0] for r in ctx.db.query("SELECT id FROM memory.notes WHERE namespace = ? AND id IN "
                                            "(SELECT unnest(?::BIGINT[]))", [ns, list(scores)])}
        scores = {k: v for k, v in scores.items() if k in known}
    now = ctx.now()
    ctx.db.execute("DELETE FROM memory.centrality WHERE namespace = ?", [ns])
    if scores:
        ctx.db.execute("INSERT INTO memory.centrality (note_id, namespace, score, computed_at) "
                       "SELECT unnest(?::BIGINT[]), ?, unnest(?::DOUBLE[]), ?",
                       [list(scores), ns, list(scores.values()), now])
    record(ctx, CentralitySet(scores))
    top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: params.top]
    return CentralityResult(notes=len(scores), edges=res.edges, relations=rels,
                            top=[NoteCentrality(note_id=n, score=v) for n, v in top], computed_at=now)

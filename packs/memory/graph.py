"""The memory graph layer: typed edges between notes, the semantic walk, and centrality (ADR 0012).

The edges live in the kg pack (``kg.edges`` rows between ``m:<note id>`` nodes, written through ``kg.link`` /
``kg.link_many``); this module validates them (both notes in the namespace, no self-loop, a memory relation,
coherent supersession) and keeps an in-memory adjacency of them (:class:`MemoryGraph`, in ``ctx.state.graph``)
so a walk never goes back to SQL. The adjacency is loaded when a runtime opens and updated after each commit of
a memory verb that links or unlinks, like the recall index.

Walk (``memory.walk``): kNN seeds (exact cosine over the vector index, at least ``min_similarity``), then a
breadth-first walk along edges in either direction, at most ``max_depth`` hops; a note is entered only when its
cosine to the query is at least ``min_similarity`` (so the walk never crosses below the cut) and it passes the
recall mask (namespace, not archived, not superseded). A note keeps the best path that reaches it::

    edge_factor = Π relation_factor(edge) along the path     (1 for a seed)
    score       = cosine(query, note) × edge_factor × (1 + centrality(note))
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Iterable

import numpy as np

from packs.memory.models import Candidates, EmbedParams, RecallFilters
from packs.memory.models_graph import (MEMORY_RELATIONS, CentralityParams, CentralityResult, EdgesParams,
                                       EdgesResult, ExpandParams, ExpandResult, LinkIn, LinkManyParams,
                                       LinkManyResult, LinkParams, LinkResult, MemoryEdge, NoteCentrality,
                                       UnlinkParams, UnlinkResult, WalkHit, WalkHop, WalkParams, WalkResult)
from packs.memory.pack import pack
from packs.memory.recall import check_query
from packs.memory.remember import fetch_notes
from packs.memory.settings import MemorySettings
from runtime import Act, Context, Visibility, errors

NODE = re.compile(r"^m:([0-9]{1,18})$")
CENTRALITY_SCOPE = "memory"


class MemoryGraph:
    """Memory edges (note ↔ note) per namespace, mirroring the kg's active ``m:``→``m:`` edges, plus the stored
    centrality of each note. Written only after commit (``ctx.on_commit``)."""

    def __init__(self) -> None:
        self.edges: dict[int, tuple[str, int, int, str, float]] = {}  # id → (namespace, src, dst, relation, w)
        self.adj: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        self.centrality: dict[str, dict[int, float]] = defaultdict(dict)

    def add(self, eid: int, ns: str, src: int, dst: int, relation: str, weight: float) -> None:
        if eid in self.edges:  # an update of an existing edge (same src, dst, relation): only the weight moves
            self.edges[eid] = (ns, src, dst, relation, weight)
            return
        self.edges[eid] = (ns, src, dst, relation, weight)
        adj = self.adj[ns]
        adj[src].append(eid)
        adj[dst].append(eid)

    def remove(self, eid: int) -> None:
        edge = self.edges.pop(eid, None)
        if edge is None:
            return
        ns, src, dst, _, _ = edge
        for node in (src, dst):
            lst = self.adj[ns].get(node)
            if lst is not None and eid in lst:
                lst.remove(eid)

    def incident(self, ns: str, note: int) -> list[int]:
        adj = self.adj.get(ns)
        return adj.get(note, []) if adj is not None else []

    def find(self, ns: str, src: int, dst: int, relation: str) -> int | None:
        for eid in self.incident(ns, src):
            e = self.edges[eid]
            if e[1] == src and e[2] == dst and e[3] == relation:
                return eid
        return None


@pack.on_open
def load_graph(ctx: Context) -> None:
    """Load the active memory edges from the kg's table and the stored centrality scores.

    The one place the memory pack reads another pack's table (read-only, at open): the kg has no verb that
    lists edges in bulk (see ADR 0012).
    """
    ctx.state.graph = g = MemoryGraph()
    ctx.db.execute(
        "SELECT id, namespace, CAST(substr(src, 3) AS BIGINT) AS s, CAST(substr(dst, 3) AS BIGINT) AS d, relation, "
        "weight FROM kg.edges WHERE removed_at IS NULL AND relation IN (SELECT unnest(?::VARCHAR[])) "
        "AND regexp_full_match(src, 'm:[0-9]{1,18}') AND regexp_full_match(dst, 'm:[0-9]{1,18}') ORDER BY id",
        [list(MEMORY_RELATIONS)])
    cols = ctx.db.fetchnumpy()
    for eid, ns, s, d, rel, w in zip(cols["id"].tolist(), list(cols["namespace"]), cols["s"].tolist(),
                                     cols["d"].tolist(), list(cols["relation"]), cols["weight"].tolist()):
        g.add(eid, ns, s, d, rel, w)
    for nid, ns, score in ctx.db.query("SELECT note_id, namespace, score FROM memory.centrality"):
        g.centrality[ns][nid] = score


# -- validation and writes shared by link, link_many, beliefs and consolidation -----------------------------
def note_states(ctx: Context, ids: Iterable[int], locs: dict[int, list[Any]] | None = None) -> dict[int, tuple]:
    """``{id: (superseded_by, archived_at)}`` for notes of this namespace; any missing id is NotFound."""
    wanted = sorted(set(ids))
    rows = ctx.db.query("SELECT id, superseded_by, archived_at FROM memory.notes WHERE namespace = ? AND id IN "
                        "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, wanted])
    found = {r[0]: (r[1], r[2]) for r in rows}
    missing = [i for i in wanted if i not in found]
    if missing:
        loc = (locs or {}).get(missing[0], ["id"])
        raise errors.NotFound(f"note {missing[0]} does not exist in namespace {ctx.namespace!r}",
                              details={"missing": missing, "errors": [{"loc": loc, "msg": "unknown note"}]})
    return found


def _superseded_by(ctx: Context, note: int) -> int | None:
    rows = ctx.db.query("SELECT superseded_by FROM memory.notes WHERE id = ?", [note])
    return rows[0][0] if rows else None


def create_edges(ctx: Context, links: list[LinkIn], loc: list[Any]) -> tuple[list[int], list[bool], list[int], Any]:
    """Validate memory links, write them to the kg, mark supersession.

    Returns (edge ids, created flags, notes newly superseded, the kg edge when there was one link).
    """
    for i, ln in enumerate(links):
        if ln.source_id == ln.target_id:
            raise errors.InvalidParams("an edge cannot link a note to itself",
                                       details={"errors": [{"loc": [*loc, i, "target_id"] if loc else ["target_id"],
                                                            "msg": "self-loop"}]})
    locs = {}
    for i, ln in enumerate(links):
        locs.setdefault(ln.source_id, [*loc, i, "source_id"] if loc else ["source_id"])
        locs.setdefault(ln.target_id, [*loc, i, "target_id"] if loc else ["target_id"])
    states = note_states(ctx, locs, locs)
    graph: MemoryGraph = ctx.state.graph
    ns = ctx.namespace
    supersede: dict[int, int] = {}  # old note → the note that supersedes it
    for i, ln in enumerate(links):
        if ln.relation != "supersedes":
            continue
        where = {"loc": [*loc, i, "target_id"] if loc else ["target_id"]}
        current = states[ln.target_id][0]
        if (current is not None and current != ln.source_id) or supersede.get(ln.target_id, ln.source_id) != ln.source_id:
            raise errors.Conflict(f"note {ln.target_id} is already superseded by note "
                                  f"{current if current is not None else supersede[ln.target_id]}; unlink that first",
                                  details={**where, "superseded_by": current})
        cur, seen = ln.source_id, set()
        while cur is not None and cur not in seen:  # walk up the source's chain of superseding notes
            seen.add(cur)
            cur = supersede.get(cur) or _superseded_by(ctx, cur)
            if cur == ln.target_id:
                raise errors.Conflict(f"note {ln.target_id} already (transitively) supersedes note "
                                      f"{ln.source_id}: a supersession cycle", details=where)
        if current is None:
            supersede[ln.target_id] = ln.source_id
    payload = [{"src": f"m:{ln.source_id}", "dst": f"m:{ln.target_id}", "relation": ln.relation,
                "weight": ln.weight} for ln in links]
    if len(payload) == 1:
        res = ctx.call("kg.link", payload[0])
        ids, created, single = [res.edge.id], [res.created], res.edge
    else:
        single = None
        res = ctx.call("kg.link_many", {"links": payload})
        ids = list(res.edge_ids)
        created = [graph.edges.get(eid) is None for eid in ids]
    now = ctx.now()
    if supersede:
        ctx.db.execute(
            "UPDATE memory.notes n SET superseded_by = u.by, superseded_at = ? FROM (SELECT unnest(?::BIGINT[]) AS id, "
            "unnest(?::BIGINT[]) AS by) u WHERE n.id = u.id", [now, list(supersede), list(supersede.values())])
    index = ctx.state.index
    edges = [(eid, ln.source_id, ln.target_id, ln.relation, ln.weight) for eid, ln in zip(ids, links)]

    def apply() -> None:
        for eid, s, d, rel, w in edges:
            graph.add(eid, ns, s, d, rel, w)
        for old in supersede:
            index.set_superseded(old, now)

    ctx.on_commit(apply)
    return ids, created, list(supersede), single


@pack.verb("link", act=Act.COMMISSIVE)
def link(params: LinkParams, ctx: Context) -> LinkResult:
    """Link two notes with a typed edge (supports, contradicts, supersedes, triggered_by, related_to).

    Both notes must exist in the namespace. ``supersedes`` (new → old) marks the old note superseded, so recall
    leaves it out (``as_of`` before now still finds it); a note has at most one superseding note.
    """
    item = LinkIn.model_validate(params.model_dump(exclude={"namespace"}))
    (eid,), (created,), superseded, e = create_edges(ctx, [item], [])
    return LinkResult(edge=MemoryEdge(id=eid, source_id=item.source_id, target_id=item.target_id,
                                      relation=item.relation, weight=e.weight, created_at=e.created_at),
                      created=created, superseded=superseded[0] if superseded else None)


@pack.verb("link_many", act=Act.COMMISSIVE)
def link_many(params: LinkManyParams, ctx: Context) -> LinkManyResult:
    """Create many memory edges in one transaction (validated together: nothing is written if one is bad)."""
    s: MemorySettings = ctx.settings
    if len(params.links) > s.max_batch:
        raise errors.LimitExceeded(f"at most {s.max_batch} links per call, got {len(params.links)}",
                                   details={"errors": [{"loc": ["links"], "msg": "batch too large"}]})
    ids, created, superseded, _ = create_edges(ctx, params.links, ["links"])
    return LinkManyResult(edge_ids=ids, created=sum(created), superseded=superseded)


@pack.verb("unlink", act=Act.COMMISSIVE)
def unlink(params: UnlinkParams, ctx: Context) -> UnlinkResult:
    """Remove a memory edge (closed in the kg, kept in its history); removing a supersedes edge un-supersedes."""
    graph: MemoryGraph = ctx.state.graph
    edge = graph.edges.get(params.edge_id)
    if edge is None or edge[0] != ctx.namespace:
        raise errors.NotFound(f"no memory edge {params.edge_id} in namespace {ctx.namespace!r}",
                              details={"errors": [{"loc": ["edge_id"], "msg": "unknown edge"}]})
    ns, src, dst, rel, _ = edge
    ctx.call("kg.unlink", {"edge_id": params.edge_id})
    unsuperseded = None
    if rel == "supersedes":
        rows = ctx.db.query("UPDATE memory.notes SET superseded_by = NULL, superseded_at = NULL WHERE namespace = ? "
                            "AND id = ? AND superseded_by = ? RETURNING id", [ns, dst, src])
        unsuperseded = rows[0][0] if rows else None
    index = ctx.state.index

    def apply() -> None:
        graph.remove(params.edge_id)
        if unsuperseded is not None:
            index.set_superseded(unsuperseded, None)

    ctx.on_commit(apply)
    return UnlinkResult(removed=params.edge_id, unsuperseded=unsuperseded)


@pack.verb("edges", act=Act.ASSERTIVE)
def edges(params: EdgesParams, ctx: Context) -> EdgesResult:
    """List a note's memory edges (to and from other notes), oldest first."""
    note_states(ctx, [params.memory_id], {params.memory_id: ["memory_id"]})
    got = ctx.call("kg.edges", {"node_id": f"m:{params.memory_id}", "direction": params.direction,
                                "relations": list(params.relations or MEMORY_RELATIONS),
                                "include_removed": params.include_removed,
                                "limit": params.limit}).edges
    out = []
    for e in got:
        s, d = NODE.match(e.src), NODE.match(e.dst)
        if s and d:
            out.append(MemoryEdge(id=e.id, source_id=int(s.group(1)), target_id=int(d.group(1)), relation=e.relation,
                                  weight=e.weight, created_at=e.created_at, removed_at=e.removed_at))
    return EdgesResult(memory_id=params.memory_id, edges=out)


# -- walk -----------------------------------------------------------------------------------------------------
def run_walk(ctx: Context, q: np.ndarray, model: str, seeds: dict[int, float], mask: np.ndarray, *,
             max_depth: int, cut: float, relations: set[str] | None) -> tuple[dict[int, tuple], dict[int, float]]:
    """Walk from ``seeds`` ({note: starting factor}); returns ({note: (factor, depth, seed, path)}, cosines).

    A path is a tuple of ``(edge id, source, target, relation)``. A note keeps its best factor; it is entered
    only if it passes ``mask`` and its cosine to ``q`` is at least ``cut``.
    """
    s: MemorySettings = ctx.settings
    factors = s.graph.relation_factors.model_dump()
    graph: MemoryGraph = ctx.state.graph
    vectors = ctx.state.index.vectors.get(model)
    ns = ctx.namespace
    best: dict[int, tuple] = {n: (f, 0, n, ()) for n, f in seeds.items()}
    cos: dict[int, float] = {}
    frontier = sorted(seeds)
    for level in range(1, max_depth + 1):
        proposals: dict[int, tuple] = {}
        for u in frontier:
            fu, _, seed, path = best[u]
            for eid in graph.incident(ns, u):
                _, a, b, rel, _ = graph.edges[eid]
                if relations is not None and rel not in relations:
                    continue
                v = b if a == u else a
                if v >= mask.shape[0] or not mask[v]:
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


def _walk_mask(ctx: Context, include_superseded: bool, filters: RecallFilters | None = None) -> np.ndarray:
    f = filters or RecallFilters(include_superseded=include_superseded)
    return ctx.state.index.mask(ctx.namespace, f)


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
    emb = ctx.call("memory.recall_embed", EmbedParams(query=params.query))
    q = np.asarray(emb.vector, dtype=np.float32)
    mask = _walk_mask(ctx, params.include_superseded)
    vectors = ctx.state.index.vectors.get(emb.model)
    hits = vectors.search(q, params.seeds or g.walk_seeds, allowed=mask, min_cosine=cut) if vectors else []
    seeds = {i: 1.0 for i, _ in hits}
    best, cos = run_walk(ctx, q, emb.model, seeds, mask, max_depth=depth, cut=cut,
                         relations=set(params.relations) if params.relations else None)
    cos.update(hits)
    cent = ctx.state.graph.centrality.get(ctx.namespace, {})
    factors = s.graph.relation_factors.model_dump()
    ranked = sorted(((cos[n] * f * (1.0 + cent.get(n, 0.0)), n) for n, (f, *_rest) in best.items()),
                    key=lambda t: (-t[0], t[1]))[: params.limit]
    notes = fetch_notes(ctx, [n for _, n in ranked])
    results = []
    for score, n in ranked:
        f, d, seed, path = best[n]
        results.append(WalkHit(note=notes[n], score=score, cosine=cos[n], edge_factor=f, centrality=cent.get(n, 0.0),
                               depth=d, seed_id=seed,
                               path=[WalkHop(edge_id=e, source_id=a, target_id=b, relation=r, factor=factors[r])
                                     for e, a, b, r in path]))
    return WalkResult(query=params.query, embedder=emb.model, seeds=list(seeds), results=results, visited=len(best))


@pack.verb("recall_expand", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
def recall_expand(params: ExpandParams, ctx: Context) -> ExpandResult:
    """Recall's expand_graph step: walk from the best fused candidates and add the notes reached.

    Seeds are the top ``expand_seeds`` candidates by relevance; a reached note that is not already a candidate
    joins with ``relevance = relevance(seed) × edge_factor`` (recorded as ``context["graph"]``), after passing
    the recall's filters and the walk's cosine cut.
    """
    g = ctx.settings.graph
    c = params.candidates
    order = sorted(range(len(c.ids)), key=lambda j: (-c.relevance[j], c.ids[j]))[: g.expand_seeds]
    seeds = {c.ids[j]: 1.0 for j in order}
    rel_of = {c.ids[j]: c.relevance[j] for j in order}
    if not seeds or not params.vector:
        return ExpandResult(candidates=c, added=[])
    q = np.asarray(params.vector, dtype=np.float32)
    mask = _walk_mask(ctx, False, params.filters)
    best, _ = run_walk(ctx, q, params.model, seeds, mask, max_depth=g.expand_max_depth,
                       cut=g.walk_min_similarity, relations=None)
    have = set(c.ids)
    added = sorted(n for n in best if n not in have)
    ctx_cols = {k: list(v) + [0.0] * len(added) for k, v in c.context.items()}
    ctx_cols["graph"] = [0.0] * len(c.ids) + [best[n][0] for n in added]
    out = Candidates.model_construct(
        ids=list(c.ids) + added,
        relevance=list(c.relevance) + [rel_of[best[n][2]] * best[n][0] for n in added],
        text_match=list(c.text_match) + [0.0] * len(added),
        vector_match=list(c.vector_match) + [0.0] * len(added), context=ctx_cols)
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
        ctx.db.execute("INSERT INTO memory.centrality SELECT unnest(?::BIGINT[]), ?, unnest(?::DOUBLE[]), ?",
                       [list(scores), ns, list(scores.values()), now])

    def apply() -> None:
        graph.centrality[ns] = dict(scores)

    ctx.on_commit(apply)
    top = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: params.top]
    return CentralityResult(notes=len(scores), edges=res.edges, relations=rels,
                            top=[NoteCentrality(note_id=n, score=v) for n, v in top], computed_at=now)

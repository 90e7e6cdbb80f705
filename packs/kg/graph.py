"""Graph verbs: kg.graph_recall (BFS over facts and edges), kg.centrality (PageRank), kg.centrality_scores."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import Relation
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.edges import EDGE_COLUMNS, EdgeOut, edge_out
from palimpsest_memory.packs.kg.models import EntityOut, FactOut, NodeId, When, name_key
from palimpsest_memory.packs.kg.pagerank import pagerank_scores
from palimpsest_memory.packs.kg.sql_reads import entity_by_ref, lookup_keys, read_facts, tx_filter, valid_filter
from palimpsest_memory.packs.kg.store import KgStore


class GraphRecallParams(NamespacedParams):
    entities: list[str] = Field(default_factory=list, description="Start entities: names, aliases or 'e:<id>'.")
    text: str | None = Field(None, description="Or a text: start from the entities detected in it.")
    max_depth: int = Field(2, ge=0, description="Hops from the start entities.")
    max_nodes: int | None = Field(None, ge=1, description="Node budget (default and hard cap from config).")
    relations: list[Relation] | None = Field(None, description="Edge relations to follow (default: all).")
    predicates: list[str] | None = Field(None, description="Fact predicates to follow (default: all).")
    as_of: When | None = Field(None, description="Follow facts and edges valid at this time (default: now).")
    include_superseded: bool = Field(False, description="Also traverse facts that are no longer valid.")


class Hop(BaseModel):
    src: str
    dst: str
    via: str = Field(description="'fact:<predicate>' or 'edge:<relation>'")
    fact_id: int | None = None
    edge_id: int | None = None


class PathOut(BaseModel):
    node_id: str
    depth: int
    hops: list[Hop]


class ReachedEntity(BaseModel):
    entity: EntityOut
    depth: int


class GraphRecallResult(BaseModel):
    start: list[str]
    entities: list[ReachedEntity]
    nodes: list[str] = Field(description="Every reached node id (entities, notes, facts), BFS order")
    facts: list[FactOut]
    edges: list[EdgeOut]
    paths: list[PathOut]
    grounding: list[str] = Field(description="Source note ids of the facts used, plus notes reached by edges")
    truncated: bool


def _start_nodes(ctx: Context, params: GraphRecallParams) -> list[str]:
    nodes: list[str] = []
    for i, ref in enumerate(params.entities):
        if ref.startswith("e:") and ref[2:].isdigit():
            nodes.append(entity_by_ref(ctx, entity_id=int(ref[2:])).node_id)
        else:
            hit = lookup_keys(ctx, [name_key(ref)]).get(name_key(ref))
            if hit is None:
                raise errors.NotFound(f"entity {ref!r} does not exist in namespace {ctx.namespace!r}",
                                      details={"errors": [{"loc": ["entities", i], "msg": "unknown entity"}]})
            nodes.append(f"e:{hit[0]}")
    if params.text:
        limit = ctx.settings.detect_max_text_length
        if len(params.text) > limit:
            raise errors.LimitExceeded(f"text is longer than {limit} characters",
                                       details={"errors": [{"loc": ["text"], "msg": f"at most {limit} characters"}]})
        det = KgStore(ctx).detector()
        nodes += [f"e:{det.keys[h.key][0]}" for h in det.find(params.text)]
    return list(dict.fromkeys(nodes))


@pack.verb("graph_recall", act=Act.ASSERTIVE)
def graph_recall(params: GraphRecallParams, ctx: Context) -> GraphRecallResult:
    """Breadth-first recall from entities (named, or detected in a text) over facts and edges, with grounding."""
    s = ctx.settings
    if params.max_depth > s.graph_recall_max_depth_cap:
        raise errors.LimitExceeded(f"max_depth is at most {s.graph_recall_max_depth_cap}",
                                   details={"errors": [{"loc": ["max_depth"], "msg": "too deep"}]})
    budget = params.max_nodes or s.graph_recall_max_nodes
    if budget > s.graph_recall_max_nodes_cap:
        raise errors.LimitExceeded(f"max_nodes is at most {s.graph_recall_max_nodes_cap}",
                                   details={"errors": [{"loc": ["max_nodes"], "msg": "too many"}]})
    start = _start_nodes(ctx, params)[:budget]
    when = params.as_of or ctx.now()
    depth: dict[str, int] = {n: 0 for n in start}
    parent: dict[str, tuple[str, Hop]] = {}
    facts: dict[int, FactOut] = {}
    edges: dict[int, EdgeOut] = {}
    frontier, truncated = list(start), False
    for level in range(1, params.max_depth + 1):
        if not frontier:
            break
        ctx.check_deadline(f"graph_recall: depth {level}")
        steps: list[tuple[str, str, Hop]] = []
        ents = [int(n[2:]) for n in frontier if n.startswith("e:")]
        if ents:
            args: list[Any] = [ents, ents]
            where = f"(f.subject_id IN (SELECT unnest(?::BIGINT[])) OR f.object_id IN (SELECT unnest(?::BIGINT[]))) " \
                    f"AND {tx_filter(None, args)}"
            if not params.include_superseded:
                where += f" AND {valid_filter(when, args)}"
            if params.predicates:
                where += " AND f.predicate IN (SELECT unnest(?::VARCHAR[]))"
                args.append(list(params.predicates))
            for f in read_facts(ctx, where, args, order="f.confidence DESC, f.fact_id"):
                facts[f.fact_id] = f
                if f.object_id is not None:
                    a, b = f"e:{f.subject.id}", f"e:{f.object_id}"
                    hop = Hop(src=a, dst=b, via=f"fact:{f.predicate}", fact_id=f.fact_id)
                    steps += [(a, b, hop), (b, a, hop)]
        eargs: list[Any] = [ctx.namespace, frontier, frontier, when, when]
        ewhere = ("namespace = ? AND removed_at IS NULL AND (src IN (SELECT unnest(?::VARCHAR[])) OR dst IN "
                  "(SELECT unnest(?::VARCHAR[]))) AND (valid_from IS NULL OR valid_from <= ?) AND "
                  "(valid_to IS NULL OR valid_to > ?)")
        if params.relations:
            ewhere += " AND relation IN (SELECT unnest(?::VARCHAR[]))"
            eargs.append(list(params.relations))
        for row in ctx.db.query(f"SELECT {EDGE_COLUMNS} FROM kg.edges WHERE {ewhere} ORDER BY weight DESC, id", eargs):
            e = edge_out(row)
            edges[e.id] = e
            hop = Hop(src=e.src, dst=e.dst, via=f"edge:{e.relation}", edge_id=e.id)
            steps += [(e.src, e.dst, hop), (e.dst, e.src, hop)]
        nxt = []
        in_frontier = set(frontier)
        for a, b, hop in steps:
            if a not in in_frontier or b in depth:
                continue
            if len(depth) >= budget:
                truncated = True
                break
            depth[b], parent[b] = level, (a, hop)
            nxt.append(b)
        frontier = nxt
    facts = {k: f for k, f in facts.items()
             if f"e:{f.subject.id}" in depth and (f.object_id is None or f"e:{f.object_id}" in depth)}
    edges = {k: e for k, e in edges.items() if e.src in depth and e.dst in depth}
    return _result(ctx, start, depth, parent, facts, edges, truncated)


def _result(ctx: Context, start: list[str], depth: dict[str, int], parent: dict[str, tuple[str, Hop]],
            facts: dict[int, FactOut], edges: dict[int, EdgeOut], truncated: bool) -> GraphRecallResult:
    ent_ids = [int(n[2:]) for n in depth if n.startswith("e:")]
    rows = ctx.db.query("SELECT id, name, kind FROM kg.entities WHERE namespace = ? AND id IN "
                        "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, ent_ids]) if ent_ids else []
    by_id = {i: EntityOut(id=i, node_id=f"e:{i}", name=n, kind=k) for i, n, k in rows}
    paths = []
    for node, d in depth.items():
        if d == 0:
            continue
        hops, cur = [], node
        while cur in parent:
            cur, hop = parent[cur]
            hops.append(hop)
        paths.append(PathOut(node_id=node, depth=d, hops=hops[::-1]))
    grounding: list[str] = []
    if facts:
        srcs = ctx.db.query("SELECT DISTINCT source_id FROM kg.fact_sources WHERE namespace = ? AND fact_id IN "
                            "(SELECT unnest(?::BIGINT[])) ORDER BY source_id", [ctx.namespace, list(facts)])
        grounding = sorted({f.source_id for f in facts.values() if f.source_id} | {r[0] for r in srcs})
    grounding += [n[2:] for n in depth if n.startswith("m:") and n[2:] not in grounding]
    return GraphRecallResult(
        start=start, entities=[ReachedEntity(entity=by_id[i], depth=depth[f"e:{i}"]) for i in ent_ids if i in by_id],
        nodes=list(depth), facts=sorted(facts.values(), key=lambda f: f.fact_id),
        edges=sorted(edges.values(), key=lambda e: e.id), paths=paths, grounding=grounding, truncated=truncated)


class CentralityParams(NamespacedParams):
    relations: list[Relation] | None = Field(None, description="Edge relations to use (contradicts never counts).")
    node_types: list[Literal["e", "m", "f"]] | None = Field(None, description="Only edges between these node types.")
    include_facts: bool = Field(True, description="Count current entity→entity facts as edges (weight=confidence).")
    top: int | None = Field(None, ge=1, description="How many top nodes to return (default from config).")
    scope: str | None = Field(None, pattern=r"^[a-z0-9_:.,=;-]{1,200}$",
                              description="Name under which scores are stored; default derived from the filters.")


class NodeScore(BaseModel):
    node_id: str
    score: float = Field(description="PageRank normalised so the top node is 1.0")
    raw_score: float = Field(description="PageRank (sums to 1 over the graph)")
    name: str | None = Field(None, description="The entity's name for 'e:' nodes")


class CentralityResult(BaseModel):
    scope: str
    nodes: int
    edges: int
    top: list[NodeScore]
    computed_at: datetime


class ScoresParams(NamespacedParams):
    node_ids: list[NodeId] = Field(min_length=1, description="Nodes whose stored PageRank to read.")
    scope: str = Field("default", description="The scope kg.centrality stored them under.")


class ScoresResult(BaseModel):
    scores: dict[str, float] = Field(description="node id → normalised score; nodes without a score are absent")


def _scope(params: CentralityParams) -> str:
    if params.scope:
        return params.scope
    parts = []
    if params.relations:
        parts.append("rel=" + ",".join(sorted(set(params.relations))))
    if params.node_types:
        parts.append("types=" + ",".join(sorted(set(params.node_types))))
    if not params.include_facts:
        parts.append("facts=no")
    return ";".join(parts) or "default"


@pack.verb("centrality", act=Act.COMMISSIVE)
def centrality(params: CentralityParams, ctx: Context) -> CentralityResult:
    """PageRank over positive edges (and current entity facts), normalised to top = 1.0, stored per node."""
    s, scope, now = ctx.settings, _scope(params), ctx.now()
    nodes, n_edges, raw = pagerank_scores(ctx, params.relations, params.node_types, params.include_facts, now,
                                          s.pagerank_iterations, s.pagerank_damping)
    ctx.db.execute("DELETE FROM kg.centrality WHERE namespace = ? AND scope = ?", [ctx.namespace, scope])
    if nodes:
        # one string per column: DuckDB converts a Python list of 250k floats ~5x slower than it splits a string;
        # repr() round-trips a float exactly, and the normalised score is computed by DuckDB from the raw one
        ctx.db.execute(
            "INSERT INTO kg.centrality SELECT ?, ?, unnest(string_split(?, chr(31))), unnest(string_split(?, ','))"
            "::DOUBLE / ?, unnest(string_split(?, ','))::DOUBLE, ?",
            [ctx.namespace, scope, "\x1f".join(nodes), ",".join(map(repr, raw.tolist())), float(raw.max()),
             ",".join(map(repr, raw.tolist())), now])
    top_n = min(params.top or s.centrality_top, s.max_query_limit)
    # nodes are numbered in node-id order, so a stable sort on -raw breaks ties by node id
    order = np.argsort(-raw, kind="stable")[:top_n].tolist() if nodes else []
    names = {}
    ents = [int(nodes[i][2:]) for i in order if nodes[i].startswith("e:")]
    if ents:
        names = {f"e:{i}": n for i, n in ctx.db.query("SELECT id, name FROM kg.entities WHERE id IN "
                                                      "(SELECT unnest(?::BIGINT[]))", [ents])}
    top = [NodeScore(node_id=nodes[i], score=float(raw[i] / raw.max()), raw_score=float(raw[i]),
                     name=names.get(nodes[i])) for i in order]
    return CentralityResult(scope=scope, nodes=len(nodes), edges=n_edges, top=top, computed_at=now)


@pack.verb("centrality_scores", act=Act.ASSERTIVE)
def centrality_scores(params: ScoresParams, ctx: Context) -> ScoresResult:
    """Read the PageRank scores kg.centrality stored for some nodes (e.g. to boost recall candidates)."""
    rows = ctx.db.query("SELECT node_id, score FROM kg.centrality WHERE namespace = ? AND scope = ? AND node_id IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ctx.namespace, params.scope, list(params.node_ids)])
    return ScoresResult(scores=dict(rows))

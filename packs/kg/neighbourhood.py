"""kg.neighbourhood: the part of the graph around some nodes that a person can read (the web view's graph, ADR 0042).

The graph is the namespace's active edges (valid now) and its current entity-to-entity facts (relation
``fact:<predicate>``), optionally only some relations. From the start nodes it reaches ``depth`` hops, but a hub
(more than ``hub_degree`` edges) that is not a start node is reached and not passed through: it is *folded*,
drawn once with the count of its edges left out, until it is opened (made a start node). Of the nodes reached at
most ``limit`` are shown, grown best-first from the start nodes by rank (the stored PageRank of ``kg.centrality``
when the namespace has one, else PageRank over the neighbourhood itself; then degree, then id), so a node shown
is always linked to one shown before it, and a larger limit shows the same nodes and then more ("show more").
The edges drawn are every edge between two nodes shown; the answer counts what was left out.
"""
from __future__ import annotations

import heapq
import re
from datetime import datetime
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import RELATIONS
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.edges import first_missing
from palimpsest_memory.packs.kg.models import NodeId
from palimpsest_memory.packs.kg.pagerank import power_iteration

FACT_RELATION = re.compile(r"^fact:\S.*$")


class NeighbourhoodParams(NamespacedParams):
    nodes: list[NodeId] = Field(min_length=1, description="Start nodes ('e:3', 'm:12', 'f:7'): never folded.")
    depth: int | None = Field(None, ge=0, description="Hops from the start nodes (default and cap from config).")
    limit: int | None = Field(None, ge=1, description="Most nodes shown (default and cap from config); a larger "
                                                       "limit shows the same nodes first, then the next ones.")
    hub_degree: int | None = Field(None, ge=1, description="A node with more edges than this is a hub, folded "
                                                            "unless it is a start node (default from config).")
    relations: list[str] | None = Field(None, description="Only these relations: edge relations (mentions, "
                                                           "supports, …) or 'fact:<predicate>' (default: all).")


class ViewNode(BaseModel):
    id: str
    name: str | None = Field(None, description="An entity's name ('e:' nodes)")
    kind: str | None = Field(None, description="An entity's kind ('e:' nodes)")
    depth: int = Field(description="Hops from the nearest start node")
    score: float = Field(description="Rank: PageRank normalised so the best node of the namespace is 1.0")
    degree: int = Field(description="Edges of the node (of the relations asked), drawn or not")
    hidden: int = Field(description="Of those, how many are not drawn (their other end is not shown)")
    folded: bool = Field(description="A hub not opened: its edges to nodes not shown are bundled in `hidden`")


class ViewEdge(BaseModel):
    key: str = Field(description="'edge:<id>' or 'fact:<fact id>'")
    src: str
    dst: str
    relation: str = Field(description="The edge's relation, or 'fact:<predicate>'")
    weight: float


class NeighbourhoodResult(BaseModel):
    start: list[str]
    nodes: list[ViewNode] = Field(description="The nodes shown, the start nodes first, then best-first by rank")
    edges: list[ViewEdge] = Field(description="Every edge (of the relations asked) between two nodes shown")
    relations: dict[str, int] = Field(description="Every relation of the namespace's graph, with its edge count "
                                                  "(what a filter can choose from)")
    limit: int = Field(description="The limit applied")
    hub_degree: int = Field(description="The hub bound applied")
    depth: int = Field(description="The depth applied")
    ranked_by: Literal["pagerank", "local_pagerank"] = Field(
        description="pagerank: the scores kg.centrality stored; local_pagerank: none stored, computed here")
    reached: int = Field(description="Nodes reached (shown or not)")
    omitted_nodes: int = Field(description="Nodes reached but not shown (beyond the limit): a larger limit shows them")
    omitted_edges: int = Field(description="Edges of the nodes shown that are not drawn (folded hubs' spokes, "
                                           "edges to nodes beyond the limit or the depth)")


def _graph(ctx: Context, relations: list[str] | None, now: datetime, args: list[Any]) -> str:
    """SQL of the graph's edges as (key, src, dst, relation, weight); appends its parameters to ``args``."""
    edge_rel = fact_rel = ""
    if relations is not None:
        edge_rel = " AND relation IN (SELECT unnest(?::VARCHAR[]))"
        fact_rel = " AND predicate IN (SELECT unnest(?::VARCHAR[]))"
    args += [ctx.namespace, now, now]
    if relations is not None:
        args.append([r for r in relations if not r.startswith("fact:")])
    args += [ctx.namespace, now, now]
    if relations is not None:
        args.append([r[5:] for r in relations if r.startswith("fact:")])
    return ("SELECT 'edge:' || id AS key, src, dst, relation, weight FROM kg.edges WHERE namespace = ? AND "
            "removed_at IS NULL AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)"
            f"{edge_rel} UNION ALL SELECT 'fact:' || fact_id, 'e:' || subject_id, 'e:' || object_id, "
            "'fact:' || predicate, confidence FROM kg.facts WHERE namespace = ? AND retracted_at IS NULL AND "
            "object_id IS NOT NULL AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)"
            f"{fact_rel}")


class Graph:
    """The graph of the relations asked, read for a set of nodes at a time."""

    def __init__(self, ctx: Context, relations: list[str] | None) -> None:
        self.ctx, self.relations, self.now = ctx, relations, ctx.now()

    def _query(self, where: str, nodes: list[str], times: int, select: str = "*") -> list[tuple]:
        args: list[Any] = []
        sql = _graph(self.ctx, self.relations, self.now, args)
        return self.ctx.db.query(f"SELECT {select} FROM ({sql}) g WHERE {where}", args + [nodes] * times)

    def incident(self, nodes: list[str]) -> list[tuple]:
        return self._query("g.src IN (SELECT unnest(?::VARCHAR[])) OR g.dst IN (SELECT unnest(?::VARCHAR[]))",
                           nodes, 2)

    def between(self, nodes: list[str]) -> list[tuple]:
        return self._query("g.src IN (SELECT unnest(?::VARCHAR[])) AND g.dst IN (SELECT unnest(?::VARCHAR[])) "
                           "ORDER BY g.key", nodes, 2)

    def degrees(self, nodes: list[str]) -> dict[str, int]:
        if not nodes:
            return {}
        args: list[Any] = []
        sql = _graph(self.ctx, self.relations, self.now, args)
        rows = self.ctx.db.query(
            f"SELECT node, count(*) FROM (SELECT src AS node FROM ({sql}) a WHERE a.src IN "
            f"(SELECT unnest(?::VARCHAR[])) UNION ALL SELECT dst FROM ({sql}) b WHERE b.dst IN "
            "(SELECT unnest(?::VARCHAR[]))) d GROUP BY node",
            args + [nodes] + args + [nodes])
        return {n: int(c) for n, c in rows}

    def relation_counts(self) -> dict[str, int]:
        args: list[Any] = []
        sql = _graph(self.ctx, None, self.now, args)
        return {r: int(c) for r, c in self.ctx.db.query(f"SELECT relation, count(*) FROM ({sql}) g GROUP BY relation "
                                                         "ORDER BY relation", args)}


def _check(params: NeighbourhoodParams, ctx: Context) -> tuple[list[str], int, int, int]:
    s = ctx.settings
    depth = s.graph_view_depth if params.depth is None else params.depth
    limit = params.limit or s.graph_view_nodes
    if depth > s.graph_view_max_depth:
        raise errors.LimitExceeded(f"depth is at most {s.graph_view_max_depth}, got {depth}",
                                   details={"errors": [{"loc": ["depth"], "msg": "too deep"}]})
    if limit > s.graph_view_nodes_cap:
        raise errors.LimitExceeded(f"limit is at most {s.graph_view_nodes_cap}, got {limit}",
                                   details={"errors": [{"loc": ["limit"], "msg": "too many nodes"}]})
    start = list(dict.fromkeys(params.nodes))
    if len(start) > limit:
        raise errors.LimitExceeded(f"{len(start)} start nodes is more than the limit of {limit} nodes shown",
                                   details={"errors": [{"loc": ["nodes"], "msg": "more start nodes than limit"}]})
    for i, rel in enumerate(params.relations or []):
        if rel not in RELATIONS and not FACT_RELATION.match(rel):
            raise errors.InvalidParams(
                f"unknown relation {rel!r}: an edge relation ({', '.join(RELATIONS)}) or 'fact:<predicate>'",
                details={"errors": [{"loc": ["relations", i], "msg": "unknown relation"}]})
    missing = first_missing(ctx, start)
    if missing is not None:
        raise errors.NotFound(f"node {missing} does not exist in namespace {ctx.namespace!r}",
                              details={"errors": [{"loc": ["nodes", start.index(missing)], "msg": "unknown node"}]})
    return start, depth, limit, params.hub_degree or s.graph_view_hub_degree


def _scores(ctx: Context, reached: list[str], edges: dict[str, tuple]) -> tuple[dict[str, float], str]:
    """node -> rank score: the stored PageRank when the namespace has one (nodes it lacks score 0), else PageRank
    over the neighbourhood's own edges (cheap: the nodes reached, not the namespace)."""
    if ctx.db.query("SELECT 1 FROM kg.centrality WHERE namespace = ? AND scope = 'default' LIMIT 1", [ctx.namespace]):
        rows = ctx.db.query("SELECT node_id, score FROM kg.centrality WHERE namespace = ? AND scope = 'default' AND "
                            "node_id IN (SELECT unnest(?::VARCHAR[]))", [ctx.namespace, reached])
        return {n: float(v) for n, v in rows}, "pagerank"
    ix = {n: i for i, n in enumerate(reached)}
    inside = [e for e in edges.values() if e[1] in ix and e[2] in ix and e[4] > 0]
    if not inside:
        return {}, "local_pagerank"
    src, dst, w = (np.array(col) for col in zip(*[(ix[e[1]], ix[e[2]], e[4]) for e in inside]))
    s = ctx.settings
    r = power_iteration(ctx, src, dst, w, len(reached), s.pagerank_iterations, s.pagerank_damping)
    return {n: float(r[i] / r.max()) for n, i in ix.items()}, "local_pagerank"


def _order_key(node: str, score: dict[str, float], degree: dict[str, int]) -> tuple:
    tail = node[2:]
    return (-score.get(node, 0.0), -degree.get(node, 0), node[0], int(tail) if tail.isdigit() else 0, tail)


@pack.verb("neighbourhood", act=Act.ASSERTIVE)
def neighbourhood(params: NeighbourhoodParams, ctx: Context) -> NeighbourhoodResult:
    """The graph around some nodes, readable: at most `limit` nodes by PageRank, hubs folded, one relation filter;
    says what it left out (the web view's graph)."""
    start, depth, limit, hub = _check(params, ctx)
    g = Graph(ctx, params.relations)
    level = {n: 0 for n in start}
    degree = g.degrees(start)
    opened: set[str] = set(start)
    seen: dict[str, tuple] = {}  # the edges read, by key
    frontier = start
    for d in range(1, depth + 1):
        passable = [n for n in frontier if n in opened or degree.get(n, 0) <= hub]
        if not passable:
            break
        ctx.check_deadline(f"neighbourhood: depth {d}")
        opened.update(passable)
        fresh = []
        for row in g.incident(passable):
            seen[row[0]] = row
            for a, b in ((row[1], row[2]), (row[2], row[1])):
                if a in opened and b not in level:
                    level[b] = d
                    fresh.append(b)
        degree.update(g.degrees(fresh))
        frontier = fresh
    reached = list(level)
    score, ranked_by = _scores(ctx, reached, seen)
    shown = _grow(start, limit, opened, seen, score, degree)
    drawn = g.between(shown)
    touching = {n: 0 for n in shown}
    for row in drawn:
        touching[row[1]] += 1
        touching[row[2]] += 1
    names = _entities(ctx, [n for n in shown if n.startswith("e:")])
    nodes = [ViewNode(id=n, name=names.get(n, (None, None))[0], kind=names.get(n, (None, None))[1], depth=level[n],
                      score=score.get(n, 0.0), degree=degree.get(n, 0), hidden=max(0, degree.get(n, 0) - touching[n]),
                      folded=n not in start and degree.get(n, 0) > hub) for n in shown]
    return NeighbourhoodResult(
        start=start, nodes=nodes,
        edges=[ViewEdge(key=k, src=s, dst=t, relation=r, weight=w) for k, s, t, r, w in drawn],
        relations=g.relation_counts(), limit=limit, hub_degree=hub, depth=depth, ranked_by=ranked_by,
        reached=len(reached), omitted_nodes=len(reached) - len(shown), omitted_edges=sum(n.hidden for n in nodes))


def _grow(start: list[str], limit: int, opened: set[str], edges: dict[str, tuple], score: dict[str, float],
          degree: dict[str, int]) -> list[str]:
    """Best-first from the start nodes: the next node shown is the best-ranked one linked to a shown node that was
    passed through, so every node shown hangs off one shown before it and a larger limit keeps this order."""
    links: dict[str, list[str]] = {}
    for _, a, b, _, _ in edges.values():
        if a in opened:
            links.setdefault(a, []).append(b)
        if b in opened:
            links.setdefault(b, []).append(a)
    shown, queued = list(start), set(start)
    heap: list[tuple] = []
    for node in start:
        for other in links.get(node, ()):
            if other not in queued:
                queued.add(other)
                heapq.heappush(heap, (_order_key(other, score, degree), other))
    while heap and len(shown) < limit:
        _, node = heapq.heappop(heap)
        shown.append(node)
        for other in links.get(node, ()):
            if other not in queued:
                queued.add(other)
                heapq.heappush(heap, (_order_key(other, score, degree), other))
    return shown


def _entities(ctx: Context, nodes: list[str]) -> dict[str, tuple[str, str]]:
    if not nodes:
        return {}
    rows = ctx.db.query("SELECT id, name, kind FROM kg.entities WHERE namespace = ? AND id IN "
                        "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, [int(n[2:]) for n in nodes]])
    return {f"e:{i}": (name, kind) for i, name, kind in rows}

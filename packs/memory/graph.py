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

from packs.memory.models_graph import (MEMORY_RELATIONS, EdgesParams, EdgesResult, LinkIn, LinkManyParams,
                                       LinkManyResult, LinkParams, LinkResult, MemoryEdge, UnlinkParams,
                                       UnlinkResult)
from packs.memory.pack import pack
from packs.memory.settings import MemorySettings
from runtime import Act, Context, errors

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
        for old, by in supersede.items():
            index.set_superseded(old, now, by)

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

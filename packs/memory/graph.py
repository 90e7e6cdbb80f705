"""The memory graph layer: typed edges between notes, the semantic walk, and centrality (ADR 0012).

The edges live in the kg pack (``kg.edges`` rows between ``m:<note id>`` nodes, written through ``kg.link`` /
``kg.link_many``); this module validates them (both notes in the namespace, no self-loop, a memory relation,
coherent supersession). The in-memory adjacency (:class:`~palimpsest_memory.packs.memory.mirrors.graph.MemoryGraph`, in
``ctx.state.graph``) is a mirror: loaded through ``kg.list_edges`` when a runtime opens, and updated from the
kg's ``edges_changed`` event after each committed link or unlink (mirrors/graph_sync.py) — memory's own links
included, so there is one path into it and a walk never goes back to SQL.

Walk (``memory.walk``): kNN seeds (exact cosine over the vector index, at least ``min_similarity``), then a
breadth-first walk along edges in either direction, at most ``max_depth`` hops; a note is entered only when its
cosine to the query is at least ``min_similarity`` (so the walk never crosses below the cut) and it passes the
recall mask (namespace, not archived, not superseded). A note keeps the best path that reaches it::

    edge_factor = Π relation_factor(edge) along the path     (1 for a seed)
    score       = cosine(query, note) × edge_factor × (1 + centrality(note))
"""
from __future__ import annotations

from typing import Any, Iterable

from palimpsest_memory.packs.memory.mirrors.changes import SupersededSet, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.mirrors.graph import MemoryGraph, note_of
from palimpsest_memory.packs.memory.models.graph import (EdgesParams, EdgesResult, LinkIn, LinkManyParams,
                                                         LinkManyResult, LinkParams, LinkResult, MemoryEdge,
                                                         UnlinkParams, UnlinkResult)
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import NOTE_RELATIONS

CENTRALITY_SCOPE = "memory"


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
    supersede: dict[int, int] = {}  # old note → the note that supersedes it
    for i, ln in enumerate(links):
        if ln.relation != "supersedes":
            continue
        where = {"loc": [*loc, i, "target_id"] if loc else ["target_id"]}
        current = states[ln.target_id][0]
        if ((current is not None and current != ln.source_id)
                or supersede.get(ln.target_id, ln.source_id) != ln.source_id):
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
            "unnest(?::BIGINT[]) AS by) u WHERE n.namespace = ? AND n.id = u.id",
            [now, list(supersede), list(supersede.values()), ctx.namespace])
        record(ctx, SupersededSet(tuple(supersede), now, tuple(supersede.values())))
    # the graph learns of the edges from the kg's edges_changed event once this commits (mirrors/graph_sync.py)
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


@pack.verb("link_many", act=Act.COMMISSIVE, bulk=True)
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
    if unsuperseded is not None:
        record(ctx, SupersededSet((unsuperseded,), None, (None,)))
    return UnlinkResult(removed=params.edge_id, unsuperseded=unsuperseded)


@pack.verb("edges", act=Act.ASSERTIVE)
def edges(params: EdgesParams, ctx: Context) -> EdgesResult:
    """List a note's memory edges (to and from other notes), oldest first."""
    note_states(ctx, [params.memory_id], {params.memory_id: ["memory_id"]})
    got = ctx.call("kg.edges", {"node_id": f"m:{params.memory_id}", "direction": params.direction,
                                "relations": list(params.relations or NOTE_RELATIONS),
                                "include_removed": params.include_removed,
                                "limit": params.limit}).edges
    out = []
    for e in got:
        s, d = note_of(e.src), note_of(e.dst)
        if s is not None and d is not None:
            out.append(MemoryEdge(id=e.id, source_id=s, target_id=d, relation=e.relation,
                                  weight=e.weight, created_at=e.created_at, removed_at=e.removed_at))
    return EdgesResult(memory_id=params.memory_id, edges=out)

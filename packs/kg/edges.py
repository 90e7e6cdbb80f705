"""Typed edges between node ids ('e:<entity>', 'm:<memory note>', 'f:<fact>'): link, link_many, unlink, edges."""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import EdgeLinked, EdgesChanged, Relation
from palimpsest_memory.runtime.params import NamespacedParams, Params

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.models import NodeId, When, valid_to_after_start


class LinkInput(Params):
    src: NodeId = Field(description="Source node id: 'e:<entity id>', 'm:<memory note id>' or 'f:<fact id>'.")
    dst: NodeId = Field(description="Destination node id (not the source: no self-loops).")
    relation: Relation = Field(description="supports | contradicts | supersedes | triggered_by | related_to | mentions")
    weight: float = Field(1.0, ge=0, le=1e6, allow_inf_nan=False, description="Edge weight (PageRank, recall).")
    properties: dict[str, Any] | None = Field(None, description="Free JSON properties.")
    valid_from: When | None = Field(None, description="Start of the edge's validity window (open if omitted).")
    valid_to: When | None = Field(None, description="End of the validity window, exclusive (open if omitted).")

    @field_validator("dst")
    @classmethod
    def _no_self_loop(cls, value: str, info: ValidationInfo) -> str:
        if value == info.data.get("src"):
            raise ValueError("an edge cannot link a node to itself")
        return value

    _after_start = field_validator("valid_to")(valid_to_after_start)


class LinkParams(LinkInput, NamespacedParams):
    pass


class LinkManyParams(NamespacedParams):
    links: list[LinkInput] = Field(min_length=1, description="Edges to create (or update), in one transaction.")


class EdgeOut(BaseModel):
    id: int
    src: str
    dst: str
    relation: str
    weight: float
    properties: dict[str, Any] | None
    valid_from: datetime | None
    valid_to: datetime | None
    created_at: datetime
    removed_at: datetime | None


class LinkResult(BaseModel):
    edge: EdgeOut
    created: bool = Field(description="false: an active edge with the same (src, dst, relation) was updated")


class LinkManyResult(BaseModel):
    edge_ids: list[int]
    created: int
    updated: int


class UnlinkParams(NamespacedParams):
    edge_id: int | None = Field(None, description="The edge to remove.")
    src: NodeId | None = Field(None, description="Or: source node id (with dst and relation).")
    dst: NodeId | None = Field(None, description="Destination node id.")
    relation: Relation | None = Field(None, description="Relation.")


class UnlinkResult(BaseModel):
    removed: list[int]


class EdgesParams(NamespacedParams):
    node_id: NodeId = Field(description="The node whose edges to list.")
    direction: Literal["out", "in", "both"] = Field("both", description="out: node is src; in: node is dst.")
    relations: list[Relation] | None = Field(None, description="Only these relations.")
    as_of: When | None = Field(None, description="Only edges whose validity window holds at this time.")
    include_removed: bool = Field(False, description="Also list unlinked edges.")
    limit: int = Field(1000, ge=1, description="Most edges returned.")


class EdgesResult(BaseModel):
    edges: list[EdgeOut]


EDGE_COLUMNS = "id, src, dst, relation, weight, properties, valid_from, valid_to, created_at, removed_at"


def edge_out(r: tuple) -> EdgeOut:
    props = json.loads(r[5]) if isinstance(r[5], str) else r[5]
    return EdgeOut(id=r[0], src=r[1], dst=r[2], relation=r[3], weight=r[4], properties=props, valid_from=r[6],
                   valid_to=r[7], created_at=r[8], removed_at=r[9])


def check_nodes(ctx: Context, links: list[LinkInput], loc: list[Any]) -> None:
    """Every node a link names must exist in this namespace (``first_missing``); the error is located at the first
    link side that names a missing one."""
    # each distinct node once, in order of first mention: a batch of mentions names the same entities many times
    nodes = list(dict.fromkeys(x for ln in links for x in (ln.src, ln.dst)))
    node = first_missing(ctx, nodes)
    if node is not None:
        i, side = next((i, side) for i, ln in enumerate(links) for side, x in (("src", ln.src), ("dst", ln.dst))
                       if x == node)
        raise errors.NotFound(f"node {node} does not exist in namespace {ctx.namespace!r}",
                              details={"errors": [{"loc": [*loc, i, side], "msg": "unknown node"}]})


def first_missing(ctx: Context, nodes: list[str]) -> str | None:
    """The first of ``nodes`` (distinct node ids) that does not exist in this namespace, or None. Entity and fact
    ids are looked up here; ids of kinds other packs own (memory's ``m:`` notes) are asked of them through the
    ``kg_missing_nodes`` hook (a kind no installed pack answers for cannot be checked, and passes)."""
    for prefix, table, col in (("e:", "kg.entities", "id"), ("f:", "kg.facts", "fact_id")):
        wanted = {int(n[2:]) for n in nodes if n.startswith(prefix)}
        if not wanted:
            continue
        found = {r[0] for r in ctx.db.query(f"SELECT DISTINCT {col} FROM {table} WHERE namespace = ? AND {col} IN "
                                            "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, sorted(wanted)])}
        if len(found) < len(wanted):
            return next(n for n in nodes if n.startswith(prefix) and int(n[2:]) not in found)
    foreign: dict[str, set[str]] = {}
    for node in nodes:
        if not node.startswith(("e:", "f:")):
            foreign.setdefault(node[:2], set()).add(node[2:])
    for prefix, wanted in foreign.items():
        answers = [a for a in ctx.hook("kg_missing_nodes", ctx=ctx, prefix=prefix, ids=sorted(wanted))
                   if a is not None]
        missing = {i for a in answers for i in a}
        if missing:  # (usually none: then no pass over the nodes)
            bad = next((n for n in nodes if n.startswith(prefix) and n[2:] in missing), None)
            if bad is not None:
                return bad
    return None


def link_all(ctx: Context, links: list[LinkInput], loc: list[Any]) -> tuple[list[int], list[bool]]:
    check_nodes(ctx, links, loc)
    now = ctx.now()
    rows = ctx.db.query(
        "SELECT e.src, e.dst, e.relation, e.id FROM kg.edges e JOIN (SELECT unnest(?::VARCHAR[]) AS s, "
        "unnest(?::VARCHAR[]) AS d, unnest(?::VARCHAR[]) AS r) k ON e.src = k.s AND e.dst = k.d AND e.relation = k.r "
        "WHERE e.namespace = ? AND e.removed_at IS NULL",
        [[ln.src for ln in links], [ln.dst for ln in links], [ln.relation for ln in links], ctx.namespace])
    existing = {(s, d, r): i for s, d, r, i in rows}
    fresh: dict[tuple[str, str, str], LinkInput] = {}
    updates: dict[int, LinkInput] = {}
    for ln in links:
        key = (ln.src, ln.dst, ln.relation)
        if key in existing:
            updates[existing[key]] = ln
        else:
            fresh[key] = ln  # a repeat inside the batch: the last one wins
    ids = [r[0] for r in ctx.db.query("SELECT nextval('kg.edge_seq') FROM range(?)", [len(fresh)])] if fresh else []
    new_ids = dict(zip(fresh, ids))
    if fresh:
        vals = list(fresh.values())
        ctx.db.execute(
            "INSERT INTO kg.edges SELECT unnest(?::BIGINT[]), ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
            "unnest(?::VARCHAR[]), unnest(?::DOUBLE[]), unnest(?::VARCHAR[])::JSON, unnest(?::TIMESTAMP[]), "
            "unnest(?::TIMESTAMP[]), ?, NULL",
            [ids, ctx.namespace, [v.src for v in vals], [v.dst for v in vals], [v.relation for v in vals],
             [v.weight for v in vals], [None if v.properties is None else json.dumps(v.properties) for v in vals],
             [v.valid_from for v in vals], [v.valid_to for v in vals], now])
    if updates:
        ctx.db.execute(
            "UPDATE kg.edges e SET weight = u.w, properties = coalesce(u.p::JSON, e.properties), "
            "valid_from = coalesce(u.vf, e.valid_from), valid_to = coalesce(u.vt, e.valid_to) FROM "
            "(SELECT unnest(?::BIGINT[]) AS id, unnest(?::DOUBLE[]) AS w, unnest(?::VARCHAR[]) AS p, "
            "unnest(?::TIMESTAMP[]) AS vf, unnest(?::TIMESTAMP[]) AS vt) u WHERE e.namespace = ? AND e.id = u.id",
            [list(updates), [v.weight for v in updates.values()],
             [None if v.properties is None else json.dumps(v.properties) for v in updates.values()],
             [v.valid_from for v in updates.values()], [v.valid_to for v in updates.values()], ctx.namespace])
    out_ids, created = [], []
    for ln in links:
        key = (ln.src, ln.dst, ln.relation)
        out_ids.append(existing.get(key, new_ids.get(key)))
        created.append(key not in existing)
    return out_ids, created


@pack.verb("link", act=Act.COMMISSIVE)
def link(params: LinkParams, ctx: Context) -> LinkResult:
    """Link two nodes with a typed edge (supports, contradicts, supersedes, triggered_by, related_to, mentions).

    Linking an already linked (src, dst, relation) updates its weight, properties and window.
    """
    item = LinkInput.model_validate(params.model_dump(exclude={"namespace"}))
    (eid,), (created,) = link_all(ctx, [item], [])
    publish_linked(ctx, [item], [eid])
    row = ctx.db.query(f"SELECT {EDGE_COLUMNS} FROM kg.edges WHERE id = ?", [eid])[0]
    return LinkResult(edge=edge_out(row), created=created)


@pack.verb("link_many", act=Act.COMMISSIVE, bulk=True)
def link_many(params: LinkManyParams, ctx: Context) -> LinkManyResult:
    """Create or update many edges in one transaction (set-wise), e.g. a note's mentions of entities."""
    if len(params.links) > ctx.settings.max_batch:
        raise errors.LimitExceeded(f"at most {ctx.settings.max_batch} links per call, got {len(params.links)}",
                                   details={"errors": [{"loc": ["links"], "msg": "too many items"}]})
    ids, created = link_all(ctx, params.links, ["links"])
    publish_linked(ctx, params.links, ids)
    return LinkManyResult(edge_ids=ids, created=sum(created), updated=len(created) - sum(created))


@pack.verb("unlink", act=Act.COMMISSIVE)
def unlink(params: UnlinkParams, ctx: Context) -> UnlinkResult:
    """Remove an edge (by id, or by src, dst and relation); it is closed (removed_at), not deleted."""
    if params.edge_id is not None:
        where, args = "id = ?", [params.edge_id]
    elif params.src and params.dst and params.relation:
        where, args = "src = ? AND dst = ? AND relation = ?", [params.src, params.dst, params.relation]
    else:
        raise errors.InvalidParams("give edge_id, or src, dst and relation",
                                   details={"errors": [{"loc": ["edge_id"], "msg": "missing"}]})
    ids = [r[0] for r in ctx.db.query(f"SELECT id FROM kg.edges WHERE namespace = ? AND removed_at IS NULL AND "
                                      f"{where}", [ctx.namespace, *args])]
    if not ids:
        raise errors.NotFound(f"no such active edge in namespace {ctx.namespace!r}")
    ctx.db.execute("UPDATE kg.edges SET removed_at = ? WHERE namespace = ? AND id IN (SELECT unnest(?::BIGINT[]))",
                   [ctx.now(), ctx.namespace, ids])
    ctx.publish("edges_changed", EdgesChanged(removed=tuple(ids)))
    return UnlinkResult(removed=ids)


def publish_linked(ctx: Context, links: list[LinkInput], ids: list[int]) -> None:
    """Tell subscribers (the memory graph) which edges this call linked, once it has committed."""
    ctx.publish("edges_changed", EdgesChanged(linked=tuple(
        EdgeLinked(eid, ln.src, ln.dst, ln.relation, ln.weight) for eid, ln in zip(ids, links))))


class ListEdgesParams(NamespacedParams):
    node_prefix: Literal["e:", "m:", "f:"] | None = Field(
        None, description="Only edges whose source and destination are both nodes of this kind (m: notes).")
    relations: list[Relation] | None = Field(None, description="Only these relations.")
    after_id: int = Field(0, ge=0, description="Cursor: list edges with a larger id (next_after_id of a page).")
    limit: int = Field(1000, ge=1, description="Most edges returned (capped by max_query_limit).")


class ListEdgesResult(BaseModel):
    edges: list[EdgeOut]
    next_after_id: int | None = Field(description="Pass as after_id for the next page; null on the last page.")


@pack.verb("list_edges", act=Act.ASSERTIVE)
def list_edges(params: ListEdgesParams, ctx: Context) -> ListEdgesResult:
    """Page through a namespace's active edges in id order, optionally only between nodes of one kind."""
    where, args = ["namespace = ?", "removed_at IS NULL", "id > ?"], [ctx.namespace, params.after_id]
    if params.node_prefix is not None:
        where.append("starts_with(src, ?) AND starts_with(dst, ?)")
        args += [params.node_prefix, params.node_prefix]
    if params.relations:
        where.append("relation IN (SELECT unnest(?::VARCHAR[]))")
        args.append(list(params.relations))
    limit = min(params.limit, ctx.settings.max_query_limit)
    rows = ctx.db.query(f"SELECT {EDGE_COLUMNS} FROM kg.edges WHERE {' AND '.join(where)} ORDER BY id "
                        f"LIMIT {limit + 1}", args)
    more = len(rows) > limit
    rows = rows[:limit]
    return ListEdgesResult(edges=[edge_out(r) for r in rows], next_after_id=rows[-1][0] if more else None)


@pack.verb("edges", act=Act.ASSERTIVE)
def edges(params: EdgesParams, ctx: Context) -> EdgesResult:
    """List a node's edges: outgoing, incoming or both, optionally by relation and validity time."""
    args: list[Any] = [ctx.namespace]
    side = {"out": "src = ?", "in": "dst = ?", "both": "(src = ? OR dst = ?)"}[params.direction]
    args += [params.node_id] * (2 if params.direction == "both" else 1)
    where = [side]
    if not params.include_removed:
        where.append("removed_at IS NULL")
    if params.relations:
        where.append("relation IN (SELECT unnest(?::VARCHAR[]))")
        args.append(list(params.relations))
    if params.as_of is not None:
        where.append("(valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)")
        args += [params.as_of, params.as_of]
    limit = min(params.limit, ctx.settings.max_query_limit)
    rows = ctx.db.query(f"SELECT {EDGE_COLUMNS} FROM kg.edges WHERE namespace = ? AND {' AND '.join(where)} "
                        f"ORDER BY id LIMIT {limit}", args)
    return EdgesResult(edges=[edge_out(r) for r in rows])

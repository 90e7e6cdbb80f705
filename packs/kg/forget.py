"""kg.forget: erase for real (issue 17, item 3; ADR 0018) — an entity, what hangs on some nodes, or a namespace.

Everything else in the kg keeps history (facts are versioned, edges are closed); forgetting is the one place
rows are deleted. What goes, by the rule of ADR 0018:
- ``nodes`` (``m:<note>``, ``e:<entity>``, ``f:<fact>``): every edge from or to them (removed ones too), their
  centrality, and their grounding of facts: a fact whose only sources are among the nodes is erased, a fact with
  another source loses just the link (its ``source_id`` becomes its earliest remaining source);
- ``entity``: the entity, its names and aliases, every fact it is the subject or object of, with all their
  versions and claims, and its node's edges and centrality;
- ``everything``: the namespace's whole kg.
An erased fact goes with all its versions, sources and claims; the timeline it was part of is recomputed from the
claims left (as a retraction does), so neighbours whose end it inferred run on again. What remains is a tombstone
per erased entity and fact (``kg.tombstones``: node, when, reason, actor).
"""
from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any, Optional

from pydantic import BaseModel, Field, model_validator

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.events import EdgesChanged
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.fact_writes import persist
from palimpsest_memory.packs.kg.models import Name, NodeId
from palimpsest_memory.packs.kg.sql_reads import entity_by_ref
from palimpsest_memory.packs.kg.store import KgStore
from palimpsest_memory.packs.kg.timeline import rebuild, retract_claims

TABLES = ("entities", "entity_keys", "predicates", "facts", "fact_sources", "claims", "edges", "centrality")


class ForgetParams(NamespacedParams):
    entity: Optional[Name] = Field(None, description="Erase this entity (name or alias) and every fact about it.")
    nodes: list[NodeId] = Field(default_factory=list, max_length=1_000_000,
                                description="Erase the edges of these nodes and the facts only they ground.")
    everything: bool = Field(False, description="Erase the namespace's whole graph.")
    reason: str = Field(min_length=1, max_length=500, description="Why (kept in the tombstones).")
    dry_run: bool = Field(False, description="Report what would be erased; write nothing.")

    @model_validator(mode="after")
    def _one_target(self) -> "ForgetParams":
        if sum((self.entity is not None, bool(self.nodes), self.everything)) != 1:
            raise ValueError("give exactly one of entity, nodes or everything")
        return self


class ForgetResult(BaseModel):
    dry_run: bool
    entities: list[int] = Field(description="Entity ids erased.")
    facts: list[int] = Field(description="Fact ids erased (with all their versions and claims).")
    edges: int = Field(description="Edges erased.")
    sources_unlinked: int = Field(description="Source links removed from facts that keep another source.")
    healed: list[int] = Field(default_factory=list, description="Facts whose interval was recomputed.")


def _ids(ctx: Context, sql: str, args: list[Any]) -> list[int]:
    return sorted({int(r[0]) for r in ctx.db.query(sql, [ctx.namespace, *args])})


@pack.verb("forget", act=Act.COMMISSIVE, erases=True)
def forget(params: ForgetParams, ctx: Context) -> ForgetResult:
    """Erase for real: an entity and its facts, the edges and sole-source facts of nodes, or the whole namespace;
    tombstones (what, when, why, who) stay. dry_run reports what would go."""
    if params.everything:
        return _forget_namespace(params, ctx)
    nodes = sorted(set(params.nodes))
    entities: list[int] = []
    erased: set[int] = set()
    if params.entity is not None:
        eid = entity_by_ref(ctx, params.entity, loc="entity").id
        entities = [eid]
        nodes = [f"e:{eid}"]
        erased |= set(_ids(ctx, "SELECT fact_id FROM kg.facts WHERE namespace = ? AND (subject_id = ? OR "
                                "object_id = ?)", [eid, eid]))
    # facts grounded by the nodes: erased when every source is among them, else they lose those links
    grounded = ctx.db.query("SELECT fact_id, source_id FROM kg.fact_sources WHERE namespace = ? AND fact_id IN "
                            "(SELECT fact_id FROM kg.fact_sources WHERE namespace = ? AND source_id IN "
                            "(SELECT unnest(?::VARCHAR[])))", [ctx.namespace, ctx.namespace, nodes])
    by_fact: dict[int, set[str]] = {}
    for fid, src in grounded:
        by_fact.setdefault(int(fid), set()).add(src)
    gone_nodes = set(nodes)
    erased |= {f for f, srcs in by_fact.items() if srcs <= gone_nodes}
    relinked = sorted(f for f in by_fact if f not in erased)
    nodes_all = sorted(gone_nodes | {f"f:{f}" for f in erased})
    edge_rows = ctx.db.query("SELECT id, removed_at FROM kg.edges WHERE namespace = ? AND (src IN (SELECT unnest("
                             "?::VARCHAR[])) OR dst IN (SELECT unnest(?::VARCHAR[])))",
                             [ctx.namespace, nodes_all, nodes_all])
    result = ForgetResult(dry_run=params.dry_run, entities=entities, facts=sorted(erased), edges=len(edge_rows),
                          sources_unlinked=sum(len(by_fact[f] & gone_nodes) for f in relinked))
    if params.dry_run:
        return result
    now = ctx.now()
    store = KgStore(ctx)
    change = store.begin_write(need_cache=False)
    store._cache = None  # read every timeline from SQL: this call changes them under the cache
    # the timelines that lose facts, read before anything is deleted
    keys = {(int(s), p) for s, p in ctx.db.query(
        "SELECT DISTINCT subject_id, predicate FROM kg.facts WHERE namespace = ? AND fact_id IN "
        "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, sorted(erased)])}
    timelines, claims = store.timelines(keys), store.claims(keys)
    gone_claims: list[int] = []
    for key in keys:
        sid, pred = key
        if entities and sid == entities[0]:  # the forgotten entity's own timelines go whole
            gone_claims += [c.claim_id for c in claims[key]]
            continue
        lost = [f for f in timelines[key] if f.fact_id in erased]
        dropped = {c.claim_id for f in lost for c in retract_claims(claims[key], f)}
        if entities:
            dropped |= {c.claim_id for c in claims[key] if c.object_id == entities[0]}
        gone_claims += dropped
    # retracted claims (no longer live) of an erased object: matched by subject, predicate and object
    objs = ctx.db.query("SELECT DISTINCT subject_id, predicate, object_id, object_value FROM kg.facts WHERE "
                        "namespace = ? AND fact_id IN (SELECT unnest(?::BIGINT[]))", [ctx.namespace, sorted(erased)])
    for sid, pred, oid, oval in objs:
        gone_claims += [r[0] for r in ctx.db.query(
            "SELECT claim_id FROM kg.claims WHERE namespace = ? AND subject_id = ? AND predicate = ? AND "
            "retracted_at IS NOT NULL AND (object_id = ? OR object_value = ?)", [ctx.namespace, sid, pred, oid, oval])]
    if entities:
        gone_claims += _ids(ctx, "SELECT claim_id FROM kg.claims WHERE namespace = ? AND (subject_id = ? OR "
                                 "object_id = ?)", [entities[0], entities[0]])
    ids = {"claims": sorted(set(gone_claims)), "facts": sorted(erased)}
    ctx.db.execute("DELETE FROM kg.claims WHERE namespace = ? AND claim_id IN (SELECT unnest(?::BIGINT[]))",
                   [ctx.namespace, ids["claims"]])
    ctx.db.execute("DELETE FROM kg.facts WHERE namespace = ? AND fact_id IN (SELECT unnest(?::BIGINT[]))",
                   [ctx.namespace, ids["facts"]])
    ctx.db.execute("DELETE FROM kg.fact_sources WHERE namespace = ? AND (fact_id IN (SELECT unnest(?::BIGINT[])) "
                   "OR source_id IN (SELECT unnest(?::VARCHAR[])))", [ctx.namespace, ids["facts"], nodes])
    if relinked:  # facts that keep another source: their first source becomes the earliest one left
        ctx.db.execute("UPDATE kg.facts SET source_id = (SELECT min(s.source_id) FROM kg.fact_sources s WHERE "
                       "s.namespace = kg.facts.namespace AND s.fact_id = kg.facts.fact_id) WHERE namespace = ? AND "
                       "fact_id IN (SELECT unnest(?::BIGINT[])) AND source_id IN (SELECT unnest(?::VARCHAR[]))",
                       [ctx.namespace, relinked, nodes])
        keys |= {(int(s), p) for s, p in ctx.db.query(
            "SELECT DISTINCT subject_id, predicate FROM kg.facts WHERE namespace = ? AND fact_id IN "
            "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, relinked])}
    healed: list[int] = []
    fresh_ids = itertools.count(-1, -1)
    left = store.timelines(keys)
    live = store.claims(keys)
    for (sid, pred) in sorted(keys):
        if entities and sid == entities[0]:
            change.timelines[(sid, pred)] = ()
            continue
        timeline = left[(sid, pred)]
        rebuild(timeline, live[(sid, pred)], now, fresh_ids)
        name = ctx.db.query("SELECT name FROM kg.entities WHERE id = ?", [sid])[0][0]
        persist(ctx, [((sid, name, pred), f) for f in timeline if f.new or f.interval_changed or f.evidence_changed],
                now)
        healed += [f.fact_id for f in timeline if f.interval_changed and f.fact_id > 0]
        store.set_timeline(sid, pred, timeline)
    edge_ids = sorted(int(r[0]) for r in edge_rows)
    ctx.db.execute("DELETE FROM kg.edges WHERE namespace = ? AND id IN (SELECT unnest(?::BIGINT[]))",
                   [ctx.namespace, edge_ids])
    ctx.db.execute("DELETE FROM kg.centrality WHERE namespace = ? AND node_id IN (SELECT unnest(?::VARCHAR[]))",
                   [ctx.namespace, nodes_all])
    if entities:
        eid = entities[0]
        ctx.db.execute("DELETE FROM kg.entity_keys WHERE namespace = ? AND entity_id = ?", [ctx.namespace, eid])
        ctx.db.execute("DELETE FROM kg.entities WHERE namespace = ? AND id = ?", [ctx.namespace, eid])
        change.dropped.add(eid)
    _tombstones(ctx, [f"e:{e}" for e in entities] + [f"f:{f}" for f in sorted(erased)], params.reason)
    active = [int(r[0]) for r in edge_rows if r[1] is None]
    if active:
        ctx.publish("edges_changed", EdgesChanged(removed=tuple(active)))
    result.healed = sorted(set(healed) - erased)
    ctx.erase_from_file()
    return result


def _tombstones(ctx: Context, refs: list[str], reason: str) -> None:
    if refs:
        ctx.db.execute("INSERT INTO kg.tombstones (namespace, ref, forgotten_at, reason, actor) "
                       "SELECT ?, unnest(?::VARCHAR[]), ?, ?, ?",
                       [ctx.namespace, refs, ctx.now(), reason, ctx.actor])


def _forget_namespace(params: ForgetParams, ctx: Context) -> ForgetResult:
    ns = ctx.namespace
    entities = _ids(ctx, "SELECT id FROM kg.entities WHERE namespace = ?", [])
    facts = _ids(ctx, "SELECT fact_id FROM kg.facts WHERE namespace = ?", [])
    edges = ctx.db.query("SELECT id, removed_at FROM kg.edges WHERE namespace = ?", [ns])
    result = ForgetResult(dry_run=params.dry_run, entities=entities, facts=facts, edges=len(edges),
                          sources_unlinked=0)
    if params.dry_run:
        return result
    store = KgStore(ctx)
    change = store.begin_write(need_cache=False)
    change.cleared = True
    for table in TABLES:
        ctx.db.execute(f"DELETE FROM kg.{table} WHERE namespace = ?", [ns])
    _tombstones(ctx, ["namespace"], params.reason)
    active = [int(r[0]) for r in edges if r[1] is None]
    if active:
        ctx.publish("edges_changed", EdgesChanged(removed=tuple(active)))
    ctx.erase_from_file()
    return result


class TombstonesParams(NamespacedParams):
    limit: int = Field(100, ge=1, le=10_000, description="Most tombstones returned, newest first.")


class Tombstone(BaseModel):
    ref: str = Field(description="What was forgotten: e:<entity>, f:<fact>, or 'namespace'.")
    forgotten_at: datetime
    reason: str
    actor: Optional[str]


class TombstonesResult(BaseModel):
    tombstones: list[Tombstone]


@pack.verb("tombstones", act=Act.ASSERTIVE)
def tombstones(params: TombstonesParams, ctx: Context) -> TombstonesResult:
    """What kg.forget erased in the namespace: a tombstone per entity and fact (what, when, why, who)."""
    rows = ctx.db.query("SELECT ref, forgotten_at, reason, actor FROM kg.tombstones WHERE namespace = ? "
                        f"ORDER BY forgotten_at DESC, ref LIMIT {params.limit}", [ctx.namespace])
    return TombstonesResult(tombstones=[Tombstone(ref=r, forgotten_at=t, reason=why, actor=a) for r, t, why, a in rows])

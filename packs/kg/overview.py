"""kg.stats and kg.namespaces: what a namespace's graph holds, and which namespaces hold a graph, at a glance (the
web view's namespace cards, `pal info`).

kg.namespaces is the one kg verb that looks across namespaces, as memory.namespaces is for notes: a namespace that
holds facts but no notes must still be listed. It returns names, counts and times only, never an entity or a fact.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import NamespacedParams, Params

from palimpsest_memory.packs.kg.core import pack


class StatsParams(NamespacedParams):
    pass


class StatsResult(BaseModel):
    entities: int
    facts: int = Field(description="Facts believed now (not retracted), current or in the past")
    facts_valid_now: int = Field(description="Facts believed now whose valid interval holds now")
    versions: int = Field(description="Stored fact versions (the transaction-time log)")
    edges: int = Field(description="Active edges (not unlinked)")
    last_write: datetime | None = Field(description="The latest entity, fact or edge write (null: empty)")


@pack.verb("stats", act=Act.ASSERTIVE)
def stats(params: StatsParams, ctx: Context) -> StatsResult:
    """Count a namespace's entities, facts (believed now; valid now), fact versions and active edges, with the
    time of the last write."""
    ns, now = ctx.namespace, ctx.now()
    (entities, ent_at), = ctx.db.query("SELECT count(*), max(updated_at) FROM kg.entities WHERE namespace = ?", [ns])
    (facts, valid_now, versions, fact_at), = ctx.db.query(
        "SELECT count(DISTINCT fact_id) FILTER (WHERE retracted_at IS NULL), "
        "count(DISTINCT fact_id) FILTER (WHERE retracted_at IS NULL AND (valid_from IS NULL OR valid_from <= ?) "
        "AND (valid_to IS NULL OR valid_to > ?)), count(*), greatest(max(recorded_at), max(retracted_at)) "
        "FROM kg.facts WHERE namespace = ?", [now, now, ns])
    (edges, edge_at), = ctx.db.query(
        "SELECT count(*) FILTER (WHERE removed_at IS NULL), greatest(max(created_at), max(removed_at)) "
        "FROM kg.edges WHERE namespace = ?", [ns])
    times = [t for t in (ent_at, fact_at, edge_at) if t is not None]
    return StatsResult(entities=entities, facts=facts, facts_valid_now=valid_now, versions=versions, edges=edges,
                       last_write=max(times) if times else None)


class NamespacesParams(Params):
    prefix: Optional[str] = Field(None, min_length=1, max_length=128,
                                  description="Only namespaces whose name starts with this.")


class GraphSummary(BaseModel):
    name: str
    entities: int
    facts: int = Field(description="Facts believed now (not retracted)")
    edges: int = Field(description="Active edges (not unlinked)")
    last_write: Optional[datetime] = Field(description="The latest entity, fact or edge write")


class NamespacesResult(BaseModel):
    namespaces: list[GraphSummary] = Field(description="By name")


@pack.verb("namespaces", act=Act.ASSERTIVE)
def namespaces(params: NamespacesParams, ctx: Context) -> NamespacesResult:
    """List the namespaces that hold a graph (entities, facts or edges), with their counts and last write."""
    cond, args = ("WHERE starts_with(namespace, ?) ", [params.prefix]) if params.prefix else ("", [])
    per: dict[str, dict] = {}
    for sql, count in (
        (f"SELECT namespace, count(*), max(updated_at) FROM kg.entities {cond}GROUP BY namespace", "entities"),
        ("SELECT namespace, count(DISTINCT fact_id) FILTER (WHERE retracted_at IS NULL), "
         f"greatest(max(recorded_at), max(retracted_at)) FROM kg.facts {cond}GROUP BY namespace", "facts"),
        ("SELECT namespace, count(*) FILTER (WHERE removed_at IS NULL), greatest(max(created_at), max(removed_at)) "
         f"FROM kg.edges {cond}GROUP BY namespace", "edges"),
    ):
        for ns, n, at in ctx.db.query(sql, args):
            row = per.setdefault(ns, {"name": ns, "entities": 0, "facts": 0, "edges": 0, "last_write": at})
            row[count] = n
            if at is not None and (row["last_write"] is None or at > row["last_write"]):
                row["last_write"] = at
    return NamespacesResult(namespaces=[GraphSummary(**per[ns]) for ns in sorted(per)])

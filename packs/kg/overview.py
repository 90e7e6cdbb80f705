"""kg.stats: what a namespace's graph holds, at a glance (the web view's namespace cards, `pal serve`)."""
from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import NamespacedParams

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

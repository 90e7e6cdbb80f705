"""memory.namespaces and memory.stats: which namespaces hold notes, how many, when each was last written, and
which embedder recall uses (the web view's namespace cards, ``pal info``).

The one memory verb that looks across namespaces, on purpose: a person opening the store (the web view's
namespace cards, ADR 0019) must be able to see which namespaces exist. It returns names and sizes only, never a
note, a key or an id, so no namespace's content leaks through it.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from pydantic import BaseModel, Field

from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import NamespacedParams, Params


class NamespacesParams(Params):
    prefix: Optional[str] = Field(None, min_length=1, max_length=128,
                                  description="Only namespaces whose name starts with this.")


class NamespaceSummary(BaseModel):
    name: str
    notes: int = Field(description="Notes recall can find (not archived, not superseded)")
    archived: int
    superseded: int
    last_write: datetime = Field(description="The latest note stored, updated, superseded or archived")


class NamespacesResult(BaseModel):
    namespaces: list[NamespaceSummary] = Field(description="By name")


@pack.verb("namespaces", act=Act.ASSERTIVE)
def namespaces(params: NamespacesParams, ctx: Context) -> NamespacesResult:
    """List the namespaces that hold notes, with their note counts (live, archived, superseded) and last write."""
    where, args = ("WHERE starts_with(namespace, ?) ", [params.prefix]) if params.prefix else ("", [])
    return NamespacesResult(namespaces=_summaries(ctx, where, args))


def _summaries(ctx: Context, where: str, args: list) -> list[NamespaceSummary]:
    rows = ctx.db.query(
        "SELECT namespace, count(*) FILTER (WHERE archived_at IS NULL AND superseded_by IS NULL), "
        "count(*) FILTER (WHERE archived_at IS NOT NULL), "
        "count(*) FILTER (WHERE superseded_by IS NOT NULL AND archived_at IS NULL), "
        "greatest(max(created_at), max(superseded_at), max(archived_at)) "
        f"FROM memory.notes {where}GROUP BY namespace ORDER BY namespace", args)
    return [NamespaceSummary(name=r[0], notes=r[1], archived=r[2], superseded=r[3], last_write=r[4]) for r in rows]


class StatsParams(NamespacedParams):
    pass


class MemoryStats(BaseModel):
    notes: int = Field(description="Notes recall can find (not archived, not superseded).")
    archived: int = Field(description="Archived notes (kept, left out of recall).")
    superseded: int = Field(description="Notes replaced by a newer version (kept as history).")
    last_write: Optional[datetime] = Field(description="The latest note stored, updated or archived (null: empty).")
    embedder: str = Field(description="The embedder recall and remember use.")
    cjk_embedder: Optional[str] = Field(description="The embedder for mostly-CJK text, if one is configured.")


@pack.verb("stats", act=Act.ASSERTIVE)
def stats(params: StatsParams, ctx: Context) -> MemoryStats:
    """Count the namespace's notes (live, archived, superseded) and name the embedder in use; like every verb but
    memory.namespaces, it sees only its own namespace."""
    s: MemorySettings = ctx.settings
    found = _summaries(ctx, "WHERE namespace = ? ", [ctx.namespace])
    row = found[0] if found else None
    return MemoryStats(notes=row.notes if row else 0, archived=row.archived if row else 0,
                       superseded=row.superseded if row else 0, last_write=row.last_write if row else None,
                       embedder=s.embedder, cjk_embedder=s.cjk_embedder or None)

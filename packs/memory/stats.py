"""``memory.stats``: how many notes the namespace holds, and which embedder recall uses (``pal info``)."""
from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, Field

from packs.memory.core import pack
from packs.memory.settings import MemorySettings
from runtime import Act, Context
from runtime.params import NamespacedParams


class StatsParams(NamespacedParams):
    pass


class NamespaceNotes(BaseModel):
    namespace: str
    notes: int = Field(description="Notes that are not archived.")
    archived: int = Field(description="Archived notes (kept, left out of recall).")


class MemoryStats(BaseModel):
    embedder: str = Field(description="The embedder recall and remember use.")
    cjk_embedder: Optional[str] = Field(description="The embedder for mostly-CJK text, if one is configured.")
    namespaces: list[NamespaceNotes] = Field(description="The namespace's counts (empty: it holds no note).")


@pack.verb("stats", act=Act.ASSERTIVE)
def stats(params: StatsParams, ctx: Context) -> MemoryStats:
    """Count the namespace's notes and name the embedder in use (like every verb, it sees no other namespace)."""
    s: MemorySettings = ctx.settings
    rows = ctx.db.query("SELECT namespace, count(*) FILTER (WHERE archived_at IS NULL), "
                        "count(*) FILTER (WHERE archived_at IS NOT NULL) FROM memory.notes WHERE namespace = ? "
                        "GROUP BY 1 ORDER BY 1", [ctx.namespace])
    return MemoryStats(embedder=s.embedder, cjk_embedder=s.cjk_embedder or None,
                       namespaces=[NamespaceNotes(namespace=n, notes=int(a), archived=int(b)) for n, a, b in rows])

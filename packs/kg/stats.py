"""``kg.stats``: how many entities and facts the namespace holds (``pal info``)."""
from __future__ import annotations

from pydantic import BaseModel, Field

from packs.kg.core import pack
from runtime import Act, Context
from runtime.params import NamespacedParams


class StatsParams(NamespacedParams):
    pass


class NamespaceGraph(BaseModel):
    namespace: str
    entities: int
    facts: int = Field(description="Facts ever asserted (current, superseded and retracted).")


class GraphStats(BaseModel):
    namespaces: list[NamespaceGraph] = Field(description="The namespace's counts (empty: it holds nothing).")


@pack.verb("stats", act=Act.ASSERTIVE)
def stats(params: StatsParams, ctx: Context) -> GraphStats:
    """Count the entities and facts of the namespace (like every verb, it sees no other namespace)."""
    rows = ctx.db.query(
        "SELECT namespace, sum(e), sum(f) FROM (SELECT namespace, count(*) AS e, 0 AS f FROM kg.entities GROUP BY 1 "
        "UNION ALL SELECT namespace, 0, count(DISTINCT fact_id) FROM kg.facts GROUP BY 1) "
        "WHERE namespace = ? GROUP BY 1 ORDER BY 1", [ctx.namespace])
    return GraphStats(namespaces=[NamespaceGraph(namespace=n, entities=int(e), facts=int(f)) for n, e, f in rows])

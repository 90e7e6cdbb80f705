"""``kg.stats``: how many entities and facts each namespace holds (``pal info``)."""
from __future__ import annotations

from pydantic import BaseModel, Field

from packs.kg.core import pack
from runtime import Act, Context
from runtime.params import NamespacedParams


class StatsParams(NamespacedParams):
    all_namespaces: bool = Field(True, description="Count every namespace (false: only the call's namespace).")


class NamespaceGraph(BaseModel):
    namespace: str
    entities: int
    facts: int = Field(description="Facts ever asserted (current, superseded and retracted).")


class GraphStats(BaseModel):
    namespaces: list[NamespaceGraph] = Field(description="Every namespace with entities or facts, by name.")


@pack.verb("stats", act=Act.ASSERTIVE)
def stats(params: StatsParams, ctx: Context) -> GraphStats:
    """Count the entities and facts of every namespace."""
    rows = ctx.db.query(
        "SELECT namespace, sum(e), sum(f) FROM (SELECT namespace, count(*) AS e, 0 AS f FROM kg.entities GROUP BY 1 "
        "UNION ALL SELECT namespace, 0, count(DISTINCT fact_id) FROM kg.facts GROUP BY 1) "
        "WHERE ? OR namespace = ? GROUP BY 1 ORDER BY 1", [params.all_namespaces, ctx.namespace])
    return GraphStats(namespaces=[NamespaceGraph(namespace=n, entities=int(e), facts=int(f)) for n, e, f in rows])

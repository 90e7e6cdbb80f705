"""SQL reads shared by the kg verbs: fact versions (any transaction time), entity look-ups, the time filters.

These always see the call's transaction, uncommitted writes included; :class:`palimpsest_memory.packs.kg.store.KgStore`
decides when a read may come from the fact cache instead.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from palimpsest_memory.runtime import Context, errors

from palimpsest_memory.packs.kg.models import EntityOut, FactOut, name_key
from palimpsest_memory.packs.kg.fact_rows import ROW_COLUMNS, as_fact_row

# subject, the retraction time of a retracted version, then the FactRow columns
FACT_SELECT = (
    "SELECT f.subject_id, f.subject_name, CASE WHEN f.end_reason = 'retracted' THEN f.retracted_at END, "
    + ", ".join(f"f.{c}" for c in ROW_COLUMNS.split(", ")) + " FROM kg.facts f")


def tx_filter(known_at: datetime | None, params: list[Any], alias: str = "f") -> str:
    """Transaction-time filter: current versions, or the versions believed at ``known_at``."""
    if known_at is None:
        return f"{alias}.retracted_at IS NULL"
    params.extend([known_at, known_at])
    return f"{alias}.recorded_at <= ? AND ({alias}.retracted_at IS NULL OR {alias}.retracted_at > ?)"


def valid_filter(as_of: datetime, params: list[Any], alias: str = "f") -> str:
    """Valid-time filter: facts true at ``as_of`` (half-open [valid_from, valid_to), NULL start = -inf)."""
    params.extend([as_of, as_of])
    return (f"({alias}.valid_from IS NULL OR {alias}.valid_from <= ?) "
            f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)")


def read_facts(ctx: Context, where: str, params: list[Any], order: str = "f.valid_from NULLS FIRST, f.fact_id",
               limit: int | None = None) -> list[FactOut]:
    sql = f"{FACT_SELECT} WHERE f.namespace = ? AND {where} ORDER BY {order}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [as_fact_row(r[3:]).out(r[0], r[1], r[2]) for r in ctx.db.query(sql, [ctx.namespace, *params])]


def facts_by_id(ctx: Context, fact_ids: Iterable[int]) -> list[FactOut]:
    """The latest version of each fact (retracted or not)."""
    ids = sorted(set(fact_ids))
    if not ids:
        return []
    return read_facts(ctx, "f.version_id IN (SELECT max(version_id) FROM kg.facts WHERE namespace = ? "
                           "AND fact_id IN (SELECT unnest(?::BIGINT[])) GROUP BY fact_id)",
                      [ctx.namespace, ids], order="f.fact_id")


# -- entities ----------------------------------------------------------------------------------------------------
def lookup_keys(ctx: Context, keys: Iterable[str]) -> dict[str, tuple[int, str, str]]:
    """key → (entity id, canonical name, kind) for the known names/aliases among ``keys``."""
    keys = sorted(set(keys))
    if not keys:
        return {}
    if len(keys) == 1:  # the common single lookup: an index point query
        rows = ctx.db.query("SELECT k.key, e.id, e.name, e.kind FROM kg.entity_keys k, kg.entities e WHERE "
                            "k.namespace = ? AND k.key = ? AND e.id = k.entity_id", [ctx.namespace, keys[0]])
        return {k: (i, n, kd) for k, i, n, kd in rows}
    rows = ctx.db.query(
        "SELECT k.key, e.id, e.name, e.kind FROM kg.entity_keys k JOIN kg.entities e ON e.id = k.entity_id "
        "WHERE k.namespace = ? AND k.key IN (SELECT unnest(?::VARCHAR[]))", [ctx.namespace, keys])
    return {k: (i, n, kd) for k, i, n, kd in rows}


def entity_by_ref(ctx: Context, name: str | None = None, entity_id: int | None = None,
                  loc: str = "name") -> EntityOut:
    """An entity by id or by name/alias in this namespace, or NotFound."""
    if entity_id is not None:
        rows = ctx.db.query("SELECT id, name, kind FROM kg.entities WHERE namespace = ? AND id = ?",
                            [ctx.namespace, entity_id])
        what = f"entity {entity_id}"
    else:
        if name is None:
            raise errors.InvalidParams("give a name or an id", details={"errors": [{"loc": [loc], "msg": "missing"}]})
        rows = ctx.db.query("SELECT e.id, e.name, e.kind FROM kg.entity_keys k JOIN kg.entities e "
                            "ON e.id = k.entity_id WHERE k.namespace = ? AND k.key = ?",
                            [ctx.namespace, name_key(name)])
        what = f"entity {name!r}"
    if not rows:
        raise errors.NotFound(f"{what} does not exist in namespace {ctx.namespace!r}",
                              details={"namespace": ctx.namespace})
    eid, ename, kind = rows[0]
    aliases = [r[0] for r in ctx.db.query(
        "SELECT text FROM kg.entity_keys WHERE namespace = ? AND entity_id = ? AND NOT is_name ORDER BY created_at, "
        "text", [ctx.namespace, eid])]
    return EntityOut(id=eid, node_id=f"e:{eid}", name=ename, kind=kind, aliases=aliases)


def check_length(value: str, limit: int, loc: list[Any]) -> None:
    if len(value) > limit:
        raise errors.LimitExceeded(f"{'.'.join(map(str, loc))} is longer than {limit} characters",
                                   details={"errors": [{"loc": loc, "msg": f"at most {limit} characters"}]})

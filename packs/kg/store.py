"""Storage helpers shared by the kg verbs: entity resolution/creation in bulk, fact row reading, filters."""
from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Iterable

from runtime import Context, errors

from packs.kg.cache import Writer
from packs.kg.models import EntityOut, FactOut, name_key

FACT_SELECT = """
SELECT f.fact_id, f.version_id, f.subject_id, f.subject_name, f.predicate, f.object_id,
       f.object_text AS object, f.object_value IS NOT NULL AS literal, f.valid_from, f.valid_to,
       f.first_recorded_at, f.recorded_at, f.retracted_at, f.end_reason, f.confidence, f.combined_confidence,
       f.evidence_count, f.source_id, f.superseded_by, f.coexisting
FROM kg.facts f
"""


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


def fact_out(row: dict[str, Any]) -> FactOut:
    return FactOut(
        fact_id=row["fact_id"], version_id=row["version_id"],
        subject={"id": row["subject_id"], "name": row["subject_name"]}, predicate=row["predicate"],
        object=row["object"], object_id=row["object_id"], literal=row["literal"], valid_from=row["valid_from"],
        valid_to=row["valid_to"], recorded_at=row["first_recorded_at"], version_recorded_at=row["recorded_at"],
        retracted_at=row["retracted_at"] if row["end_reason"] == "retracted" else None,
        confidence=row["confidence"], combined_confidence=row["combined_confidence"],
        evidence_count=row["evidence_count"], source_id=row["source_id"], superseded_by=row["superseded_by"],
        coexisting=row["coexisting"],
    )


def read_facts(ctx: Context, where: str, params: list[Any], order: str = "f.valid_from NULLS FIRST, f.fact_id",
               limit: int | None = None) -> list[FactOut]:
    sql = f"{FACT_SELECT} WHERE f.namespace = ? AND {where} ORDER BY {order}"
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    return [fact_out(r) for r in ctx.db.query_dicts(sql, [ctx.namespace, *params])]


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


def bump_revision(ctx: Context) -> None:
    """Entities or aliases of this namespace changed: new detector cache token, drop the cached detector."""
    ctx.db.execute("INSERT INTO kg.entity_revisions VALUES (?, ?) ON CONFLICT (namespace) DO UPDATE "
                   "SET token = excluded.token", [ctx.namespace, uuid.uuid4().hex])
    cache = getattr(ctx.state, "detectors", None)
    if cache is not None:
        cache.pop(ctx.namespace, None)
    ns = ctx.namespace
    ctx.on_commit(lambda: getattr(ctx.state, "detectors", {}).pop(ns, None))


def create_entities(ctx: Context, items: list[tuple[str, str]], w: Writer) -> list[int]:
    """Insert new entities ``(name, kind)`` (names not known yet, distinct keys) and their name keys."""
    if not items:
        return []
    w.touch_keys()
    now = ctx.now()
    ids = [r[0] for r in ctx.db.query("SELECT nextval('kg.entity_seq') FROM range(?)", [len(items)])]
    names = [n for n, _ in items]
    ctx.db.execute(
        "INSERT INTO kg.entities SELECT unnest(?::BIGINT[]), ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), ?, ?",
        [ids, ctx.namespace, names, [k for _, k in items], now, now])
    ctx.db.execute(
        "INSERT INTO kg.entity_keys SELECT ?, unnest(?::VARCHAR[]), unnest(?::BIGINT[]), unnest(?::VARCHAR[]), "
        "true, ?", [ctx.namespace, [name_key(n) for n in names], ids, names, now])
    bump_revision(ctx)
    w.add_keys({name_key(n): i for n, i in zip(names, ids)}, dict(zip(ids, names)))
    return ids


def ensure_entities(ctx: Context, wanted: list[tuple[str, str]], w: Writer) -> dict[str, tuple[int, str]]:
    """key → (entity id, canonical name) for each ``(name, kind)``, creating unknown ones (first kind wins)."""
    by_key: dict[str, tuple[str, str]] = {}
    for name, kind in wanted:
        by_key.setdefault(name_key(name), (name, kind))
    c = w.cache
    if c is not None:
        out = {k: (c.keys[k], c.names[c.keys[k]]) for k in by_key if k in c.keys}
    else:
        out = {k: (v[0], v[1]) for k, v in lookup_keys(ctx, by_key).items()}
    missing = [k for k in by_key if k not in out]
    for key, eid in zip(missing, create_entities(ctx, [by_key[k] for k in missing], w)):
        out[key] = (eid, by_key[key][0])
    return out


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

"""Entity verbs: kg.upsert_entity, kg.entity, kg.entities, kg.detect_entities."""
from __future__ import annotations

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.detect import Detector
from palimpsest_memory.packs.kg.models import EntityOut, FactOut, Kind, Name, name_key
from palimpsest_memory.packs.kg.sql_reads import (check_length, entity_by_ref, lookup_keys, read_facts, tx_filter,
                                              valid_filter)
from palimpsest_memory.packs.kg.store import KgStore


class UpsertEntityParams(NamespacedParams):
    name: Name = Field(description="Canonical name, or a known alias of the entity to update.")
    kind: Kind | None = Field(None, description="Kind (person, org, project, place, concept, …); lower snake_case.")
    aliases: list[Name] = Field(default_factory=list, description="Other names to resolve to this entity.")


class UpsertEntityResult(BaseModel):
    entity: EntityOut
    created: bool


class EntityParams(NamespacedParams):
    name: Name | None = Field(None, description="Name or alias (case-insensitive).")
    id: int | None = Field(None, description="Entity id (instead of a name).")
    limit: int = Field(100, ge=1, description="Most facts listed each way.")


class EntityResult(BaseModel):
    entity: EntityOut
    facts: list[FactOut] = Field(description="Current facts with the entity as subject")
    incoming: list[FactOut] = Field(description="Current facts with the entity as object")


class EntitiesParams(NamespacedParams):
    kind: Kind | None = Field(None, description="Only entities of this kind.")
    before_id: int | None = Field(None, ge=1, description="Cursor: entities with a smaller id (next_before_id).")
    limit: int = Field(100, ge=1, description="Most entities returned (capped by max_query_limit).")


class EntitiesResult(BaseModel):
    entities: list[EntityOut]
    next_before_id: int | None = Field(None, description="Pass as before_id for the next page; null on the last.")


class DetectParams(NamespacedParams):
    text: str = Field(description="Text to scan for known entity names and aliases.")


class Match(BaseModel):
    entity_id: int
    node_id: str
    name: str
    kind: str
    matched: str = Field(description="The text as it appears")
    start: int
    end: int


class DetectResult(BaseModel):
    matches: list[Match]
    entity_ids: list[int] = Field(description="Distinct entities, in order of first appearance")


@pack.verb("upsert_entity", act=Act.COMMISSIVE)
def upsert_entity(params: UpsertEntityParams, ctx: Context) -> UpsertEntityResult:
    """Create an entity or update one found by name/alias: set its kind, add aliases."""
    s = ctx.settings
    check_length(params.name, s.max_name_length, ["name"])
    for i, a in enumerate(params.aliases):
        check_length(a, s.max_name_length, ["aliases", i])
    store = KgStore(ctx)
    store.begin_write(need_cache=False)
    known = lookup_keys(ctx, [name_key(params.name)])
    created = not known
    if created:
        kind = params.kind or s.default_entity_kind
        eid = store.create_entities([(params.name, kind)])[0]
        name = params.name
    else:
        eid, name, kind = known[name_key(params.name)]
        if params.kind is not None and params.kind != kind:
            kind = params.kind
            store.set_kind(eid, kind)
    taken = lookup_keys(ctx, [name_key(a) for a in params.aliases])
    fresh: dict[str, str] = {}
    for i, alias in enumerate(params.aliases):
        key = name_key(alias)
        if key in taken and taken[key][0] != eid:
            raise errors.Conflict(f"alias {alias!r} already names entity {taken[key][1]!r} (id {taken[key][0]})",
                                  details={"errors": [{"loc": ["aliases", i], "msg": "names another entity"}]})
        if key not in taken:
            fresh.setdefault(key, alias)
    if fresh:
        store.add_aliases((eid, name, kind), fresh)
    return UpsertEntityResult(entity=entity_by_ref(ctx, entity_id=eid), created=created)


@pack.verb("entity", act=Act.ASSERTIVE)
def entity(params: EntityParams, ctx: Context) -> EntityResult:
    """Get an entity by name, alias or id, with its aliases and its current facts (both directions)."""
    if (params.name is None) == (params.id is None):
        raise errors.InvalidParams("give exactly one of name or id",
                                   details={"errors": [{"loc": ["name"], "msg": "give exactly one of name or id"}]})
    ent = entity_by_ref(ctx, params.name, params.id)
    limit = min(params.limit, ctx.settings.max_query_limit)
    out = {}
    for side in ("subject_id", "object_id"):
        args: list = [ent.id]
        where = f"f.{side} = ? AND {tx_filter(None, args)} AND {valid_filter(ctx.now(), args)}"
        out[side] = read_facts(ctx, where, args, limit=limit)
    return EntityResult(entity=ent, facts=out["subject_id"], incoming=out["object_id"])


@pack.verb("entities", act=Act.ASSERTIVE)
def entities(params: EntitiesParams, ctx: Context) -> EntitiesResult:
    """List entities of the namespace (optionally of one kind), newest first, page by page (before_id)."""
    args: list = [ctx.namespace]
    where = "namespace = ?"
    if params.kind:
        where += " AND kind = ?"
        args.append(params.kind)
    if params.before_id is not None:  # a keyset cursor: entities created while paging never shift a page
        where += " AND id < ?"
        args.append(params.before_id)
    limit = min(params.limit, ctx.settings.max_query_limit)
    rows = ctx.db.query(f"SELECT id, name, kind FROM kg.entities WHERE {where} ORDER BY id DESC LIMIT {limit + 1}",
                        args)
    more = len(rows) > limit
    rows = rows[:limit]
    alias_rows = ctx.db.query("SELECT entity_id, text FROM kg.entity_keys WHERE namespace = ? AND NOT is_name AND "
                              "entity_id IN (SELECT unnest(?::BIGINT[])) ORDER BY created_at, text",
                              [ctx.namespace, [r[0] for r in rows]])
    aliases: dict[int, list[str]] = {}
    for eid, text in alias_rows:
        aliases.setdefault(eid, []).append(text)
    return EntitiesResult(entities=[EntityOut(id=i, node_id=f"e:{i}", name=n, kind=k, aliases=aliases.get(i, []))
                                    for i, n, k in rows], next_before_id=rows[-1][0] if more else None)


def _detect(det: Detector, text: str) -> DetectResult:
    matches, seen = [], []
    for h in det.find(text):
        eid, name, kind = det.keys[h.key]
        matches.append(Match(entity_id=eid, node_id=f"e:{eid}", name=name, kind=kind,
                             matched=text[h.start:h.end], start=h.start, end=h.end))
        if eid not in seen:
            seen.append(eid)
    return DetectResult(matches=matches, entity_ids=seen)


def _check_length(ctx: Context, text: str, loc: list) -> None:
    limit = ctx.settings.detect_max_text_length
    if len(text) > limit:
        raise errors.LimitExceeded(f"text is longer than {limit} characters",
                                   details={"errors": [{"loc": loc, "msg": f"at most {limit} characters"}]})


@pack.verb("detect_entities", act=Act.ASSERTIVE)
def detect_entities(params: DetectParams, ctx: Context) -> DetectResult:
    """Find known entity names and aliases in a text (word boundaries, case-insensitive; CJK by substring)."""
    _check_length(ctx, params.text, ["text"])
    return _detect(KgStore(ctx).detector(), params.text)


class DetectManyParams(NamespacedParams):
    texts: list[str] = Field(min_length=1, description="Texts to scan, e.g. a batch of notes being stored.")


class DetectManyResult(BaseModel):
    results: list[DetectResult] = Field(description="One result per text, in order")


@pack.verb("detect_entities_many", act=Act.ASSERTIVE)
def detect_entities_many(params: DetectManyParams, ctx: Context) -> DetectManyResult:
    """detect_entities for many texts at once (one detector look-up for the batch: bulk imports use it)."""
    if len(params.texts) > ctx.settings.max_batch:
        raise errors.LimitExceeded(f"at most {ctx.settings.max_batch} texts per call",
                                   details={"errors": [{"loc": ["texts"], "msg": "batch too large"}]})
    for i, text in enumerate(params.texts):
        _check_length(ctx, text, ["texts", str(i)])
    det = KgStore(ctx).detector()
    return DetectManyResult(results=[_detect(det, t) for t in params.texts])

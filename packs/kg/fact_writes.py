"""Write verbs over facts: kg.assert_fact, kg.assert_facts, kg.retract_fact, kg.define_predicate, kg.predicates."""
from __future__ import annotations

import itertools
import re
from operator import attrgetter
from datetime import datetime
from typing import Any

from palimpsest_memory.runtime import Act, Context, errors

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.edges import first_missing
from palimpsest_memory.packs.kg.models import (
    AssertFactParams, AssertFactResult, AssertFactsParams, AssertFactsResult, AssertOutcome, DefinePredicateParams,
    FactInput, PredicateOut, PredicatesParams, PredicatesResult, RetractFactParams, RetractFactResult, name_key,
)
from palimpsest_memory.packs.kg.sql_reads import check_length, facts_by_id
from palimpsest_memory.packs.kg.store import KgStore
from palimpsest_memory.packs.kg.timeline import Assertion, Claim, Fact, Outcome, apply, rebuild, retract_claims

Changed = list[tuple[tuple[int, str, str], Fact]]  # ((subject id, subject name, predicate), changed fact)

# The columns of a new version taken from its Fact, in insert order (subject, namespace and time come apart).
VERSION_FIELDS = (("fact_id", "BIGINT"), ("object_id", "BIGINT"), ("object_value", "VARCHAR"),
                  ("valid_from", "TIMESTAMP"), ("valid_to", "TIMESTAMP"), ("valid_to_source", "VARCHAR"),
                  ("superseded_by", "BIGINT"), ("coexisting", "BOOLEAN"), ("confidence", "DOUBLE"),
                  ("combined_confidence", "DOUBLE"), ("evidence_count", "INTEGER"), ("source_id", "VARCHAR"),
                  ("first_recorded_at", "TIMESTAMP"), ("object_text", "VARCHAR"))


def persist(ctx: Context, changed: Changed, now: datetime) -> dict[int, int]:
    """Write changed facts: new versions for new facts / changed intervals, in-place evidence updates.

    Returns the mapping of provisional (negative) fact ids to real ones.
    """
    real = assign_fact_ids(ctx, [f for _, f in changed])
    versioned = [(k, f) for k, f in changed if f.new or f.interval_changed]
    close_versions(ctx, [f.version_id for _, f in versioned if not f.new], now)
    insert_versions(ctx, versioned, now)
    update_evidence(ctx, [f for _, f in changed if not f.new and not f.interval_changed and f.evidence_changed])
    return real


def assign_fact_ids(ctx: Context, facts: list[Fact]) -> dict[int, int]:
    """Real ids for the facts created in this call (provisional negative ids), in the facts and their links."""
    new = [f for f in facts if f.new]
    if not new:
        return {}
    ids = [r[0] for r in ctx.db.query("SELECT nextval('kg.fact_seq') FROM range(?)", [len(new)])]
    real = {f.fact_id: i for f, i in zip(new, ids)}
    for f in facts:
        f.fact_id = real.get(f.fact_id, f.fact_id)
        if f.superseded_by is not None:
            f.superseded_by = real.get(f.superseded_by, f.superseded_by)
    return real


def close_versions(ctx: Context, version_ids: list[int], now: datetime) -> None:
    """End the transaction time of versions a new version replaces (ADR 0006: corrected, never rewritten)."""
    if version_ids:
        ctx.db.execute("UPDATE kg.facts SET retracted_at = ?, end_reason = 'corrected' WHERE namespace = ? AND "
                       "version_id IN (SELECT unnest(?::BIGINT[]))", [now, ctx.namespace, version_ids])


def insert_versions(ctx: Context, versioned: Changed, now: datetime) -> None:
    """One INSERT of a new version per fact (set-wise: one list per column); the facts learn their version."""
    if not versioned:
        return
    vids = [r[0] for r in ctx.db.query("SELECT nextval('kg.version_seq') FROM range(?)", [len(versioned)])]
    cols = [vids, [sid for (sid, _, _), _ in versioned], [pred for (_, _, pred), _ in versioned],
            [sname for (_, sname, _), _ in versioned]]
    fields = attrgetter(*(name for name, _ in VERSION_FIELDS))
    cols += map(list, zip(*(fields(f) for _, f in versioned)))
    types = ("BIGINT", "BIGINT", "VARCHAR", "VARCHAR", *(t for _, t in VERSION_FIELDS))
    names = ", ".join(["version_id", "subject_id", "predicate", "subject_name", *(n for n, _ in VERSION_FIELDS)])
    sel = ", ".join(f"unnest(?::{t}[])" for t in types)
    ctx.db.execute(f"INSERT INTO kg.facts ({names}, namespace, recorded_at) SELECT *, ?, ? FROM (SELECT {sel})",
                   [ctx.namespace, now, *cols])
    for vid, (_, f) in zip(vids, versioned):
        f.version_id, f.recorded_at = vid, now


def update_evidence(ctx: Context, facts: list[Fact]) -> None:
    """Evidence counters change in place (ADR 0006: confidence is not versioned)."""
    if facts:
        ctx.db.execute(
            "UPDATE kg.facts f SET confidence = u.c, combined_confidence = u.cc, evidence_count = u.n, "
            "source_id = u.src FROM (SELECT unnest(?::BIGINT[]) AS vid, unnest(?::DOUBLE[]) AS c, "
            "unnest(?::DOUBLE[]) AS cc, unnest(?::INTEGER[]) AS n, unnest(?::VARCHAR[]) AS src) u "
            "WHERE f.namespace = ? AND f.version_id = u.vid",
            [[f.version_id for f in facts], [f.confidence for f in facts], [f.combined_confidence for f in facts],
             [f.evidence_count for f in facts], [f.source_id for f in facts], ctx.namespace])


def assert_many(ctx: Context, items: list[FactInput], loc: list[Any]) -> list[Outcome]:
    """The whole assertion pipeline, set-wise: entities, cardinalities, timelines, then one write per table."""
    s = ctx.settings
    for i, it in enumerate(items):
        here = [*loc, i] if loc else []
        check_length(it.subject, s.max_name_length, [*here, "subject"])
        check_length(it.object, s.max_literal_length if it.literal else s.max_name_length, [*here, "object"])
    check_sources(ctx, items, loc)
    now = ctx.now()
    store = KgStore(ctx)
    store.begin_write()
    wanted = [(it.subject, it.subject_kind or s.default_entity_kind) for it in items]
    wanted += [(it.object, it.object_kind or s.default_entity_kind) for it in items if not it.literal]
    ids = store.entity_ids(wanted)
    card = store.cardinalities({it.predicate for it in items})
    keyed = [(ids[name_key(it.subject)], it) for it in items]
    keys = {(sid, it.predicate) for (sid, _), it in keyed}
    timelines = store.timelines(keys)
    claims = store.claims(keys)
    names = {sid: sname for sid, sname in ids.values()}
    outcomes: list[Outcome] = []
    provisional = itertools.count(-1, -1)
    claim_ids = iter(store.claim_ids(len(items)))
    new_claims: list[tuple[int, str, Claim]] = []
    for (sid, sname), it in keyed:
        key = (sid, it.predicate)
        out, claim = apply(timelines[key], claims[key], assertion_of(it, ids, card, s), now, provisional, claim_ids)
        outcomes.append(out)
        if claim is not None:
            new_claims.append((sid, it.predicate, claim))
    touched = [((sid, names[sid], pred), f) for (sid, pred), facts in timelines.items() for f in facts
               if f.new or f.interval_changed or f.evidence_changed]
    persist(ctx, touched, now)
    store.insert_claims(new_claims, now)
    sources = [(o.fact.fact_id, it.source_id, it.confidence if it.confidence is not None else s.default_confidence)
               for o, it in zip(outcomes, items) if it.source_id is not None]
    if sources:
        fids, srcs, confs = zip(*sources)
        ctx.db.execute("INSERT INTO kg.fact_sources (namespace, fact_id, source_id, confidence, recorded_at) "
                       "SELECT ?, unnest(?::BIGINT[]), unnest(?::VARCHAR[]), "
                       "unnest(?::DOUBLE[]), ?", [ctx.namespace, list(fids), list(srcs), list(confs), now])
    for (sid, pred), facts in timelines.items():
        store.set_timeline(sid, pred, facts)
    return outcomes


NODE_SOURCE = re.compile(r"[a-z]:\d{1,18}")


def check_sources(ctx: Context, items: list[FactInput], loc: list[Any]) -> None:
    """A source that names a node (``m:12``: a note) must exist in this namespace, asked of its owner as a link's
    nodes are (``edges.first_missing``): a fact citing a missing, forgotten or other namespace's note was accepted,
    and outlived the forget of the note it names (issue 46). Other sources (free text) are kept as given."""
    cited = list(dict.fromkeys(it.source_id for it in items if it.source_id and NODE_SOURCE.fullmatch(it.source_id)))
    bad = first_missing(ctx, cited) if cited else None
    if bad is not None:
        i = next(i for i, it in enumerate(items) if it.source_id == bad)
        raise errors.NotFound(f"source {bad} does not exist in namespace {ctx.namespace!r}: a fact's source_id "
                              "names a note of this namespace ('m:<id>'), or is free text",
                              details={"errors": [{"loc": [*loc, i, "source_id"] if loc else ["source_id"],
                                                   "msg": "unknown source"}]})


def assertion_of(it: FactInput, ids: dict[str, tuple[int, str]], card: dict[str, str], s: Any) -> Assertion:
    obj_id, obj_text = (None, it.object) if it.literal else ids[name_key(it.object)]
    return Assertion(object_key=f"v:{it.object}" if it.literal else f"e:{obj_id}", object_id=obj_id,
                     object_value=it.object if it.literal else None, object_text=obj_text,
                     valid_from=it.valid_from, valid_to=it.valid_to,
                     confidence=s.default_confidence if it.confidence is None else it.confidence,
                     source_id=it.source_id, coexisting=it.allow_coexisting or card[it.predicate] == "many")


@pack.verb("assert_fact", act=Act.COMMISSIVE)
def assert_fact(params: AssertFactParams, ctx: Context) -> AssertFactResult:
    """Assert one fact; a new object for a 'one' predicate supersedes the fact it overlaps, in valid time.

    Late-arriving facts are inserted into the timeline (the fact before them ends where they start, they end
    where the next one starts). Re-asserting the object that already holds adds evidence instead of a version.
    """
    item = FactInput.model_validate(params.model_dump(exclude={"namespace"}))
    out = assert_many(ctx, [item], [])[0]
    got = {f.fact_id: f for f in facts_by_id(ctx, [out.fact.fact_id, *(f.fact_id for f in out.superseded)])}
    return AssertFactResult(fact=got[out.fact.fact_id], action=out.action,
                            superseded=[got[f.fact_id] for f in out.superseded])


@pack.verb("assert_facts", act=Act.COMMISSIVE, bulk=True)
def assert_facts(params: AssertFactsParams, ctx: Context) -> AssertFactsResult:
    """Assert many facts in one transaction, in order, with the same supersession as kg.assert_fact.

    Processed set-wise (one query per table, not per fact); any bad fact rejects the whole batch.
    """
    if len(params.facts) > ctx.settings.max_batch:
        raise errors.LimitExceeded(
            f"at most {ctx.settings.max_batch} facts per call, got {len(params.facts)}",
            details={"errors": [{"loc": ["facts"], "msg": f"at most {ctx.settings.max_batch} items"}]})
    outs = assert_many(ctx, params.facts, ["facts"])
    return AssertFactsResult(
        outcomes=[AssertOutcome(fact_id=o.fact.fact_id, action=o.action,
                                superseded=[f.fact_id for f in o.superseded]) for o in outs],
        created=sum(o.action == "created" for o in outs), evidence=sum(o.action != "created" for o in outs),
        superseded=sum(len(o.superseded) for o in outs))


@pack.verb("retract_fact", act=Act.COMMISSIVE)
def retract_fact(params: RetractFactParams, ctx: Context) -> RetractFactResult:
    """Retract a fact: it leaves current answers but stays in its history and in earlier known_at views.

    The claims it stood on are retracted and the timeline is recomputed from the others (ADR 0006): facts whose
    end was inferred from it run to the next value again, or stay open if none follows.
    """
    rows = ctx.db.query("SELECT subject_id, predicate, retracted_at, subject_name FROM kg.facts WHERE namespace = ? "
                        "AND fact_id = ? ORDER BY version_id DESC LIMIT 1", [ctx.namespace, params.fact_id])
    if not rows:
        raise errors.NotFound(f"fact {params.fact_id} does not exist in namespace {ctx.namespace!r}")
    subject_id, predicate, retracted, subject_name = rows[0]
    if retracted is not None:
        raise errors.Conflict(f"fact {params.fact_id} is already retracted")
    now = ctx.now()
    store = KgStore(ctx)
    store.begin_write(need_cache=False)
    key = (subject_id, predicate)
    timeline = store.timelines({key})[key]
    claims = store.claims({key})[key]
    target = next(f for f in timeline if f.fact_id == params.fact_id)
    gone = retract_claims(claims, target)
    store.retract_claims([c.claim_id for c in gone], now)
    timeline = [f for f in timeline if f is not target]
    rebuild(timeline, [c for c in claims if c not in gone], now, itertools.count(-1, -1))
    healed = [f for f in timeline if f.interval_changed]
    ctx.db.execute("UPDATE kg.facts SET retracted_at = ?, end_reason = 'retracted' WHERE namespace = ? AND "
                   "version_id = ?", [now, ctx.namespace, target.version_id])
    persist(ctx, [((subject_id, subject_name, predicate), f) for f in timeline
                  if f.new or f.interval_changed or f.evidence_changed], now)
    store.set_timeline(subject_id, predicate, timeline)
    if params.reason:
        ctx.log.info("retracted fact %s in %s: %s", params.fact_id, ctx.namespace, params.reason)
    return RetractFactResult(fact=facts_by_id(ctx, [params.fact_id])[0], healed=[f.fact_id for f in healed])


@pack.verb("define_predicate", act=Act.DECLARATION)
def define_predicate(params: DefinePredicateParams, ctx: Context) -> PredicateOut:
    """Declare a predicate's cardinality: 'one' (a new object supersedes) or 'many' (values coexist).

    Applies to facts asserted from now on; stored facts keep the shape they were given.
    """
    store = KgStore(ctx)
    store.begin_write(need_cache=False)
    ctx.db.execute(
        "INSERT INTO kg.predicates VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, name) DO UPDATE SET "
        "cardinality = excluded.cardinality, description = coalesce(excluded.description, kg.predicates.description)",
        [ctx.namespace, params.name, params.cardinality, params.description, ctx.now()])
    row = ctx.db.query("SELECT name, cardinality, description FROM kg.predicates WHERE namespace = ? AND name = ?",
                       [ctx.namespace, params.name])[0]
    store.set_cardinality(row[0], row[1])
    return PredicateOut(name=row[0], cardinality=row[1], description=row[2])


@pack.verb("predicates", act=Act.ASSERTIVE)
def predicates(params: PredicatesParams, ctx: Context) -> PredicatesResult:
    """List the declared predicates of the namespace and the cardinality of undeclared ones."""
    rows = ctx.db.query("SELECT name, cardinality, description FROM kg.predicates WHERE namespace = ? ORDER BY name",
                        [ctx.namespace])
    return PredicatesResult(predicates=[PredicateOut(name=n, cardinality=c, description=d) for n, c, d in rows],
                            default_cardinality=ctx.settings.default_cardinality)

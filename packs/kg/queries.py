"""Read verbs over facts: kg.facts, kg.fact_history, kg.resolve (valid time × transaction time)."""
from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from runtime import Act, Context

from packs.kg import cache
from packs.kg.core import pack
from packs.kg.models import FactOut, KgParams, Name, Predicate, When, name_key
from packs.kg.store import entity_by_ref, lookup_keys, read_facts, tx_filter, valid_filter

AS_OF_DOC = "Valid time: facts true in the world at this time. Default: known_at if given, else now."
KNOWN_AT_DOC = "Transaction time: answer with what was recorded (and not yet retracted) at this time. Default: now."


class FactsParams(KgParams):
    subject: Name | None = Field(None, description="Subject name or alias.")
    predicate: Predicate | None = Field(None, description="Predicate.")
    object: Name | None = Field(None, description="Object entity name/alias or literal value.")
    as_of: When | None = Field(None, description=AS_OF_DOC)
    known_at: When | None = Field(None, description=KNOWN_AT_DOC)
    include_superseded: bool = Field(False, description="Also return facts no longer (or not yet) true: ignore "
                                                        "valid time unless as_of is given.")
    limit: int = Field(1000, ge=1, description="Most facts returned.")


class FactsResult(BaseModel):
    facts: list[FactOut]


class HistoryParams(KgParams):
    subject: Name = Field(description="Subject name or alias.")
    predicate: Predicate = Field(description="Predicate.")
    known_at: When | None = Field(None, description=KNOWN_AT_DOC)
    include_versions: bool = Field(False, description="Also list every stored version (transaction-time log).")


class HistoryResult(BaseModel):
    facts: list[FactOut] = Field(description="One snapshot per fact (active, superseded, retracted), valid-time "
                                             "order")
    versions: list[FactOut] = Field(description="Every version, in the order recorded (include_versions)")


class ResolveParams(KgParams):
    subject: Name = Field(description="Subject name or alias.")
    predicate: Predicate = Field(description="Predicate.")
    as_of: When | None = Field(None, description=AS_OF_DOC)
    known_at: When | None = Field(None, description=KNOWN_AT_DOC)


class Evidence(BaseModel):
    fact: FactOut
    sources: list[str] = Field(description="Every note that grounded an assertion of this fact")


class ResolveResult(BaseModel):
    winner: FactOut | None = Field(description="Highest confidence, then latest valid_from, then latest recorded")
    value: str | None
    evidence: list[Evidence] = Field(description="Every competing fact, best first")


def _times(ctx: Context, as_of: datetime | None, known_at: datetime | None) -> datetime:
    return as_of or known_at or ctx.now()


@pack.verb("facts", act=Act.ASSERTIVE)
def facts(params: FactsParams, ctx: Context) -> FactsResult:
    """Query facts by subject/predicate/object at a valid time (as_of) as believed at a transaction time (known_at)."""
    limit = min(params.limit, ctx.settings.max_query_limit)
    c = cache.readable(ctx) if params.subject is not None and params.known_at is None else None
    if c is not None:  # the current versions of one subject are in memory: answer without SQL
        sid = c.keys.get(name_key(params.subject))
        if sid is None:
            return FactsResult(facts=[])
        obj = None if params.object is None else (params.object, c.keys.get(name_key(params.object)))
        when = None if params.as_of is None and params.include_superseded else _times(ctx, params.as_of, None)
        return FactsResult(facts=cache.current_facts(c, sid, params.predicate, obj, when, limit))
    args: list[Any] = []
    where = [tx_filter(params.known_at, args)]
    if params.subject is not None:
        hit = lookup_keys(ctx, [name_key(params.subject)]).get(name_key(params.subject))
        if hit is None:
            return FactsResult(facts=[])
        where.append("f.subject_id = ?")
        args.append(hit[0])
    if params.predicate is not None:
        where.append("f.predicate = ?")
        args.append(params.predicate)
    if params.object is not None:
        hit = lookup_keys(ctx, [name_key(params.object)]).get(name_key(params.object))
        where.append("(f.object_value = ? OR f.object_id = ?)")
        args.extend([params.object, hit[0] if hit else None])
    if params.as_of is not None or not params.include_superseded:
        where.append(valid_filter(_times(ctx, params.as_of, params.known_at), args))
    return FactsResult(facts=read_facts(ctx, " AND ".join(where), args, limit=limit))


@pack.verb("fact_history", act=Act.ASSERTIVE)
def fact_history(params: HistoryParams, ctx: Context) -> HistoryResult:
    """The whole chain of a (subject, predicate): active, superseded and retracted facts in valid-time order."""
    subject = entity_by_ref(ctx, params.subject, loc="subject")
    args: list[Any] = [subject.id, params.predicate]
    scope = "f.subject_id = ? AND f.predicate = ?"
    if params.known_at is None:  # the latest version of every fact, retracted ones included
        latest = ("f.version_id IN (SELECT max(version_id) FROM kg.facts WHERE namespace = ? AND subject_id = ? "
                  "AND predicate = ? GROUP BY fact_id)")
        where, wargs = f"{scope} AND {latest}", [*args, ctx.namespace, subject.id, params.predicate]
    else:
        wargs = list(args)
        where = f"{scope} AND {tx_filter(params.known_at, wargs)}"
    snaps = read_facts(ctx, where, wargs, order="f.valid_from NULLS FIRST, f.first_recorded_at, f.fact_id")
    versions = []
    if params.include_versions:
        vargs = list(args)
        vwhere = scope if params.known_at is None else f"{scope} AND f.recorded_at <= ?"
        if params.known_at is not None:
            vargs.append(params.known_at)
        versions = read_facts(ctx, vwhere, vargs, order="f.version_id")
    return HistoryResult(facts=snaps, versions=versions)


def rank_key(f: FactOut) -> tuple:
    return (f.confidence, f.valid_from or datetime.min, f.recorded_at, f.fact_id)


@pack.verb("resolve", act=Act.ASSERTIVE)
def resolve(params: ResolveParams, ctx: Context) -> ResolveResult:
    """The winning value of a (subject, predicate) at a time, when several facts compete, with all the evidence."""
    subject = entity_by_ref(ctx, params.subject, loc="subject")
    args: list[Any] = [subject.id, params.predicate]
    where = (f"f.subject_id = ? AND f.predicate = ? AND {tx_filter(params.known_at, args)} AND "
             f"{valid_filter(_times(ctx, params.as_of, params.known_at), args)}")
    cands = sorted(read_facts(ctx, where, args), key=rank_key, reverse=True)
    sources: dict[int, list[str]] = {f.fact_id: [] for f in cands}
    if cands:
        for fid, src in ctx.db.query(
                "SELECT fact_id, source_id FROM kg.fact_sources WHERE namespace = ? AND fact_id IN "
                "(SELECT unnest(?::BIGINT[])) ORDER BY recorded_at", [ctx.namespace, list(sources)]):
            if src not in sources[fid]:
                sources[fid].append(src)
    winner = cands[0] if cands else None
    return ResolveResult(winner=winner, value=winner.object if winner else None,
                         evidence=[Evidence(fact=f, sources=sources[f.fact_id]) for f in cands])

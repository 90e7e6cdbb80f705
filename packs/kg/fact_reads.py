"""Read verbs over facts: kg.facts, kg.fact_history, kg.resolve (valid time × transaction time)."""
from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.models import FactOut, Name, Predicate, When
from palimpsest_memory.packs.kg.sql_reads import entity_by_ref, read_facts, tx_filter, valid_filter
from palimpsest_memory.packs.kg.store import KgStore

AS_OF_DOC = ("The facts true at this time, e.g. '2021-06-01', '2021-06' or '2021'. Default: now (or known_at, "
             "when given).")
KNOWN_AT_DOC = ("Answer as the memory stood at this time (what had been recorded then, ISO 8601). Default: now.")


class FactsParams(NamespacedParams):
    """Look up facts: what is true now, or on a given date, about a subject, a relation or a value. Give any of
    subject, predicate and object; e.g. subject 'Orion' and predicate 'uses_database'."""

    subject: Name | None = Field(None, description="Who or what the facts are about, e.g. 'Orion'.")
    predicate: Predicate | None = Field(None, description="The relation, e.g. 'uses_database'.")
    object: Name | None = Field(None, description="The value, e.g. 'Postgres' (who or what has this value).")
    as_of: When | None = Field(None, description=AS_OF_DOC)
    known_at: When | None = Field(None, description=KNOWN_AT_DOC)
    include_superseded: bool = Field(False, description="Also return facts no longer (or not yet) true: ignore "
                                                        "valid time unless as_of is given.")
    limit: int = Field(1000, ge=1, description="Most facts returned (capped by max_query_limit).")
    cursor: str | None = Field(None, max_length=256, description="next_cursor of the previous page.")


class FactsResult(BaseModel):
    facts: list[FactOut]
    next_cursor: str | None = Field(None, description="Pass as cursor for the next page; null on the last page.")


def fact_cursor(f: FactOut) -> str:
    """An opaque keyset cursor after ``f`` in kg.facts' order (valid_from, unknown starts first, then fact id)."""
    raw = json.dumps({"v": f.valid_from.isoformat() if f.valid_from else None, "i": f.fact_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str | None) -> tuple[datetime | None, int] | None:
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        vf = None if data["v"] is None else datetime.fromisoformat(data["v"])
        fid = data["i"]
        if vf is not None and vf.tzinfo is not None:
            raise ValueError("a cursor's time has no zone")
        if not isinstance(fid, int) or isinstance(fid, bool) or not -(2**63) <= fid < 2**63:  # forged: not an id
            raise ValueError(f"the fact id {fid!r} is not a 64-bit integer")  # the database would refuse
        return vf, fid
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise errors.InvalidParams(f"cursor is not a next_cursor of kg.facts ({exc})",
                                   details={"errors": [{"loc": ["cursor"], "msg": "invalid cursor"}]}) from None


class HistoryParams(NamespacedParams):
    """Every value a fact has had over time, oldest first, with when each held: e.g. every database Orion has
    used, or every company Ada has worked at."""

    subject: Name = Field(description="Who or what the fact is about, e.g. 'Orion'.")
    predicate: Predicate = Field(description="The relation, e.g. 'uses_database'.")
    known_at: When | None = Field(None, description=KNOWN_AT_DOC)
    include_versions: bool = Field(False, description="Also list every recorded change, in the order it was "
                                                      "recorded (for auditing).")


class HistoryResult(BaseModel):
    facts: list[FactOut] = Field(description="One snapshot per fact (active, superseded, retracted), valid-time "
                                             "order")
    versions: list[FactOut] = Field(description="Every version, in the order recorded (include_versions)")


class ResolveParams(NamespacedParams):
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
    """Query facts by subject/predicate/object at a valid time (as_of) as believed at a transaction time (known_at),
    in valid-time order, page by page (cursor / next_cursor: a keyset, so facts added while paging shift nothing)."""
    limit = min(params.limit, ctx.settings.max_query_limit)
    got = KgStore(ctx).facts(params.subject, params.predicate, params.object, params.as_of, params.known_at,
                             params.include_superseded, limit + 1, after=read_cursor(params.cursor))
    more = len(got) > limit
    got = got[:limit]
    return FactsResult(facts=got, next_cursor=fact_cursor(got[-1]) if more else None)


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

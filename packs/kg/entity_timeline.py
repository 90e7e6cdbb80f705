"""kg.timeline: every predicate's history of one subject, each fact with the state a picture should draw it in.

The web view (`pal serve`, ADR 0019) and `pal kg timeline SUBJECT --svg FILE` draw the same answer, so the
classification lives here, once: at a reference moment (``known_at`` if given, else now) a fact is

- ``retracted``: retracted at or before it (a fact retracted later is still believed at that ``known_at``);
- ``current``: its valid interval holds the reference moment;
- ``superseded``: a later value took over (``superseded_by``);
- ``ended``: an explicit end before the reference moment; ``upcoming``: starts after it.

``late`` marks a fact that arrived out of valid-time order: it was first recorded after a fact of the same line
that starts later had been recorded (ADR 0006: "facts also arrive late"). ``moments`` are every transaction time
at which a belief about the subject changed (a version recorded or closed): the stops of a known_at slider.
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.kg.core import pack
from palimpsest_memory.packs.kg.models import EntityRef, FactOut, Name, Predicate, When
from palimpsest_memory.packs.kg.sql_reads import entity_by_ref

Status = Literal["current", "superseded", "retracted", "ended", "upcoming"]


class TimelineParams(NamespacedParams):
    subject: Name = Field(description="Subject entity name or alias.")
    known_at: When | None = Field(None, description="Transaction time: draw what was believed at this moment "
                                                    "(default: now, including retracted facts).")
    predicates: list[Predicate] | None = Field(None, description="Only these predicates (default: every one the "
                                                                 "subject ever had).")


class TimelineFact(BaseModel):
    fact: FactOut
    status: Status = Field(description="current | superseded | retracted | ended | upcoming, at the reference "
                                       "moment (known_at, else now)")
    late: bool = Field(description="Recorded after a fact of the same line that starts later")
    empty: bool = Field(description="Holds no instant (valid_to == valid_from): kept in history only")


class TimelineLine(BaseModel):
    predicate: str
    facts: list[TimelineFact] = Field(description="Valid-time order")


class TimelineResult(BaseModel):
    subject: EntityRef
    known_at: datetime | None
    reference: datetime = Field(description="The moment statuses refer to: known_at, else now")
    lines: list[TimelineLine]
    moments: list[datetime] = Field(description="Every transaction time at which a belief about the subject "
                                                "changed, oldest first")


def status_of(f: FactOut, ref: datetime, known_at: datetime | None) -> Status:
    if f.retracted_at is not None and (known_at is None or f.retracted_at <= known_at):
        return "retracted"
    if (f.valid_from is None or f.valid_from <= ref) and (f.valid_to is None or f.valid_to > ref):
        return "current"
    if f.valid_from is not None and f.valid_from > ref:
        return "upcoming"
    return "superseded" if f.superseded_by is not None else "ended"


def late_ids(facts: list[FactOut]) -> set[int]:
    """Facts first recorded after some fact starting later in valid time was already recorded."""
    out = set()
    for f in facts:
        start = f.valid_from or datetime.min
        if any((g.valid_from or datetime.min) > start and g.recorded_at < f.recorded_at for g in facts):
            out.add(f.fact_id)
    return out


@pack.verb("timeline", act=Act.ASSERTIVE)
def timeline(params: TimelineParams, ctx: Context) -> TimelineResult:
    """Every predicate's history of a subject, as a picture draws it: each fact's status (current, superseded,
    retracted, ended, upcoming) at known_at (else now), late arrivals marked, and the moments beliefs changed."""
    subject = entity_by_ref(ctx, params.subject, loc="subject")
    ref = params.known_at or ctx.now()
    if params.predicates:
        names = sorted(set(params.predicates))
    else:
        names = [r[0] for r in ctx.db.query("SELECT DISTINCT predicate FROM kg.facts WHERE namespace = ? AND "
                                            "subject_id = ? ORDER BY predicate", [ctx.namespace, subject.id])]
    lines = []
    for predicate in names:
        hist = ctx.call("kg.fact_history", {"subject": subject.name, "predicate": predicate,
                                            "known_at": params.known_at})
        if not hist.facts:
            continue
        late = late_ids(hist.facts)
        lines.append(TimelineLine(predicate=predicate, facts=[
            TimelineFact(fact=f, status=status_of(f, ref, params.known_at), late=f.fact_id in late,
                         empty=f.valid_from is not None and f.valid_to is not None and f.valid_to <= f.valid_from)
            for f in hist.facts]))
    rows = ctx.db.query("SELECT DISTINCT t FROM (SELECT recorded_at AS t FROM kg.facts WHERE namespace = ? AND "
                        "subject_id = ? UNION SELECT retracted_at FROM kg.facts WHERE namespace = ? AND "
                        "subject_id = ?) WHERE t IS NOT NULL ORDER BY t",
                        [ctx.namespace, subject.id, ctx.namespace, subject.id])
    return TimelineResult(subject=EntityRef(id=subject.id, name=subject.name), known_at=params.known_at,
                          reference=ref, lines=lines, moments=[r[0] for r in rows])

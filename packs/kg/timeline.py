"""The supersession algorithm, in memory: one (subject, predicate) timeline at a time, no SQL.

A timeline holds the transaction-time-current versions of the facts of one (subject, predicate). Facts of a
``one`` predicate that are not ``coexisting`` form a *line*: non-overlapping half-open valid intervals
``[valid_from, valid_to)`` (``valid_from`` NULL = since an unknown time = -inf; ``valid_to`` NULL = open).
:func:`apply` inserts one assertion and mutates the affected facts; the caller persists them (a changed
interval or link → the old version is closed in transaction time and a new version inserted; an evidence-only
change → updated in place). See adr/0006-kg-bitemporal-facts.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

MIN = datetime.min


@dataclass(slots=True)
class Fact:
    fact_id: int                  # negative = provisional id of a fact created in this batch
    version_id: int | None        # the stored version this was read from; None for a new fact
    object_key: str               # 'e:<id>' or 'v:<literal>'
    object_id: int | None
    object_value: str | None
    object_text: str              # the object entity's canonical name, or the literal
    valid_from: datetime | None
    valid_to: datetime | None
    valid_to_source: str | None
    superseded_by: int | None
    coexisting: bool
    confidence: float
    combined_confidence: float
    evidence_count: int
    source_id: str | None
    first_recorded_at: datetime
    recorded_at: datetime         # when this version became our belief (transaction time from)
    interval_changed: bool = False
    evidence_changed: bool = False
    row: tuple | None = None      # the cached row this copy was made from (reused by the cache while unchanged)

    @property
    def new(self) -> bool:
        return self.version_id is None

    @property
    def start(self) -> datetime:
        return self.valid_from or MIN

    @property
    def alive(self) -> bool:
        """False for a fact superseded by one starting at the same instant (empty interval)."""
        return self.valid_to is None or self.valid_from is None or self.valid_to > self.valid_from

    def covers(self, t: datetime) -> bool:
        return (self.valid_from is None or self.valid_from <= t) and (self.valid_to is None or self.valid_to > t)


@dataclass
class Assertion:
    object_key: str
    object_id: int | None
    object_value: str | None
    object_text: str
    valid_from: datetime | None
    valid_to: datetime | None
    confidence: float
    source_id: str | None
    coexisting: bool              # many predicate or allow_coexisting


@dataclass
class Outcome:
    fact: Fact
    action: str                   # created | evidence | extended
    superseded: list[Fact] = field(default_factory=list)


def _evidence(f: Fact, a: Assertion, nxt: Fact | None = None) -> None:
    """Count ``a`` as evidence for ``f``; an explicit end reaching further extends ``f`` (up to line fact nxt)."""
    f.evidence_count += 1
    f.confidence = max(f.confidence, a.confidence)
    f.combined_confidence = 1.0 - (1.0 - f.combined_confidence) * (1.0 - a.confidence)
    if f.source_id is None and a.source_id is not None:
        f.source_id = a.source_id
    f.evidence_changed = True
    if a.valid_to is not None and f.valid_to is None and (f.valid_from is None or a.valid_to > f.valid_from):
        f.valid_to, f.valid_to_source, f.interval_changed = a.valid_to, "explicit", True
    elif (a.valid_to is not None and f.valid_to is not None and a.valid_to > f.valid_to
          and f.valid_to_source == "explicit" and (nxt is None or f.valid_to < nxt.start)):
        if nxt is not None and a.valid_to >= nxt.start:
            f.valid_to, f.valid_to_source, f.superseded_by = nxt.start, "successor", nxt.fact_id
        else:
            f.valid_to = a.valid_to
        f.interval_changed = True


def _new(a: Assertion, fact_id: int, now: datetime, valid_from: datetime | None, valid_to: datetime | None,
         source: str | None, successor: int | None) -> Fact:
    return Fact(fact_id=fact_id, version_id=None, object_key=a.object_key, object_id=a.object_id,
                object_value=a.object_value, object_text=a.object_text, valid_from=valid_from, valid_to=valid_to,
                valid_to_source=source,
                superseded_by=successor, coexisting=a.coexisting, confidence=a.confidence,
                combined_confidence=a.confidence, evidence_count=1, source_id=a.source_id, first_recorded_at=now,
                recorded_at=now)


def apply(facts: list[Fact], a: Assertion, now: datetime, new_id: int) -> Outcome:
    """Insert assertion ``a`` into the timeline ``facts`` (mutated; a created fact is appended).

    The steps are those of ADR 0006 ("Supersession algorithm"), one function each."""
    if a.coexisting:
        return _apply_coexisting(facts, a, now, new_id)
    line = sorted((f for f in facts if not f.coexisting and f.alive), key=lambda f: (f.start, f.fact_id))
    start = a.valid_from
    if start is None:
        settled = no_start_given(facts, line, a, now, new_id)  # 1
        if settled is not None:
            return settled
        start = now  # it changes what we knew: the change is news now
    out = evidence_at_start(facts, line, a, start)  # 2
    if out is not None:
        return out
    pred, after = neighbours(line, start)  # 3
    succ = after[0] if after else None
    if succ is not None and succ.object_key == a.object_key and (a.valid_to is None or a.valid_to >= succ.start):
        out = extend_successor(succ, after, a, start)  # 4
    else:
        out = insert_new(facts, succ, a, now, new_id, start)  # 5
    close_predecessor(pred, out, start)  # 6
    return out


def _created(facts: list[Fact], fact: Fact) -> Outcome:
    facts.append(fact)
    return Outcome(fact, "created")


def no_start_given(facts: list[Fact], line: list[Fact], a: Assertion, now: datetime, new_id: int) -> Outcome | None:
    """Step 1: evidence for the value valid now; a first fact of unknown start; a past fact of unknown start put
    before the line. None: none of these, the assertion starts now."""
    current = [f for f in facts if f.alive and f.covers(now) and f.object_key == a.object_key]
    if current:
        _evidence(current[0], a)
        return Outcome(current[0], "evidence")
    if not line:
        return _created(facts, _new(a, new_id, now, None, a.valid_to, "explicit" if a.valid_to else None, None))
    if a.valid_to is not None and a.valid_to <= now:
        first = line[0]
        clamp = first.valid_from is not None and first.start < a.valid_to
        return _created(facts, _new(a, new_id, now, None, first.start if clamp else a.valid_to,
                                    "successor" if clamp else "explicit", first.fact_id if clamp else None))
    return None


def evidence_at_start(facts: list[Fact], line: list[Fact], a: Assertion, start: datetime) -> Outcome | None:
    """Step 2: a live fact with the same object covering the start receives evidence; no new version."""
    same = [f for f in facts if f.alive and f.object_key == a.object_key and f.covers(start)]
    if not same:
        return None
    later = [g for g in line if g.start > same[0].start]
    _evidence(same[0], a, later[0] if later and not same[0].coexisting else None)
    return Outcome(same[0], "evidence")


def neighbours(line: list[Fact], start: datetime) -> tuple[Fact | None, list[Fact]]:
    """Step 3: P, the last line fact starting at or before the start, and the line facts after it (S first)."""
    before = [f for f in line if f.start <= start]
    return (before[-1] if before else None), [f for f in line if f.start > start]


def extend_successor(succ: Fact, after: list[Fact], a: Assertion, start: datetime) -> Outcome:
    """Step 4: S holds the asserted value, known now to start earlier: it starts at the start."""
    succ.valid_from, succ.interval_changed = start, True
    _evidence(succ, a, after[1] if len(after) > 1 else None)
    return Outcome(succ, "extended")


def insert_new(facts: list[Fact], succ: Fact | None, a: Assertion, now: datetime, new_id: int,
               start: datetime) -> Outcome:
    """Step 5: a new fact ending at its explicit end if that comes before S, else where S starts, else open."""
    if a.valid_to is not None and (succ is None or a.valid_to <= succ.start):
        end, source, link = a.valid_to, "explicit", None
    elif succ is not None:
        end, source, link = succ.start, "successor", succ.fact_id
    else:
        end, source, link = None, None, None
    return _created(facts, _new(a, new_id, now, start, end, source, link))


def close_predecessor(pred: Fact | None, out: Outcome, start: datetime) -> None:
    """Step 6: P, if it still holds at the start, ends there, superseded by the fact now holding."""
    if pred is not None and pred is not out.fact and (pred.valid_to is None or pred.valid_to > start):
        pred.valid_to, pred.valid_to_source, pred.superseded_by = start, "successor", out.fact.fact_id
        pred.interval_changed = True
        out.superseded.append(pred)


def _apply_coexisting(facts: list[Fact], a: Assertion, now: datetime, new_id: int) -> Outcome:
    probe = a.valid_from or now
    same = [f for f in facts if f.alive and f.object_key == a.object_key
            and (f.covers(probe) or (a.valid_from is None and f.valid_from is None))]
    if same:
        _evidence(same[0], a)
        return Outcome(same[0], "evidence")
    fact = _new(a, new_id, now, a.valid_from, a.valid_to, "explicit" if a.valid_to else None, None)
    facts.append(fact)
    return Outcome(fact, "created")


def heal_after_retraction(facts: list[Fact], retracted: Fact) -> list[Fact]:
    """Facts whose end was inferred from ``retracted`` (superseded_by it) end where the next line fact starts."""
    healed = []
    for f in facts:
        if f.superseded_by != retracted.fact_id or f.valid_to_source != "successor" or f is retracted:
            continue
        nxt = sorted((g for g in facts if g is not retracted and g is not f and not g.coexisting and g.alive
                      and g.start > f.start), key=lambda g: (g.start, g.fact_id))
        if nxt:
            f.valid_to, f.superseded_by = nxt[0].valid_from, nxt[0].fact_id
        else:
            f.valid_to, f.valid_to_source, f.superseded_by = None, None, None
        f.interval_changed = True
        healed.append(f)
    return healed

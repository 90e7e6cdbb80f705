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
    """Insert assertion ``a`` into the timeline ``facts`` (mutated; a created fact is appended)."""
    if a.coexisting:
        return _apply_coexisting(facts, a, now, new_id)
    line = sorted((f for f in facts if not f.coexisting and f.alive), key=lambda f: (f.start, f.fact_id))
    start = a.valid_from
    if start is None:
        current = [f for f in facts if f.alive and f.covers(now) and f.object_key == a.object_key]
        if current:
            _evidence(current[0], a)
            return Outcome(current[0], "evidence")
        if not line:  # a first fact of unknown start
            fact = _new(a, new_id, now, None, a.valid_to, "explicit" if a.valid_to else None, None)
            facts.append(fact)
            return Outcome(fact, "created")
        if a.valid_to is not None and a.valid_to <= now:  # a past fact of unknown start: put it first
            first = line[0]
            clamp = first.valid_from is not None and first.start < a.valid_to
            fact = _new(a, new_id, now, None, first.start if clamp else a.valid_to,
                        "successor" if clamp else "explicit", first.fact_id if clamp else None)
            facts.append(fact)
            return Outcome(fact, "created")
        start = now  # it changes what we knew: the change is news now
    same = [f for f in facts if f.alive and f.object_key == a.object_key and start is not None and f.covers(start)]
    if same:
        later = [g for g in line if g.start > same[0].start]
        _evidence(same[0], a, later[0] if later and not same[0].coexisting else None)
        return Outcome(same[0], "evidence")
    key = start or MIN
    before = [f for f in line if f.start <= key]
    after = [f for f in line if f.start > key]
    pred = before[-1] if before else None
    succ = after[0] if after else None
    if succ is not None and succ.object_key == a.object_key and (a.valid_to is None or a.valid_to >= succ.start):
        succ.valid_from, succ.interval_changed = start, True  # the same value, known to start earlier
        _evidence(succ, a, after[1] if len(after) > 1 else None)
        target, action = succ, "extended"
    else:
        if a.valid_to is not None and (succ is None or a.valid_to <= succ.start):
            end, source, link = a.valid_to, "explicit", None
        elif succ is not None:
            end, source, link = succ.start, "successor", succ.fact_id
        else:
            end, source, link = None, None, None
        target = _new(a, new_id, now, start, end, source, link)
        facts.append(target)
        action = "created"
    out = Outcome(target, action)
    if pred is not None and pred is not target and (pred.valid_to is None or pred.valid_to > key):
        pred.valid_to, pred.valid_to_source, pred.superseded_by = key, "successor", target.fact_id
        pred.interval_changed = True
        out.superseded.append(pred)
    return out


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

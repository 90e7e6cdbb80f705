"""The supersession algorithm, in memory: one (subject, predicate) timeline at a time, no SQL.

A timeline holds the transaction-time-current versions of the facts of one (subject, predicate) and the live
*claims* behind them: every assertion about valid time, with its own interval (kg.claims). The facts are a
function of the set of claims (issue 15): :func:`line_segments` (a ``one`` predicate: at each instant the covering
claim of highest priority holds) or :func:`coexisting_segments` (``many``: per object, the union of overlapping
claims) give the segments, and :func:`reconcile` makes the stored facts show them. :func:`apply` adds one
assertion; the caller persists what changed (a changed interval or link → the old version is closed in
transaction time and a new version inserted; an evidence-only change → updated in place).
See adr/0006-kg-bitemporal-facts.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterator

MIN = datetime.min


@dataclass(slots=True)
class Fact:
    """The mutable copy of a stored ``fact_rows.FactRow`` that supersession edits: the row's fields but its
    predicate, in the same order (a test keeps them so), then the algorithm's bookkeeping."""

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


def _new(a: Assertion, fact_id: int, now: datetime, valid_from: datetime | None, valid_to: datetime | None,
         source: str | None, successor: int | None) -> Fact:
    return Fact(fact_id=fact_id, version_id=None, object_key=a.object_key, object_id=a.object_id,
                object_value=a.object_value, object_text=a.object_text, valid_from=valid_from, valid_to=valid_to,
                valid_to_source=source,
                superseded_by=successor, coexisting=a.coexisting, confidence=a.confidence,
                combined_confidence=a.confidence, evidence_count=1, source_id=a.source_id, first_recorded_at=now,
                recorded_at=now)


@dataclass(slots=True)
class Claim:
    """One assertion kept with its own interval (kg.claims): the timeline is a function of the set of claims."""

    object_key: str
    object_id: int | None
    object_value: str | None
    object_text: str
    valid_from: datetime | None
    valid_to: datetime | None       # explicit end, or None (open)
    confidence: float
    coexisting: bool
    claim_id: int                   # arrival order; the last tie-break only (ADR 0006, "equal starts")

    @property
    def start(self) -> datetime:
        return self.valid_from or MIN

    def covers(self, t: datetime) -> bool:
        return self.start <= t and (self.valid_to is None or self.valid_to > t)


def claim_of(a: Assertion, valid_from: datetime | None, claim_id: int) -> Claim:
    return Claim(a.object_key, a.object_id, a.object_value, a.object_text, valid_from, a.valid_to, a.confidence,
                 a.coexisting, claim_id)


@dataclass
class Segment:
    """A maximal interval held by one object, and the claims that hold it."""

    object_key: str
    valid_from: datetime | None
    valid_to: datetime | None
    claims: list[Claim]
    explicit_end: bool = False      # the end is a claim's own explicit end (else: where the next value starts)

    @property
    def start(self) -> datetime:
        return self.valid_from or MIN


def _priority(c: Claim) -> tuple:
    """Who holds an instant covered by several claims: the latest start (a later change supersedes); at equal
    starts the higher confidence, then the narrower explicit interval (it keeps its bounds; the wider one resumes
    after it); then the later arrival (a same-instant correction of an identical interval)."""
    narrow = 0.0 if c.valid_to is None else -(c.valid_to - MIN).total_seconds()
    return (c.start, c.confidence, c.valid_to is not None, narrow, c.claim_id)


def line_segments(claims: list[Claim]) -> list[Segment]:
    """The line of a 'one' timeline: at every instant the covering claim of highest :func:`_priority` holds;
    adjacent instants held by the same object form one segment. Independent of the order of ``claims``."""
    cuts = sorted({c.start for c in claims} | {c.valid_to for c in claims if c.valid_to is not None})
    out: list[Segment] = []
    for i, lo in enumerate(cuts):
        hi = cuts[i + 1] if i + 1 < len(cuts) else None
        covering = [c for c in claims if c.covers(lo)]
        if not covering:
            continue
        win = max(covering, key=_priority)
        last = out[-1] if out else None
        if last is not None and last.object_key == win.object_key and last.valid_to == lo:
            last.valid_to = hi
            last.claims.append(win)
        else:
            out.append(Segment(win.object_key, None if lo == MIN else lo, hi, [win]))
        out[-1].explicit_end = hi is not None and win.valid_to == hi
    return out


def coexisting_segments(claims: list[Claim]) -> list[Segment]:
    """Coexisting claims: per object, the union of overlapping intervals (touching ones stay apart)."""
    out: list[Segment] = []
    for c in sorted(claims, key=lambda c: (c.object_key, c.start, c.claim_id)):
        last = out[-1] if out else None
        if last is not None and last.object_key == c.object_key and (last.valid_to is None or c.start < last.valid_to):
            if last.valid_to is not None and (c.valid_to is None or c.valid_to > last.valid_to):
                last.valid_to = c.valid_to
            last.claims.append(c)
        else:
            out.append(Segment(c.object_key, c.valid_from, c.valid_to, [c]))
    for seg in out:
        seg.explicit_end = seg.valid_to is not None
    return out


def _seed(seg: Segment, fact_id: int, now: datetime, first: Assertion | None) -> Fact:
    """A new fact for a segment no stored fact holds (the assertion's own, or a remainder split off by it)."""
    c = max(seg.claims, key=lambda c: c.confidence)
    combined = 1.0
    for x in seg.claims:
        combined *= 1.0 - x.confidence
    return Fact(fact_id=fact_id, version_id=None, object_key=c.object_key, object_id=c.object_id,
                object_value=c.object_value, object_text=c.object_text, valid_from=seg.valid_from,
                valid_to=seg.valid_to, valid_to_source=None, superseded_by=None, coexisting=c.coexisting,
                confidence=c.confidence, combined_confidence=1.0 - combined, evidence_count=len(seg.claims),
                source_id=first.source_id if first is not None else None, first_recorded_at=now, recorded_at=now)


def _set(f: Fact, valid_from: datetime | None, valid_to: datetime | None, source: str | None,
         successor: int | None) -> bool:
    if (f.valid_from, f.valid_to, f.valid_to_source, f.superseded_by) == (valid_from, valid_to, source, successor):
        return False
    f.valid_from, f.valid_to, f.valid_to_source, f.superseded_by = valid_from, valid_to, source, successor
    f.interval_changed = True
    return True


def _overlap(f: Fact, seg: Segment) -> bool:
    f_end, s_end = f.valid_to, seg.valid_to
    return (f_end is None or f_end > seg.start) and (s_end is None or s_end > f.start)


def reconcile(facts: list[Fact], segs: list[Segment], coexisting: bool, now: datetime, ids: Iterator[int],
              a: Assertion | None = None, claim: Claim | None = None) -> dict[int, Fact]:
    """Make the stored facts of one kind (line or coexisting) show ``segs``: each segment keeps the stored fact of
    its object that starts with it or overlaps it (else a new fact takes a provisional id from ``ids``); a stored
    fact that holds no segment any more ends empty at its start. Returns ``id(claim) → fact`` for every claim."""
    mine = [f for f in facts if f.coexisting == coexisting]
    free = sorted(mine, key=lambda f: (not f.alive, f.start, f.fact_id))
    held: list[Fact] = []
    for seg in segs:
        same = [f for f in free if f.object_key == seg.object_key]
        pick = (next((f for f in same if f.alive and f.valid_from == seg.valid_from), None)
                or next((f for f in same if f.alive and _overlap(f, seg)), None)
                or next((f for f in same if not f.alive), None))
        if pick is None:
            pick = _seed(seg, next(ids), now, a if claim is not None and claim in seg.claims else None)
            facts.append(pick)
        else:
            free.remove(pick)
        held.append(pick)
    for i, (seg, f) in enumerate(zip(segs, held)):
        nxt = held[i + 1] if not coexisting and i + 1 < len(segs) and segs[i + 1].valid_from == seg.valid_to else None
        if seg.valid_to is None:
            _set(f, seg.valid_from, None, None, None)
        elif seg.explicit_end or nxt is None:
            _set(f, seg.valid_from, seg.valid_to, "explicit", None)
        else:
            _set(f, seg.valid_from, seg.valid_to, "successor", nxt.fact_id)
    for f in free:
        if f.alive and f.valid_from is not None:  # holds nowhere now: an empty interval, kept in history
            holder = next((h for s, h in zip(segs, held) if s.start <= f.start and (s.valid_to is None
                                                                                  or s.valid_to > f.start)), None)
            _set(f, f.valid_from, f.valid_from, "successor", holder.fact_id if holder else None)
    return {id(c): f for seg, f in zip(segs, held) for c in seg.claims}


def apply(facts: list[Fact], claims: list[Claim], a: Assertion, now: datetime, ids: Iterator[int],
          claim_ids: Iterator[int]) -> tuple[Outcome, Claim | None]:
    """Insert assertion ``a`` into the timeline ``facts`` (mutated; created facts appended) whose stored claims
    are ``claims`` (the new claim is appended). ``ids``: provisional fact ids to take from; ``claim_ids``: the
    provisional claim id for ``a`` is taken from it. Returns the outcome and the new claim (None: evidence only)."""
    start = a.valid_from
    if start is None:
        settled = no_start_given(facts, a, now)
        if settled is not None:
            return settled, None
        line = [f for f in facts if not f.coexisting and f.alive]
        if a.coexisting or not line or (a.valid_to is not None and a.valid_to <= now):
            start = None
        else:
            start = now  # it changes what we knew: the change is news now
    claim = claim_of(a, start, next(claim_ids))
    claims.append(claim)
    before = {id(f): (f.valid_from, f.valid_to) for f in facts}
    mine = [c for c in claims if c.coexisting == a.coexisting]
    segs = coexisting_segments(mine) if a.coexisting else line_segments(mine)
    owner = reconcile(facts, segs, a.coexisting, now, ids, a, claim).get(id(claim))
    if owner is None:  # the claim holds no instant: kept as an empty fact, superseded by the one holding there
        holder = next((f for f in facts if f.alive and not f.coexisting and f.covers(claim.start)), None)
        owner = _new(a, next(ids), now, start, start, "successor", holder.fact_id if holder else None)
        facts.append(owner)
        return Outcome(owner, "created"), claim
    changed = [f for f in facts if id(f) in before and f is not owner and f.interval_changed
               and before[id(f)] != (f.valid_from, f.valid_to)]
    if owner.new and id(owner) not in before:
        return Outcome(owner, "created", changed), claim
    _count(owner, a)
    earlier = before[id(owner)][0] is not None and (owner.valid_from is None or owner.valid_from < before[id(owner)][0])
    return Outcome(owner, "extended" if earlier else "evidence", changed), claim


def _count(f: Fact, a: Assertion) -> None:
    f.evidence_count += 1
    f.confidence = max(f.confidence, a.confidence)
    f.combined_confidence = 1.0 - (1.0 - f.combined_confidence) * (1.0 - a.confidence)
    if f.source_id is None and a.source_id is not None:
        f.source_id = a.source_id
    f.evidence_changed = True


def no_start_given(facts: list[Fact], a: Assertion, now: datetime) -> Outcome | None:
    """An undated assertion of the value valid now is evidence for it (no claim: it says nothing new about
    valid time). None: it becomes a claim (see :func:`apply` for its start)."""
    current = [f for f in facts if f.alive and f.covers(now) and f.object_key == a.object_key]
    if current and (a.valid_to is None or current[0].valid_to == a.valid_to):
        _count(current[0], a)
        return Outcome(current[0], "evidence")
    return None


def retract_claims(claims: list[Claim], target: Fact) -> list[Claim]:
    """The claims a retracted fact stood on: its object's claims starting inside its interval (or at its start)."""
    return [c for c in claims if c.object_key == target.object_key and c.coexisting == target.coexisting
            and (c.start == target.start or target.covers(c.start))]


def rebuild(facts: list[Fact], claims: list[Claim], now: datetime, ids: Iterator[int]) -> None:
    """Recompute both kinds of a timeline from its claims (after a retraction)."""
    for coexisting in (False, True):
        mine = [c for c in claims if c.coexisting == coexisting]
        reconcile(facts, coexisting_segments(mine) if coexisting else line_segments(mine), coexisting, now, ids)



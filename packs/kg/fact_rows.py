"""One row type for a stored fact version, :class:`FactRow`, and its conversions (SQL rows, ``FactOut``, the
timeline's :class:`~palimpsest_memory.packs.kg.timeline.Fact`). Every kg module reads fact fields by name through it.

A ``FactRow`` is what the fact cache hands out and what the SQL paths read. The cache itself keeps *stored rows*:
plain tuples of the same fields in the same order (:meth:`FactRow.stored`, :func:`stored_row`). CPython's cycle
collector stops tracking a tuple of atomic values, but never an instance of a tuple subclass, and the cache holds a
row per current fact for the life of the process (adr/0014-kg-scale.md); writers also reuse an unchanged stored row
as it is, so a batch allocates rows only for the facts it changed.
"""
from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

from palimpsest_memory.packs.kg.models import FactOut
from palimpsest_memory.packs.kg.timeline import Fact

# The columns of a FactRow in kg.facts, in field order (the cache's loads and the SQL reads select these).
ROW_COLUMNS = ("predicate, fact_id, version_id, object_id, object_value, object_text, valid_from, valid_to, "
               "valid_to_source, superseded_by, coexisting, confidence, combined_confidence, evidence_count, "
               "source_id, first_recorded_at, recorded_at")


class FactRow(NamedTuple):
    """One transaction-time version of a fact, as stored (without its subject, which groups the rows). Its fields
    after ``predicate`` are ``timeline.Fact``'s, in order (tests/packs/kg/test_fact_fields_in_step.py)."""

    predicate: str
    fact_id: int
    version_id: int
    object_id: int | None
    object_value: str | None
    object_text: str
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
    recorded_at: datetime

    # -- to and from the timeline's mutable Fact --------------------------------------------------------------
    def fact(self, stored: tuple | None = None) -> Fact:
        """A mutable copy for the supersession algorithm; it remembers the row it came from (``stored``, the
        cache's own tuple, when given), which :func:`stored_row` reuses while the fact is unchanged."""
        return Fact(self.fact_id, self.version_id,
                    f"e:{self.object_id}" if self.object_id is not None else f"v:{self.object_value}",
                    self.object_id, self.object_value, self.object_text, self.valid_from, self.valid_to,
                    self.valid_to_source, self.superseded_by, self.coexisting, self.confidence,
                    self.combined_confidence, self.evidence_count, self.source_id, self.first_recorded_at,
                    self.recorded_at, False, False, self if stored is None else stored)

    # -- to the verbs' result type -----------------------------------------------------------------------------
    def out(self, subject_id: int, subject_name: str, retracted_at: datetime | None = None) -> FactOut:
        return FactOut(
            fact_id=self.fact_id, version_id=self.version_id, subject={"id": subject_id, "name": subject_name},
            predicate=self.predicate, object=self.object_text, object_id=self.object_id,
            literal=self.object_value is not None, valid_from=self.valid_from, valid_to=self.valid_to,
            recorded_at=self.first_recorded_at, version_recorded_at=self.recorded_at, retracted_at=retracted_at,
            confidence=self.confidence, combined_confidence=self.combined_confidence,
            evidence_count=self.evidence_count, source_id=self.source_id, superseded_by=self.superseded_by,
            coexisting=self.coexisting)


# fields a stored row is filtered on before (or without) becoming a FactRow: a cached read converts only its hits
PREDICATE, OBJECT_ID, OBJECT_VALUE, VALID_FROM, VALID_TO, FACT_ID = (
    FactRow._fields.index(n) for n in ("predicate", "object_id", "object_value", "valid_from", "valid_to", "fact_id"))


# a FactRow over a stored row, made in C (FactRow._make adds a Python call per row to every cached read)
as_fact_row = partial(tuple.__new__, FactRow)


FIRST_RECORDED_AT, RECORDED_AT = FactRow._fields.index("first_recorded_at"), FactRow._fields.index("recorded_at")


def intern_times(row: tuple, interned: dict[Any, Any]) -> tuple:
    """A stored row whose time values are the ones in ``interned`` (one object per instant: memory)."""
    t = interned.setdefault
    vf, vt, fr, rec = row[VALID_FROM], row[VALID_TO], row[FIRST_RECORDED_AT], row[RECORDED_AT]
    return (*row[:VALID_FROM], vf if vf is None else t(vf, vf), vt if vt is None else t(vt, vt),
            *row[VALID_TO + 1:FIRST_RECORDED_AT], t(fr, fr), t(rec, rec))


def stored_row(predicate: str, f: Fact, interned: dict[Any, Any]) -> tuple:
    """The stored row of ``f`` once written; time values shared through ``interned`` (one object per instant)."""
    if f.row is not None and not (f.interval_changed or f.evidence_changed):
        # untouched by this call: the row it was read from is still exact (the cache's own tuple is reused)
        return f.row if type(f.row) is tuple else tuple(f.row)
    t = interned.setdefault
    return (predicate, f.fact_id, f.version_id, f.object_id, f.object_value, f.object_text,
            f.valid_from if f.valid_from is None else t(f.valid_from, f.valid_from),
            f.valid_to if f.valid_to is None else t(f.valid_to, f.valid_to), f.valid_to_source, f.superseded_by,
            f.coexisting, f.confidence, f.combined_confidence, f.evidence_count, f.source_id,
            t(f.first_recorded_at, f.first_recorded_at), t(f.recorded_at, f.recorded_at))


def subject_rows(rows: list[tuple]) -> list[tuple[int, FactRow]]:
    """``(subject_id, FactRow)`` of SQL rows selected as ``subject_id, {ROW_COLUMNS}``."""
    return [(r[0], as_fact_row(r[1:])) for r in rows]

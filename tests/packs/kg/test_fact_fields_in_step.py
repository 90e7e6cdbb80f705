"""The stored row of a fact version (``fact_rows.FactRow``, an immutable tuple the cache keeps for the life of the
process) and the supersession algorithm's mutable copy (``timeline.Fact``, a slotted dataclass it edits in place)
are two shapes of one record, kept apart for speed (adr/0014-kg-scale.md). Their shared fields are one list: this
test fails when a field is added to, renamed in or reordered in one of them and not the other (issue 43)."""
from __future__ import annotations

import dataclasses

from palimpsest_memory.packs.kg.fact_rows import ROW_COLUMNS, FactRow
from palimpsest_memory.packs.kg.timeline import Fact

ROW_ONLY = ("predicate",)  # the row's: a timeline is one (subject, predicate), so its facts do not repeat it
FACT_ONLY = ("object_key", "interval_changed", "evidence_changed", "row")  # derived, or the algorithm's bookkeeping


def test_a_fact_has_every_field_of_its_row_in_the_same_order() -> None:
    row = [f for f in FactRow._fields if f not in ROW_ONLY]
    fact = [f.name for f in dataclasses.fields(Fact) if f.name not in FACT_ONLY]
    assert fact == row


def test_the_row_reads_the_columns_it_names() -> None:
    assert [c.strip() for c in ROW_COLUMNS.split(",")] == list(FactRow._fields)


def test_a_row_survives_the_trip_through_the_timeline() -> None:
    from datetime import datetime

    when = datetime(2024, 5, 1)
    row = FactRow("works_at", 7, 70, 3, None, "Acme", when, None, None, None, False, 0.9, 0.95, 2, "m:1", when, when)
    fact = row.fact()
    assert fact.object_key == "e:3" and fact.row is row
    assert tuple(getattr(fact, f) for f in FactRow._fields if f not in ROW_ONLY) == row[1:]

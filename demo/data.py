"""The demo's data, loaded one way for `make demo`, the web view's browser tests and the README screenshots.

The sample conversation is imported, then the facts it grounds are asserted *on the days they were said* (the
runtime clock is moved to each source note's time), so transaction time means something: a ``known_at`` slider
replays what was believed when. Beside the supersessions the conversation makes, the data holds one retraction
(a cache misheard and corrected) and one late arrival (Orion's SQLite prototype, learned in May about the
previous November), note-to-note edges, stored PageRank, and brain feedback for the namespace and for Ada.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable

from palimpsest_memory.packs.memory.commands import import_conversations
from palimpsest_memory.packs.memory.importers.conversations import parse_jsonl
from palimpsest_memory.runtime import Runtime

HERE = Path(__file__).resolve().parent
SAMPLE = HERE / "sample_conversation.jsonl"
NOW = "2026-05-20T09:00:00"  # the demo's "today": just after the conversation, so decay and recency show
IMPORTED_AT = datetime(2026, 1, 12, 9, 0)

# (subject, predicate, object, valid_from, valid_to, source turn): asserted at the source turn's time
FACTS = [
    ("Orion", "uses_database", "Postgres", "2026-01-12", None, "orion/k3"),
    ("Ben", "works_on", "Orion", "2026-01-12", None, "orion/k5"),
    ("Chloe", "works_on", "Vega", "2026-01-20", None, "vega/v1"),
    ("Vega", "uses_cache", "Redis", "2026-01-20", None, "vega/v1"),
    ("Orion", "uses_database", "CockroachDB", "2026-04-02", None, "orion/p4"),
    ("Ben", "works_on", "Vega", "2026-05-18", None, "orion/r1"),
    ("Chloe", "works_on", "Orion", "2026-05-18", None, "orion/r1"),
]
LATE_NOTE = ("Looking back for the audit: before the kickoff, Orion's prototype ran on SQLite from November "
             "until we moved to Postgres.")
LINKS = [("orion/p3", "orion/p1", "triggered_by"), ("orion/p4", "orion/k3", "contradicts"),
         ("orion/p4", "orion/p3", "supports"), ("vega/r2", "vega/v1", "supports"),
         ("orion/r1", "vega/r2", "related_to"), ("orion/m1", "orion/k5", "related_to")]
FEEDBACK = [  # (day, actor, query, rank of the note given feedback, signal)
    ("2026-05-19T09:00", None, "why did we choose Postgres for Orion?", 0, "useful"),
    ("2026-05-19T11:00", None, "what cache does Vega use and why?", 0, "useful"),
    ("2026-05-19T15:00", None, "when do we deploy Vega?", 2, "not_useful"),
    ("2026-05-19T17:00", "ada", "which problems came up with the database?", 0, "useful"),
    ("2026-05-20T08:00", "ada", "what did Ben do in April?", 1, "useful"),
    ("2026-05-20T08:30", "ada", "who leads Vega now?", 0, "correction"),
]


@dataclass
class Clock:
    """A settable runtime clock: the demo says when each thing was learned."""

    at: datetime = IMPORTED_AT

    def __call__(self) -> datetime:
        return self.at


def open_demo(db: str | Path) -> tuple[Runtime, Clock]:
    clock = Clock()
    return Runtime.open(db, clock=clock), clock


def load(rt: Runtime, clock: Clock, say: Callable[[str], Any] = lambda _: None) -> dict[str, Any]:
    """Load the whole demo into an open runtime whose clock is ``clock``; returns the import counts and note ids."""
    clock.at = IMPORTED_AT
    convs = parse_jsonl(SAMPLE)
    when = {f"{c.scope}/{t.turn_id}": t.occurred_at for c in convs for t in c.turns}
    for extra in ("Orion", "Vega"):
        rt.call("kg.upsert_entity", {"name": extra, "kind": "project", "aliases": [f"the {extra.lower()} project"]})
    counts = import_conversations(rt, convs, "demo", None)
    notes = counts["note_ids"]
    say(f"{counts['created']} notes from {counts['conversations']} scopes")

    def learned(turn: str, minutes: int = 5) -> None:
        clock.at = _naive(when[turn]) + timedelta(minutes=minutes)

    # a misheard cache, retracted twenty minutes later (the retraction the timeline shows)
    learned("vega/v1")
    wrong = rt.call("kg.assert_fact", {"subject": "Vega", "predicate": "uses_cache", "object": "Memcached",
                                       "valid_from": "2026-01-20", "source_id": f"m:{notes['vega/v1']}"})
    clock.at += timedelta(minutes=20)
    rt.call("kg.retract_fact", {"fact_id": wrong.fact.fact_id, "reason": "misheard: Chloe said Redis"})
    for subject, predicate, obj, since, until, src in sorted(FACTS, key=lambda f: when[f[5]]):
        learned(src, 30 if src == "vega/v1" else 5)
        out = rt.call("kg.assert_fact", {"subject": subject, "predicate": predicate, "object": obj,
                                         "valid_from": since, "valid_to": until, "source_id": f"m:{notes[src]}"})
        closed = ", ".join(f"{f.object} (now ends {f.valid_to:%Y-%m-%d})" for f in out.superseded)
        say(f"assert {subject} {predicate} {obj} from {since}" + (f"  -> closes {closed}" if closed else ""))
    # a late arrival: learned on May 19th about the previous November
    clock.at = datetime(2026, 5, 19, 12, 0)
    late = rt.call("memory.remember", {"content": LATE_NOTE, "scope": "orion",
                                       "occurred_at": "2026-05-19T12:00:00"}).note
    notes["orion/late"] = late.id
    rt.call("kg.assert_fact", {"subject": "Orion", "predicate": "uses_database", "object": "SQLite",
                               "valid_from": "2025-11-01", "valid_to": "2026-01-12", "source_id": f"m:{late.id}"})
    say("assert Orion uses_database SQLite from 2025-11-01 to 2026-01-12  (late: learned 2026-05-19)")
    for src, dst, relation in LINKS:
        rt.call("memory.link", {"source_id": notes[src], "target_id": notes[dst], "relation": relation})
    clock.at = datetime(2026, 5, 19, 8, 0)
    rt.call("kg.centrality", {})
    rt.call("brain.profile", {"name": "ada", "actor": "ada"})
    for day, actor, query, rank, signal in FEEDBACK:
        clock.at = datetime.fromisoformat(day)
        res = rt.call("memory.recall", {"query": query, "limit": 5, "now": NOW}, actor=actor)
        if len(res.results) > rank:
            rt.call("brain.feedback", {"recall_id": res.recall_id, "note_id": res.results[rank].note.id,
                                       "signal": signal}, actor=actor)
    clock.at = datetime.fromisoformat(NOW)
    return counts


def _naive(value: Any) -> datetime:
    dt = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return dt.replace(tzinfo=None)


def build(db: str | Path, say: Callable[[str], Any] = lambda _: None) -> Path:
    """A demo database at ``db`` (created), closed again: what `pal --db DB serve` then shows."""
    rt, clock = open_demo(db)
    with rt:
        load(rt, clock, say)
    return Path(db)


if __name__ == "__main__":
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "demo.duckdb")
    build(target, print)
    print(f"demo data in {target}: browse it with `pal --db {target} serve`")

"""The main job, end to end, on the embedded default: import a conversation, recall, show a supersession.

Runs on a fresh machine with nothing beside the repository (no network, no ../shared): the conversation is
`demo/sample_conversation.jsonl`, an original two-project chat in which a decision changes over time.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from packs.memory.commands import import_conversations
from packs.memory.importers import parse_jsonl
from runtime import Runtime

HERE = Path(__file__).resolve().parent
NOW = "2026-05-20T09:00:00"  # the demo's "today": just after the conversation, so decay and recency show
QUERIES = [
    ("why did we choose Postgres for Orion?", {"scope": "orion"}),
    ("what cache does Vega use and why?", {}),
    ("when do we deploy Vega?", {}),
    ("which problems came up with the database?", {"kind": "problem"}),
]


def rule(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 76 - len(title)))


def main() -> int:
    db = Path(tempfile.mkdtemp(prefix="palimpsest-demo-")) / "demo.duckdb"
    with Runtime.open(db) as rt:
        rule("packs and verbs")
        for name, pack in rt.catalog.packs.items():
            public = [v.name for v in pack.verbs.values() if v.visibility.value == "public"]
            print(f"{name} {pack.version}: {', '.join(public)}")

        rule("import demo/sample_conversation.jsonl")
        convs = parse_jsonl(HERE / "sample_conversation.jsonl")
        for extra in ("Orion", "Vega"):
            rt.call("kg.upsert_entity", {"name": extra, "kind": "project", "aliases": [f"the {extra.lower()} project"]})
        counts = import_conversations(rt, convs, "demo", None)
        print(f"{counts['created']} notes from {counts['conversations']} scopes into {db}")

        rule(f"recall (now = {NOW})")
        for query, filters in QUERIES:
            res = rt.call("memory.recall", {"query": query, "limit": 3, "include_breakdown": True, "now": NOW,
                                            **filters})
            print(f"\n? {query}  {filters or ''}")
            for hit in res.results:
                b = hit.breakdown
                print(f"  {hit.score:.3f}  [{hit.note.scope}/{hit.note.kind or '-'}] {hit.note.content}")
                print(f"         relevance {b.relevance:.2f}  salience {b.effective_salience:.2f}  "
                      f"recency {b.recency:.2f}")

        rule("the knowledge graph supersedes by itself")
        notes = counts["note_ids"]
        for subject, predicate, obj, since, src in [
            ("Orion", "uses_database", "Postgres", "2026-01-12", "orion/k3"),
            ("Orion", "uses_database", "CockroachDB", "2026-04-02", "orion/p4"),
            ("Ben", "works_on", "Orion", "2026-01-12", "orion/k5"),
            ("Ben", "works_on", "Vega", "2026-05-18", "orion/r1"),
        ]:
            out = rt.call("kg.assert_fact", {"subject": subject, "predicate": predicate, "object": obj,
                                             "valid_from": since, "source_id": f"m:{notes[src]}"})
            closed = ", ".join(f"{f.object} (now ends {f.valid_to:%Y-%m-%d})" for f in out.superseded)
            print(f"assert {subject} {predicate} {obj} from {since}" + (f"  -> closes {closed}" if closed else ""))

        print("\nfact history: Orion uses_database")
        for f in rt.call("kg.fact_history", {"subject": "Orion", "predicate": "uses_database"}).facts:
            until = f"{f.valid_to:%Y-%m-%d}" if f.valid_to else "now"
            print(f"  {f.object:<12} {f.valid_from:%Y-%m-%d} -> {until:<10} source {f.source_id}"
                  + (f"  superseded by fact {f.superseded_by}" if f.superseded_by else ""))
        for when in ("2026-02-01", "2026-06-01"):
            facts = rt.call("kg.facts", {"subject": "Orion", "predicate": "uses_database", "as_of": when}).facts
            print(f"  as of {when}: Orion uses {', '.join(f.object for f in facts)}")
        before = rt.call("kg.facts", {"subject": "Ben", "predicate": "works_on", "as_of": "2026-05-01"}).facts
        print(f"  where did Ben work before the May change? {', '.join(f.object for f in before)}")

        rule("memory.explain: scoped recall + what the graph knows")
        why = "why did we choose Postgres for the orion project?"
        res = rt.call("memory.explain", {"query": why, "limit": 3})
        print(f"? {why}\n  entities: {', '.join(e.name for e in res.entities_detected)}; scope: {res.scope}")
        for hit in res.memories:
            print(f"  {hit.score:.3f}  [{hit.note.kind or '-'}] {hit.note.content}")
        for f in res.kg_facts + res.kg_history:
            state = "current" if f.current else f"no longer current (now: {', '.join(f.current_objects)})"
            print(f"  fact: {f.subject} {f.predicate} {f.object} — {state}; source note {f.source_note_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

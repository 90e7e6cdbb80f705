"""The main job, end to end, on the embedded default: import a conversation, recall, show a supersession.

Runs on a fresh machine with nothing beside the repository (no network, no ../shared): the conversation is
`demo/sample_conversation.jsonl`, an original two-project chat in which a decision changes over time.
"""
from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data import NOW, load, open_demo  # noqa: E402  (demo/data.py: the one loader of the demo data)
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
    rt, clock = open_demo(db)
    with rt:
        rule("packs and verbs")
        for name, pack in rt.catalog.packs.items():
            public = [v.name for v in pack.verbs.values() if v.visibility.value == "public"]
            print(f"{name} {pack.version}: {', '.join(public)}")

        rule("import demo/sample_conversation.jsonl; facts asserted on the days they were said")
        load(rt, clock, print)
        print(f"into {db}")

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
    rule("look at it")
    if importlib.util.find_spec("uvicorn") is None:  # `make demo` installs the core only; the web view is an extra
        print(f"{Path(sys.executable).parent / 'pip'} install -e '.[http]'   # the web view's extra (make test has it)")
    pal = Path(sys.executable).parent / "pal"  # the venv's: `pal` is on PATH only once the venv is (README)
    print(f"{pal} --db {db} serve      # then open the printed URL: recall, notes, timelines, graph, brain, namespaces")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""LoCoMo R@k through `memory.recall` with and without merging repeated texts (issue 42 item 4, ADR 0039).

Usage: python bench/locomo_dupes.py [--file PATH] [--out bench/results/locomo_dupes.md]

The file is imported twice into fresh DuckDB stores with the importer's fields (`memory.import_conversations`, one
shared store, default configuration): once with ``duplicates="keep"`` (every turn a note, as before) and once
with ``duplicates="merge"`` (a turn whose text, after NFKC, case folding and white space, a live note of its
conversation already says is counted on that note). Every question is asked with ``memory.recall(query,
scope=<conversation>, limit=50)`` and scored as bench/locomo.py scores (same evidence normalisation). A merged
note stands for every turn merged into it (the import returns each turn's note id): a hit on it finds each of
those turns' dia ids, since it holds their text word for word. "strict" counts only the note's first turn.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from locomo import DEFAULT_FILE, bootstrap_ci, load  # noqa: E402
from palimpsest_memory.packs.memory.importers.conversations import parse_locomo  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402

KS = (5, 10, 25)


def run(path: Path, mode: str, twice: bool = False) -> dict:
    convs = load(path)
    db = Path(tempfile.mkdtemp(prefix="pal-dupes-")) / "locomo.duckdb"
    with Runtime.open(db, env={"PALIMPSEST_CONFIG_DISABLED": "1"}) as rt:
        parsed = parse_locomo(path)
        payload = [{"scope": c.scope, "speakers": c.speakers, "notes": c.notes("locomo")} for c in parsed]
        turns = [(c.scope, t.turn_id) for c in parsed for t in c.turns]
        if twice:  # an agent that remembers every turn again, without keys (a re-import keyed would replay)
            payload = [{**c, "notes": [{k: v for k, v in n.items() if k != "key"} for n in c["notes"]]}
                       for c in payload]
            first = rt.call("memory.import_conversations", {"conversations": payload, "duplicates": mode},
                            internal=True)
            turns = turns + turns
        res = rt.call("memory.import_conversations", {"conversations": payload, "duplicates": mode}, internal=True)
        ids = (first.ids + res.ids) if twice else res.ids
        dias: dict[int, list[str]] = defaultdict(list)  # note id -> the dia ids it holds, first turn first
        for (_, dia), nid in zip(turns, ids):
            dias[nid].append(dia)
        rows, strict, lat = [], [], []
        for conv in convs:
            for qa in conv.qa:
                t = time.perf_counter()
                hits = rt.call("memory.recall", {"query": qa["q"], "scope": conv.sid, "limit": 50}).results
                lat.append(time.perf_counter() - t)
                ev = set(qa["ev"])
                for out, expand in ((rows, True), (strict, False)):  # the turns the top k notes hold
                    held = [dias[h.note.id] if expand else [h.note.source_id] for h in hits]
                    out.append([1.0 if not ev else len(ev & {d for x in held[:k] for d in x}) / len(ev)
                                for k in KS])
    return {"rows": np.array(rows) * 100, "strict": np.array(strict) * 100,
            "created": res.created + (first.created if twice else 0),
            "seen_again": res.seen_again + (first.seen_again if twice else 0), "turns": len(turns),
            "merged_notes": sum(len(v) > 1 for v in dias.values()),
            "p50_ms": float(np.median(lat) * 1000),
            "examples": [v for v in dias.values() if len(v) > 1][:5]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "locomo_dupes.md")
    a = ap.parse_args(argv)
    load0 = open("/proc/loadavg").read().split()[:3]
    keep, merge = run(a.file, "keep"), run(a.file, "merge")
    d, lo, hi = bootstrap_ci(merge["rows"][:, 1], keep["rows"][:, 1])
    ds, los, his = bootstrap_ci(merge["strict"][:, 1], keep["rows"][:, 1])
    cell = lambda r: " | ".join(f"{x:.1f}" for x in r.mean(axis=0))  # noqa: E731
    lines = [f"# LoCoMo with and without merging repeated texts ({a.file.name})", "",
             f"Generated {datetime.now():%Y-%m-%d %H:%M} by `python bench/locomo_dupes.py`; /proc/loadavg at the "
             f"start {' '.join(load0)}, at the end {' '.join(open('/proc/loadavg').read().split()[:3])}. "
             f"{len(keep['rows'])} questions, {keep['turns']} turns, default configuration (WordLlama), one shared "
             "DuckDB store, `memory.recall(query, scope, limit=50)`.", "",
             "| import | notes | turns merged | R@5 | R@10 | R@25 | Δ R@10 vs keep [95 % paired bootstrap] | "
             "recall p50 ms |", "|---|---|---|---|---|---|---|---|",
             f"| duplicates=keep | {keep['created']} | 0 | {cell(keep['rows'])} | | {keep['p50_ms']:.1f} |",
             f"| duplicates=merge (a hit finds every merged turn) | {merge['created']} | {merge['seen_again']} | "
             f"{cell(merge['rows'])} | {d:+.2f} [{lo:+.2f}, {hi:+.2f}] | {merge['p50_ms']:.1f} |",
             f"| duplicates=merge, strict (first turn only) | {merge['created']} | {merge['seen_again']} | "
             f"{cell(merge['strict'])} | {ds:+.2f} [{los:+.2f}, {his:+.2f}] | |", "",
             f"{merge['seen_again']} turns were merged into {merge['merged_notes']} notes; e.g. "
             + "; ".join(", ".join(e) for e in merge["examples"]) + "."]
    keep2, merge2 = run(a.file, "keep", twice=True), run(a.file, "merge", twice=True)
    d2, lo2, hi2 = bootstrap_ci(merge2["rows"][:, 1], keep2["rows"][:, 1])
    lines += ["", "Every turn remembered twice (the file imported twice without keys):", "",
              "| import | notes | turns merged | R@5 | R@10 | R@25 | Δ R@10 vs keep | recall p50 ms |",
              "|---|---|---|---|---|---|---|---|",
              f"| twice, duplicates=keep | {keep2['created']} | 0 | {cell(keep2['rows'])} | | {keep2['p50_ms']:.1f} |",
              f"| twice, duplicates=merge | {merge2['created']} | {merge2['seen_again']} | {cell(merge2['rows'])} | "
              f"{d2:+.2f} [{lo2:+.2f}, {hi2:+.2f}] | {merge2['p50_ms']:.1f} |"]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

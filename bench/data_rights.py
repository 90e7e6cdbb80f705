"""Forget and export throughput at N notes (issue 17; ADR 0018).

Usage: python bench/data_rights.py [--notes 100000] [--embedder wordllama] [--out bench/results/data_rights.md]

Builds one store of N synthetic notes (threads of 20 turns, a few words each, through memory.remember_many with
the configured embedder; 1 fact per 100 notes grounded by a note, 1 note edge per 100 notes), closes it, then in
fresh runtimes over that file measures: `pal export` of the namespace (runtime/exportfile.py), the import of that
file into an empty store (check pass + write pass + index rebuild), and memory.forget of 1 note (x3, median), 1,000
notes by ids and 10,000 notes by a filter — each including the store-file rewrite that follows a forget, whose
share is reported (runtime/compact.py logs it; measured here by timing compact.erase_bytes() alone on the same file).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palimpsest_memory.runtime import Runtime, exportfile  # noqa: E402
from palimpsest_memory.runtime import compact as compaction  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}
WORDS = ("river harbour lantern orchard violet granite meadow copper falcon willow ember quartz maple tide "
         "thunder saffron glacier cobalt juniper amber").split()


def open_rt(path: Path, embedder: str) -> Runtime:
    return Runtime.open(str(path), config={"packs": {"memory": {"embedder": embedder}}}, env=ENV)


def build(path: Path, n: int, embedder: str) -> float:
    start = time.perf_counter()
    rt = open_rt(path, embedder)
    try:
        batch = 2000
        for lo in range(0, n, batch):
            notes = [{"content": f"turn {i}: {WORDS[i % 20]} {WORDS[(i * 7) % 20]} {WORDS[(i * 13) % 20]} near "
                                 f"the {WORDS[(i * 3) % 20]} in conversation {i // 20}",
                      "thread": f"c{i // 20}", "scope": f"s{i % 10}"} for i in range(lo, min(n, lo + batch))]
            ids = rt.call("memory.remember_many", {"notes": notes}).ids
            facts = [{"subject": f"Person {ids[j] % 500}", "predicate": "likes", "object": WORDS[j % 20],
                      "literal": True, "source_id": f"m:{ids[j]}"} for j in range(0, len(ids), 100)]
            rt.call("kg.assert_facts", {"facts": facts})
            for j in range(1, len(ids), 100):
                rt.call("memory.link", {"source_id": ids[j], "target_id": ids[j - 1], "relation": "supports"})
    finally:
        rt.close()
    return time.perf_counter() - start


def timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=100_000)
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "data_rights.md"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pal-rights-"))
    src = work / "src.duckdb"
    load = [os.getloadavg()]
    build_s = build(src, args.notes, args.embedder)
    size_mb = src.stat().st_size / 1e6

    rt = open_rt(src, args.embedder)
    try:
        out_file = work / "export.jsonl"
        with out_file.open("w", encoding="utf-8") as f:
            export_s, records = timed(lambda: exportfile.export_namespace(rt, f))
    finally:
        rt.close()
    load.append(os.getloadavg())
    dst = work / "dst.duckdb"
    rt = open_rt(dst, args.embedder)
    try:
        import_s, _ = timed(lambda: exportfile.import_file(rt, out_file, "copy"))
    finally:
        rt.close()
    load.append(os.getloadavg())

    rt = open_rt(src, args.embedder)
    try:
        compact_s = [compaction.erase_bytes(rt) for _ in range(3)]
        ids = [n.id for n in rt.call("memory.list", {"limit": 1000, "descending": True}).notes]
        one = [timed(lambda i=i: rt.call("memory.forget", {"ids": [i], "reason": "bench"}))[0] for i in ids[:3]]
        thousand_s, _ = timed(lambda: rt.call("memory.forget", {"ids": ids[3:1003] or ids[3:], "reason": "bench"}))
        dry_s, dry = timed(lambda: rt.call("memory.forget", {"scope": "s3", "reason": "bench", "dry_run": True}))
        scope_s, res = timed(lambda: rt.call("memory.forget", {"scope": "s3", "reason": "bench"}))
        left = rt.call("memory.count", {}).count
    finally:
        rt.close()
    load.append(os.getloadavg())
    n_scope = len(res.note_ids)
    med_compact = statistics.median(compact_s)
    cmd = f"python bench/data_rights.py --notes {args.notes} --embedder {args.embedder}"
    cpu = platform.processor() or platform.machine()
    lines = [
        "# Forget and export throughput (issue 17, ADR 0018)", "",
        f"Command: `{cmd}` — {datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores ({cpu}), "
        f"load average (1/5/15 min) at the start {load[0][0]:.2f}/{load[0][1]:.2f}/{load[0][2]:.2f}, "
        f"after export {load[1][0]:.2f}, after import {load[2][0]:.2f}, after the forgets {load[3][0]:.2f}.",
        "",
        f"Store: {args.notes:,} notes ({args.embedder} vectors), {args.notes // 100:,} facts grounded by notes, "
        f"{args.notes // 100:,} note edges; {size_mb:.0f} MB; built in {build_s:.0f} s.", "",
        "| operation | time | throughput |", "|---|---|---|",
        f"| export the namespace (`pal export`) | {export_s:.1f} s | {records / export_s:,.0f} records/s, "
        f"{args.notes / export_s:,.0f} notes/s ({records:,} records, {out_file.stat().st_size / 1e6:.0f} MB) |",
        f"| import it into an empty store (check + write + index rebuild) | {import_s:.1f} s | "
        f"{records / import_s:,.0f} records/s |",
        f"| store-file rewrite alone (`runtime/compact.py`, median of 3) | {med_compact:.2f} s | "
        f"{size_mb / med_compact:,.0f} MB/s |",
        f"| forget 1 note by id (median of 3, rewrite included) | {statistics.median(one):.2f} s | — |",
        f"| forget 1,000 notes by ids (one call) | {thousand_s:.2f} s | {1000 / thousand_s:,.0f} notes/s |",
        f"| dry run of a scope filter ({len(dry.note_ids):,} notes) | {dry_s:.2f} s | — |",
        f"| forget a scope filter ({n_scope:,} notes, one call) | {scope_s:.2f} s | {n_scope / scope_s:,.0f} "
        f"notes/s |", "",
        f"{left:,} notes left afterwards. A forget costs about one store-file rewrite ({med_compact:.2f} s here) plus "
        "the deletes: forget in batches (ids or a filter), not one note per call. Single runs except where a median "
        "is stated.", ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

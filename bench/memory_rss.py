"""Memory at open (issue 16, item 14): resident memory per note after opening a store of N notes.

Usage: python bench/memory_rss.py [--sizes 10000,100000] [--keep DIR] [--profile] [--out bench/results/memory_rss.md]

For each size a store is built once through the runtime (LoCoMo turns replicated into new conversations, as
``bench/memory_perf.py`` does, embedded with the default embedder, closed so the full-text snapshot is written).
Then a fresh process opens it and reports its RSS (``/proc/self/status`` VmRSS, after ``gc.collect()``); another
fresh process does the same with an empty store. Per note = (RSS of N − RSS of empty) / N. The vectors are the
rows the index must hold — float16, 2 bytes × dims × models per note (ADR 0030), plus the int8 copy a namespace
under 20,000 rows scans (ADR 0008); "beyond the vectors" subtracts their allocated bytes. ``--profile`` adds tracemalloc's largest allocation sites still alive after the open.
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from report import write_report  # bench/, this script's folder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def measure(db: str, profile: bool) -> dict:
    """In this (fresh) process: open the store, settle, report RSS and what the index holds."""
    if profile:
        import tracemalloc
        tracemalloc.start(1)
    from palimpsest_memory.runtime import Runtime
    before = rss_kb()
    t = time.perf_counter()
    rt = Runtime.open(db, env=ENV)
    for (ns,) in rt.store.con.execute("SELECT DISTINCT namespace FROM memory.notes").fetchall():
        rt.hold(ns)  # a namespace's index loads at its first call (ADR 0016): load them all, as before
    open_s = time.perf_counter() - t
    gc.collect()
    out = {"rss_kb": rss_kb(), "rss_before_open_kb": before, "open_s": open_s}
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # what is freed but kept by malloc is not the index's
        out["rss_trimmed_kb"] = rss_kb()
    except OSError:
        out["rss_trimmed_kb"] = out["rss_kb"]
    indexes = list(rt.pack_state("memory").index.by_ns.values())
    out["notes"] = sum(len(index.rows) for index in indexes)
    out["vector_bytes"] = sum(v.rows.mat.nbytes + (v._int8._rows.nbytes + v._int8._scale.nbytes if v._int8 else 0)
                              for index in indexes for v in index.vectors.values())  # the rows and the scan's int8 copy
    out["vector_used_bytes"] = sum(v.rows.mat[: v.rows.n].nbytes for index in indexes for v in index.vectors.values())
    if profile:
        snap = tracemalloc.take_snapshot()
        top = snap.statistics("lineno")[:15]
        out["top"] = [(str(s.traceback[0]).replace(str(ROOT) + "/", ""), s.size, s.count) for s in top]
    rt.close()
    return out


def corpus(size: int) -> list[dict]:
    sys.path.insert(0, str(ROOT / "bench"))
    from memory_perf import corpus as perf_corpus
    return perf_corpus(size)[0]


def build(db: Path, size: int, batch: int = 5000) -> float:
    from palimpsest_memory.runtime import Runtime
    notes = corpus(size)
    t = time.perf_counter()
    with Runtime.open(db, env=ENV) as rt:
        for start in range(0, size, batch):
            rt.call("memory.remember_many", {"notes": notes[start:start + batch]})
    return time.perf_counter() - t


def in_child(db: Path, profile: bool) -> dict:
    cmd = [sys.executable, __file__, "--measure", str(db)] + (["--profile"] if profile else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def median_of(times: int, db: Path) -> dict:
    """The median process (by RSS) of ``times`` fresh opens: malloc and DuckDB's threads vary run to run."""
    runs = sorted((in_child(db, False) for _ in range(times)), key=lambda r: r["rss_kb"])
    return runs[len(runs) // 2]


def report(rows: list[dict], empty: dict, args: argparse.Namespace) -> str:
    lines = [
        "# Memory at open (RSS per note)", "",
        f"`python bench/memory_rss.py --sizes {args.sizes}` — {datetime.now():%Y-%m-%d %H:%M}, Python "
        f"{platform.python_version()}, machine load (1-min) {rows[0]['load'][0]:.2f} → {rows[-1]['load'][1]:.2f}.",
        f"Each figure is the median of {args.repeat} fresh processes opening the store (the full-text snapshot restored, as after a clean close);",
        f"an empty store's process is the baseline ({empty['rss_kb'] / 1024:.0f} MB). Per note = (RSS − baseline) / N;",
        "\"trimmed\" is after `malloc_trim(0)` (memory freed during the open but kept by malloc). Vectors: the rows",
        "the index holds (default embedder, 256-d, float16: 512 bytes a note, ADR 0030; plus the int8 copy, 256 bytes",
        "and a scale, in a namespace under 20,000 rows); past 20,000 rows the rows are mapped from the snapshot file",
        "and count whether resident or not. \"Beyond the vectors\" subtracts them. Goal (issue 16.14): ≤ 4 KB/note",
        "beyond the vectors.", "",
        "| notes | open (s) | RSS (MB) | per note | per note, trimmed | vectors / note | beyond vectors | beyond, trimmed |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        n = r["notes"]
        per = (r["rss_kb"] - empty["rss_kb"]) * 1024 / n
        per_t = (r["rss_trimmed_kb"] - empty["rss_trimmed_kb"]) * 1024 / n
        vec = r["vector_bytes"] / n
        lines.append(f"| {n:,} | {r['open_s']:.1f} | {r['rss_kb'] / 1024:.0f} | {per / 1024:.2f} KB | "
                     f"{per_t / 1024:.2f} KB | {vec / 1024:.2f} KB | {(per - vec) / 1024:.2f} KB | "
                     f"{(per_t - vec) / 1024:.2f} KB |")
    if any("top" in r for r in rows):
        r = rows[-1]
        lines += ["", f"Largest allocation sites alive after opening {r['notes']:,} notes (tracemalloc, "
                  "bytes per note):", "", "| site | bytes / note | objects / note |", "|---|---:|---:|"]
        lines += [f"| `{site}` | {size / r['notes']:.0f} | {count / r['notes']:.2f} |" for site, size, count in r["top"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--keep", help="Keep the built stores in this folder (and reuse them when present).")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="Fresh opens per store; the median is reported.")
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "memory_rss.md"))
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(args.measure, args.profile)))
        return 0
    data = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"
    if not data.is_file():
        print(f"skipped: {data} is absent (the benchmark needs ../shared/data)")
        return 0
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pal-rss-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        empty_db = work / "empty.duckdb"
        if not empty_db.exists():
            build(empty_db, 0)
        rows = []
        for size in (int(x) for x in args.sizes.split(",")):
            db = work / f"n{size}.duckdb"
            if not db.exists():
                print(f"building {size:,} notes …", flush=True)
                build(db, size)
            load0 = os.getloadavg()[0]
            empty = median_of(args.repeat, empty_db)
            r = median_of(args.repeat, db)
            r["load"] = (load0, os.getloadavg()[0])
            if args.profile:  # a separate process: tracemalloc's own bookkeeping would inflate the RSS above
                r["top"] = in_child(db, True)["top"]
            rows.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "top"}), flush=True)
        text = report(rows, empty, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

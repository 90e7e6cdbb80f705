"""What recall's information prior costs through the product (issue 19, ADR 0008).

Usage: python bench/prior_cost.py N   (N notes: LoCoMo turns replicated, as bench/memory_perf.py builds them)

Ingests N notes (default config), closes, reopens (the BM25 rows come back from the snapshot), warms the query
embedding cache with 200 LoCoMo questions, then times each recall and, inside it, ``stages.information`` (the
prior's only work: the own information of the matched notes). Prints both medians and the load average.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import memory_perf  # noqa: E402

from palimpsest_memory.packs.memory import stages  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402


def main(size: int) -> str:
    notes, questions, _ = memory_perf.corpus(size)
    qs = questions[:200]
    db = Path(tempfile.mkdtemp(prefix="pal-prior-")) / "prior.duckdb"
    env = {"PALIMPSEST_CONFIG_DISABLED": "1"}
    with Runtime.open(db, env=env) as rt:
        for s in range(0, size, 5000):
            rt.call("memory.remember_many", {"notes": notes[s:s + 5000]})
    orig, lat, tot = stages.information, [], []

    def timed(index, pool):
        t = time.perf_counter()
        out = orig(index, pool)
        lat.append((time.perf_counter() - t) * 1000)
        return out

    stages.information = timed
    try:
        with Runtime.open(db, env=env) as rt:
            for q in qs:
                rt.call("memory.recall", {"query": q})
            lat.clear()
            for q in qs:
                t = time.perf_counter()
                rt.call("memory.recall", {"query": q})
                tot.append((time.perf_counter() - t) * 1000)
    finally:
        stages.information = orig
    return (f"{size} notes: information prior p50 {statistics.median(lat):.2f} ms of recall p50 "
            f"{statistics.median(tot):.2f} ms (excl. embedding, 200 queries, reopened store); "
            f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))

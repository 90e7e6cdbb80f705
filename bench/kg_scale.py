"""kg at scale (synthetic): bulk assert with supersession, as_of lookup latency, PageRank over many edges.

Usage: .venv/bin/python bench/kg_scale.py [--facts 1000000] [--edges 1000000] [--batch 10000] [--lookups 1000]
       [--db :memory:]

Facts: subjects S0..S(n/10), 10 'works_at' facts each, valid_from years shuffled so most arrive late (inserted
into the middle of their timeline) and one in ten re-asserts an existing value (evidence). Edges: random
'supports'/'related_to' links between n/4 memory-note nodes, loaded with kg.link_many.
"""
from __future__ import annotations

import argparse
import random
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palimpsest_memory.packs.kg import pack as kg_pack  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402
from palimpsest_memory.runtime.testing import open_test_runtime  # noqa: E402



def time_lookups(rt: Runtime, rng: random.Random, n_subj: int, n: int) -> tuple[float, float]:
    """p50 and p95 ms of ``n`` random as_of lookups through Runtime.call."""
    lat = []
    for _ in range(n):
        s, y = rng.randrange(n_subj), rng.randrange(1950, 2030)
        t = time.perf_counter()
        rt.call("kg.facts", {"subject": f"S{s}", "predicate": "works_at", "as_of": f"{y}-06-01"})
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    return statistics.median(lat), lat[int(0.95 * len(lat))]

def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--lookups", type=int, default=1000)
    ap.add_argument("--db", default=":memory:")
    args = ap.parse_args()
    rng = random.Random(1)
    rt = open_test_runtime(kg_pack, path=args.db)
    n_subj = max(1, args.facts // 10)
    facts = []
    for s in range(n_subj):
        years = rng.sample(range(1950, 2030), 10)
        for k, y in enumerate(years):
            obj = f"Org{(s * 7 + (k - 1 if k and rng.random() < 0.1 else k)) % 50000}"
            facts.append((f"S{s}", obj, str(y)))  # tuples: the bench's own 1M dicts would load Python's GC
    rng.shuffle(facts)
    t0, batch_times, created, superseded = time.perf_counter(), [], 0, 0
    for i in range(0, len(facts), args.batch):
        t = time.perf_counter()
        batch = [{"subject": s, "predicate": "works_at", "object": o, "valid_from": y} for s, o, y in
                 facts[i:i + args.batch]]
        res = rt.call("kg.assert_facts", {"facts": batch})
        batch_times.append((time.perf_counter() - t, len(facts[i:i + args.batch])))
        created, superseded = created + res.created, superseded + res.superseded
    load = time.perf_counter() - t0
    rows = rt.store.con.execute("SELECT count(*) FROM kg.facts").fetchone()[0]
    rates = [n / t for t, n in batch_times]
    print(f"assert_facts: {len(facts):,} facts in {load:.1f} s = {len(facts) / load:,.0f} facts/s overall "
          f"(median batch {statistics.median(rates):,.0f}/s, first {rates[0]:,.0f}/s, last {rates[-1]:,.0f}/s); "
          f"created {created:,}, superseded {superseded:,}; {rows:,} version rows")
    p50, p95 = time_lookups(rt, rng, n_subj, args.lookups)
    print(f"kg.facts as_of lookup at {rows:,} rows: p50 {p50:.2f} ms, "
          f"p95 {p95:.2f} ms ({args.lookups} lookups, through Runtime.call)")
    # what a reopened runtime pays once: the first kg call of a namespace builds its cache from the store
    rt.pack_state("kg").facts.namespaces.clear()
    t = time.perf_counter()
    rt.call("kg.facts", {"subject": "S0", "predicate": "works_at"})
    print(f"cache rebuild (first call after a reopen): {time.perf_counter() - t:.2f} s")
    p50, p95 = time_lookups(rt, rng, n_subj, args.lookups)  # each subject's rows now come from the columns
    print(f"kg.facts as_of lookup after the rebuild: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    if args.edges:
        notes = max(2, args.edges // 4)
        t0 = time.perf_counter()
        for i in range(0, args.edges, args.batch):
            links = []
            for _ in range(min(args.batch, args.edges - i)):
                a, b = rng.randrange(notes), rng.randrange(notes)
                b = b if b != a else (a + 1) % notes
                links.append({"src": f"m:{a}", "dst": f"m:{b}", "relation": rng.choice(["supports", "related_to"]),
                              "weight": rng.choice([0.5, 1.0, 2.0])})
            rt.call("kg.link_many", {"links": links})
        edge_load = time.perf_counter() - t0
        n_edges = rt.store.con.execute("SELECT count(*) FROM kg.edges").fetchone()[0]
        times = []
        for _ in range(3):
            t = time.perf_counter()
            res = rt.call("kg.centrality", {"node_types": ["m"], "include_facts": False, "top": 10})
            times.append(time.perf_counter() - t)
        print(f"link_many: {n_edges:,} edges in {edge_load:.1f} s; kg.centrality (PageRank 15 it.) over "
              f"{res.edges:,} edges / {res.nodes:,} nodes: median {statistics.median(times):.2f} s "
              f"(runs {', '.join(f'{x:.2f}' for x in times)}), including SQL extraction and storing every score")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB")
    rt.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Memory graph layer speed: memory.walk latency at 100k notes / 300k edges, memory.centrality at 1M edges.

Usage: python bench/memory_graph.py [--notes 100000] [--edges 300000] [--big-edges 1000000] [--queries 200]
                                    [--out bench/results/memory_graph.md]

Notes are LoCoMo turns (../shared/data) replicated into renamed conversations (as bench/memory_perf.py), embedded
with the default embedder (wordllama). Edges: two thirds join a note to another turn of the same thread at
most 8 turns away (related by construction), one third join two random notes; relations drawn 40 % supports,
30 % related_to, 15 % triggered_by, 15 % contradicts, all written through memory.link_many. Queries are LoCoMo
questions. Latencies are through the runtime (params validation, transaction, result models), medians and p95
over the queries; the machine is shared (2 cores), so compare rows of one run, not runs.
"""
from __future__ import annotations

import argparse
import platform
import resource
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memory_perf import corpus, pct  # noqa: E402
from palimpsest_memory.packs.kg.pack import pack as kg_pack  # noqa: E402
from palimpsest_memory.packs.memory.pack import pack as memory_pack  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402
from report import write_report  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def open_rt(db: Path) -> Runtime:
    """The two packs measured, nothing else installed (another pack's hooks would add to every call)."""
    return Runtime.open(db, env=ENV, packs=[kg_pack, memory_pack], discover_packs=False)


def log(msg: str) -> None:
    print(f"[{datetime.now():%H:%M:%S}] {msg}", flush=True)

RELATIONS = ["supports", "related_to", "triggered_by", "contradicts"]
REL_P = [0.40, 0.30, 0.15, 0.15]


def make_edges(ids: np.ndarray, threads: list[str], n: int, rng: np.random.Generator) -> list[tuple[int, int, str]]:
    """``n`` distinct (src, dst, relation) edges without self-loops (see the module docstring)."""
    codes = {t: k for k, t in enumerate(dict.fromkeys(threads))}
    thread = np.array([codes[t] for t in threads])
    order = np.lexsort((ids, thread))  # notes grouped by thread, in id order inside a thread
    pos = np.empty(len(ids), dtype=np.int64)
    pos[order] = np.arange(len(ids))
    seen: set[tuple[int, int, str]] = set()
    out: list[tuple[int, int, str]] = []
    while len(out) < n:
        m = int((n - len(out)) * 1.3) + 16
        src = rng.integers(0, len(ids), m)
        rel = rng.choice(len(RELATIONS), size=m, p=REL_P)
        local = rng.random(m) < 2 / 3
        near = pos[src] + rng.integers(-8, 9, m)
        near_ok = (near >= 0) & (near < len(ids))
        near_dst = order[np.clip(near, 0, len(ids) - 1)]
        near_ok &= thread[near_dst] == thread[src]
        dst = np.where(local, near_dst, rng.integers(0, len(ids), m))
        ok = (~local | near_ok) & (dst != src)
        for s_, d_, r_ in zip(ids[src[ok]].tolist(), ids[dst[ok]].tolist(), rel[ok].tolist()):
            key = (s_, d_, RELATIONS[r_])
            if key not in seen:
                seen.add(key)
                out.append(key)
                if len(out) == n:
                    break
    return out


def link_all(rt: Runtime, edges: list[tuple[int, int, str]], batch: int) -> float:
    t = time.perf_counter()
    for start in range(0, len(edges), batch):
        rt.call("memory.link_many", {"links": [{"source_id": s, "target_id": d, "relation": r}
                                               for s, d, r in edges[start:start + batch]]})
    return time.perf_counter() - t


def timed(rt: Runtime, verb: str, qs: list[str], extra: dict) -> tuple[list[float], list]:
    lat, out = [], []
    for q in qs:
        t = time.perf_counter()
        res = rt.call(verb, {"query": q, **extra})
        lat.append(time.perf_counter() - t)
        out.append(res)
    return lat, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=300_000)
    ap.add_argument("--big-edges", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "memory_graph.md"))
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    notes, questions, _ = corpus(args.notes)
    qs = questions[: args.queries]
    db = Path(tempfile.mkdtemp(prefix="pal-graph-")) / "graph.duckdb"
    rows: list[tuple[str, str]] = []
    t_start = time.perf_counter()
    with open_rt(db) as rt:
        t = time.perf_counter()
        ids = []
        for start in range(0, len(notes), args.batch):
            ids += rt.call("memory.remember_many", {"notes": notes[start:start + args.batch]}).ids
        rows.append(("ingest notes (remember_many)", f"{len(ids):,} notes in {time.perf_counter() - t:.1f} s"))
        log(rows[-1])
        id_arr = np.array(ids, dtype=np.int64)
        edges = make_edges(id_arr, [n["thread"] for n in notes], args.big_edges, rng)
        first, rest = edges[: args.edges], edges[args.edges:]
        secs = link_all(rt, first, args.batch)
        rows.append(("link edges (link_many, 5000 a call)", f"{len(first):,} edges in {secs:.1f} s "
                                                              f"({len(first) / secs:,.0f} edges/s)"))
        log(rows[-1])
        t = time.perf_counter()
        c = rt.call("memory.centrality", {})
        rows.append((f"memory.centrality at {len(first):,} edges", f"{time.perf_counter() - t:.2f} s "
                     f"({c.notes:,} notes scored, {c.edges:,} positive edges)"))
        timed(rt, "memory.walk", qs[:10], {})  # warm-up (embedder, caches)
        configs = [
            ("memory.walk seeds only (max_depth 0)", "memory.walk", {"max_depth": 0}),
            ("memory.walk defaults (5 seeds, depth 2, cut 0.65)", "memory.walk", {}),
            ("memory.walk depth 2, cut 0.3", "memory.walk", {"min_similarity": 0.3}),
            ("memory.walk depth 3, cut 0.0, 10 seeds (worst case)", "memory.walk",
             {"max_depth": 3, "min_similarity": 0.0, "seeds": 10}),
            ("memory.recall (limit 10)", "memory.recall", {}),
            ("memory.recall expand_graph=true", "memory.recall", {"expand_graph": True}),
        ]
        lat_rows = []
        for name, verb, extra in configs:
            lat, res = timed(rt, verb, qs, extra)
            if verb == "memory.walk":
                visited = statistics.mean(r.visited for r in res)
                via = statistics.mean(sum(1 for h in r.results if h.depth > 0) for r in res)
                top = statistics.median(max((h.cosine for h in r.results if h.depth == 0), default=0) for r in res)
                note = (f"visited {visited:.1f}, {via:.1f} of the top 10 reached through edges, "
                        f"median best seed cosine {top:.2f}")
            else:
                note = ""
            lat_rows.append((name, statistics.median(lat) * 1000, pct(lat, 95), note))
            log(lat_rows[-1])
        secs = link_all(rt, rest, args.batch)
        rows.append(("link more edges", f"{len(rest):,} edges in {secs:.1f} s"))
        log(rows[-1])
        cent = []
        for _ in range(3):
            t = time.perf_counter()
            c = rt.call("memory.centrality", {})
            cent.append(time.perf_counter() - t)
        rows.append((f"memory.centrality at {len(edges):,} edges (median of 3)",
                     f"{statistics.median(cent):.2f} s ({c.notes:,} notes scored, {c.edges:,} positive edges)"))
        lat, res = timed(rt, "memory.walk", qs, {})
        lat_rows.append((f"memory.walk defaults at {len(edges):,} edges", statistics.median(lat) * 1000,
                         pct(lat, 95), f"visited {statistics.mean(r.visited for r in res):.1f}"))
    t = time.perf_counter()
    with open_rt(db):
        rows.append(("reopen (indexes + edge mirror rebuilt)", f"{time.perf_counter() - t:.1f} s"))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = "\n".join([
        "# Memory graph layer: walk latency and centrality time\n",
        f"{datetime.now():%Y-%m-%d %H:%M}, `python bench/memory_graph.py --notes {args.notes} --edges {args.edges} "
        f"--big-edges {args.big_edges} --queries {args.queries}` on {platform.machine()}, Python "
        f"{platform.python_version()}, 2 shared cores; embedder wordllama; total {time.perf_counter() - t_start:.0f} s, "
        f"peak RSS {rss:,.0f} MB. Corpus and edges: see the script's docstring.\n",
        "| step | figure |", "|---|---|", *[f"| {a} | {b} |" for a, b in rows], "",
        f"Latency per call over {len(qs)} LoCoMo questions, {args.notes:,} notes, {args.edges:,} edges unless said:\n",
        "| call | median ms | p95 ms | notes |", "|---|---|---|---|",
        *[f"| {n} | {m:.1f} | {p:.1f} | {x} |" for n, m, p, x in lat_rows], "",
    ])
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

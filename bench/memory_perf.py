"""Memory pack speed through the runtime: bulk remember throughput, recall latency at 10k and 100k notes.

Usage: python bench/memory_perf.py [--sizes 10000,100000] [--queries 200] [--out bench/results/memory_perf.md]

The corpus is LoCoMo's turns (../shared/data) replicated into new conversations (scope and thread renamed per
copy) until it reaches each size; the queries are LoCoMo's questions. Side by side in the same process:
plain BM25 (the same BM25 index class, no filters, no context) and plain dense (exact cosine) over the same
texts, so the comparison shares the machine's noise. Medians of repeated runs; the machine is shared.
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
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index  # noqa: E402
from palimpsest_memory.packs.memory.importers.conversations import parse_locomo  # noqa: E402
from palimpsest_memory.packs.memory.models.notes import RecallFilters  # noqa: E402
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex  # noqa: E402
from palimpsest_memory.runtime import Runtime  # noqa: E402
from report import pct, write_report  # noqa: E402


def corpus(size: int) -> tuple[list[dict], list[str], list[str]]:
    convs = parse_locomo(DATA)
    questions = [q["question"] for s in __import__("json").loads(DATA.read_text()) for q in s["qa"]]
    notes, copy = [], 0
    while len(notes) < size:
        for c in convs:
            for t in c.turns:
                if len(notes) == size:
                    break
                notes.append({"content": t.content(), "occurred_at": t.occurred_at.isoformat(),
                              "scope": f"{c.scope}#{copy}", "thread": f"{t.thread}#{copy}"})
        copy += 1
    speakers = sorted({s for c in convs for s in c.speakers})
    return notes, questions, speakers



def run_size(size: int, n_queries: int, batch: int) -> dict:
    notes, questions, speakers = corpus(size)
    qs = questions[:n_queries]
    db = Path(tempfile.mkdtemp(prefix="pal-perf-")) / "perf.duckdb"
    out: dict = {"size": size}
    with Runtime.open(db, env={"PALIMPSEST_CONFIG_DISABLED": "1"}) as rt:
        for s in speakers:
            rt.call("kg.upsert_entity", {"name": s, "kind": "person"})
        rt.call("memory.remember", {"content": "warm-up: load the embedder"})
        rates = []
        t_all = time.perf_counter()
        for start in range(0, size, batch):
            chunk = notes[start:start + batch]
            t = time.perf_counter()
            rt.call("memory.remember_many", {"notes": chunk})
            rates.append(len(chunk) / (time.perf_counter() - t))
        out["ingest_total_s"] = time.perf_counter() - t_all
        out["ingest_median_notes_s"] = statistics.median(rates)
        out["ingest_overall_notes_s"] = size / out["ingest_total_s"]

        def timed(params_of) -> list[float]:
            lat = []
            for q in qs:
                t = time.perf_counter()
                rt.call("memory.recall", params_of(q))
                lat.append(time.perf_counter() - t)
            return lat

        embedders = rt.pack_state("memory").embedders
        embedders._cache.clear()
        cold = timed(lambda q: {"query": q})  # each query embedded once: includes embedding
        warm = timed(lambda q: {"query": q})  # embedding now an LRU hit: excludes it
        scoped = timed(lambda q: {"query": q, "scope": "conv-26#0"})
        out.update(recall_incl_p50=pct(cold, 50), recall_incl_p95=pct(cold, 95), recall_excl_p50=pct(warm, 50),
                   recall_excl_p95=pct(warm, 95), scoped_p50=pct(scoped, 50), scoped_p95=pct(scoped, 95))
        # the vector leg's prefilter (large scans only) against the exact scan: share of the exact top-200
        # (by score, so ties count) that the leg returned, and the leg's own latency both ways
        index = rt.pack_state("memory").index.of("default")  # one index per namespace (ADR 0016)
        leg = index.vectors[next(iter(index.vectors))]
        mask = index.allowed(index.mask("default", RecallFilters()))
        found, t_pf, t_ex = [], [], []
        for v in embedders.embed("wordllama", qs):
            t = time.perf_counter()
            got = leg.search(v, 200, allowed=mask)
            t_pf.append(time.perf_counter() - t)
            t = time.perf_counter()
            exact = leg.search_exact(v, 200, allowed=mask)
            t_ex.append(time.perf_counter() - t)
            if exact:
                found.append(np.mean([c >= exact[-1][1] - 1e-6 for _, c in got]) if got else 0.0)
        out.update(prefilter_on=leg.has_graph, leg_found=float(np.mean(found)) * 100,
                   leg_p50=pct(t_pf, 50), leg_exact_p50=pct(t_ex, 50))
        t = time.perf_counter()
        vecs = embedders.embed("wordllama", qs)
        out["embed_query_ms"] = (time.perf_counter() - t) / len(qs) * 1000
        # plain baselines over the same texts, in the same process
        bm = BM25Index()
        bm.add(list(range(size)), [n["content"] for n in notes])
        vi = VectorIndex(vecs.shape[1])
        vi.add(np.arange(size), embedders.embed("wordllama", [n["content"] for n in notes]))
        lat_bm, lat_dn = [], []
        for q, v in zip(qs, vecs):
            t = time.perf_counter()
            bm.search(q, 10)
            lat_bm.append(time.perf_counter() - t)
            t = time.perf_counter()
            vi.search(v, 10)
            lat_dn.append(time.perf_counter() - t)
        out.update(bm25_p50=pct(lat_bm, 50), bm25_p95=pct(lat_bm, 95), dense_p50=pct(lat_dn, 50),
                   dense_p95=pct(lat_dn, 95))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "memory_perf.md"))
    args = ap.parse_args(argv)
    if not DATA.is_file():
        print(f"skipped: {DATA} is absent (the benchmark needs ../shared/data)")
        return 0
    rows = []
    for size in (int(x) for x in args.sizes.split(",")):
        r = run_size(size, args.queries, args.batch)
        print(r, file=sys.stderr)
        rows.append(r)
    lines = [
        "# Memory pack speed (through the runtime)\n",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `python bench/memory_perf.py --sizes {args.sizes} "
        f"--queries {args.queries}` on {platform.machine()}, {platform.python_version()}, 2 shared cores. "
        f"Medians over {args.queries} LoCoMo questions; unscoped recall unless noted; default config "
        "(WordLlama, weighted fusion, context signals on, limit 10).\n",
        "| notes | ingest notes/s (median batch / overall) | recall p50/p95 ms incl. embedding | "
        "recall p50/p95 ms excl. embedding | scoped recall p50/p95 ms | plain BM25 p50/p95 ms | "
        "plain dense p50/p95 ms | query embedding ms | peak RSS MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    vec_lines = ["", "The vector leg alone (top-200 over the whole namespace, as recall asks it), HNSW graph vs the "
                 "exact scan of the same index (`search_exact`), same queries:", "",
                 "| notes | graph used | leg p50 ms | exact scan p50 ms | exact top-200 found |",
                 "|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {r['ingest_median_notes_s']:,.0f} / {r['ingest_overall_notes_s']:,.0f} | "
            f"{r['recall_incl_p50']:.1f} / {r['recall_incl_p95']:.1f} | {r['recall_excl_p50']:.1f} / "
            f"{r['recall_excl_p95']:.1f} | {r['scoped_p50']:.1f} / {r['scoped_p95']:.1f} | "
            f"{r['bm25_p50']:.2f} / {r['bm25_p95']:.2f} | {r['dense_p50']:.2f} / {r['dense_p95']:.2f} | "
            f"{r['embed_query_ms']:.2f} | {r['peak_rss_mb']:,.0f} |")
    for r in rows:
        vec_lines.append(f"| {r['size']:,} | {'yes' if r['prefilter_on'] else 'no (exact)'} | {r['leg_p50']:.2f} | "
                         f"{r['leg_exact_p50']:.2f} | {r['leg_found']:.2f} % |")
    text = "\n".join(lines + vec_lines) + "\n"
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

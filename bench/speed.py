"""Speed at every size, side by side in one run (issue 18): our recall against plain BM25 (bm25s), an exact numpy
scan and an HNSW index (faiss-cpu) over the same texts and vectors, plus ingest, reopen, close and memory.

Usage: python bench/speed.py [--sizes 10000,100000] [--corpus distinct,repeated] [--queries 200]
                             [--store-dir /tmp/pal-speed] [--out bench/results/speed.md]

Corpora (``bench/speed_corpus.py``): ``distinct`` — LoCoMo's turns, then seeded rewrites of them (speaker names,
~35 % of the words, numbers), every text distinct; ``repeated`` — LoCoMo copied verbatim (the old corpus of
``bench/memory_perf.py``, kept as a regression comparison: its ties distort ANN recall and BM25 statistics).
Each (corpus, size) runs in two fresh processes: one ingests the notes (``memory.remember_many`` in batches of
5,000, default config, WordLlama) and closes the store; the next reopens it (timed; RSS read after the open),
recalls, runs the baselines and closes (timed). Queries: the first ``--queries`` LoCoMo questions, each recalled
once to warm the embedding cache, then timed (so "excl. embedding"). The vector leg's share of the exact top-200
(by score, so ties count) is measured on the same index with ``search_exact`` as reference. Every figure is a
median; the load average is recorded beside each phase. Needs the ``bench`` extra (bm25s, faiss-cpu).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import speed_corpus  # noqa: E402
from report import cpu_model, prepend_report  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def status_mb() -> dict[str, float]:
    """This process's memory fields of ``/proc/self/status`` (VmRSS, VmHWM, RssAnon, RssFile, …) in MB."""
    out: dict[str, float] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if rest.strip().endswith(" kB"):
                    out[key] = int(rest.split()[0]) / 1024
    except OSError:
        pass
    return out


def rss_mb() -> float:
    return status_mb().get("VmRSS", float("nan"))


def peak_mb() -> float:
    """This process's peak RSS: VmHWM (reset by exec; ``ru_maxrss`` is not, so a worker forked from a process that
    held gigabytes reported the parent's peak as its own)."""
    peak = status_mb().get("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


def load() -> float:
    return round(os.getloadavg()[0], 2)


def ms(xs: list[float], p: float = 50) -> float:
    return float(np.percentile(xs, p)) * 1000


def notes_of(corpus: str, size: int) -> tuple[list[dict], list[str]]:
    return speed_corpus.distinct(size) if corpus == "distinct" else speed_corpus.repeated(size)


def build(corpus: str, size: int, path: Path) -> dict:
    from palimpsest_memory.runtime import Runtime
    notes, speakers = notes_of(corpus, size)
    out: dict = {"load_before_ingest": load()}
    with Runtime.open(path, env=ENV) as rt:
        for s in speakers:
            rt.call("kg.upsert_entity", {"name": s, "kind": "person"})
        rt.call("memory.remember", {"content": "warm-up: load the embedder"})
        rates, t_all, cpu_all = [], time.perf_counter(), time.process_time()
        for start in range(0, size, 5000):
            chunk = notes[start:start + 5000]
            t = time.perf_counter()
            rt.call("memory.remember_many", {"notes": chunk})
            rates.append(len(chunk) / (time.perf_counter() - t))
        for vi in rt.pack_state("memory").index.of("default").vectors.values():  # the last batch's graph insert, if running
            vi.graph.sync()
        total = time.perf_counter() - t_all
        out.update(ingest_overall=size / total, ingest_cpu=size / (time.process_time() - cpu_all),
                   ingest_median_batch=statistics.median(rates),
                   ingest_last_batch=rates[-1], load_after_ingest=load())
        t = time.perf_counter()
    out["close_after_ingest_s"] = time.perf_counter() - t
    return out


def measure(corpus: str, size: int, path: Path, n_queries: int, baselines: bool = True) -> dict:
    from palimpsest_memory.runtime import Runtime
    from palimpsest_memory.packs.memory.models.notes import RecallFilters
    base_rss = rss_mb()
    qs = speed_corpus.questions()[:n_queries]
    t = time.perf_counter()
    rt = Runtime.open(path, env=ENV)
    t_open = time.perf_counter() - t
    rt.call("memory.recall", {"query": qs[0]})  # mirrors load at a namespace's first call: reopen is open + that
    out: dict = {"reopen_s": time.perf_counter() - t, "open_s": t_open, "rss_open_mb": rss_mb(),
                 "rss_base_mb": base_rss, "load_open": load(),
                 "peak_open_mb": peak_mb()}
    for q in qs:  # embeds every query once: the timed calls below hit the cache
        rt.call("memory.recall", {"query": q})
    lat, cpu = [], []
    for _ in range(2):
        for q in qs:
            c, t = time.process_time(), time.perf_counter()  # every thread's: the vector leg may run on its own
            rt.call("memory.recall", {"query": q})
            lat.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    out.update(recall_p50=ms(lat), recall_p95=ms(lat, 95), recall_cpu_p50=ms(cpu), load_recall=load(),
               rss_steady_mb=rss_mb())
    # steady memory: a long-running agent's store has answered many more recalls than the timed ones, and each
    # recall's rescoring makes more of a mapped vectors file resident (ADR 0025), so count after 1,000 in all
    for q in speed_corpus.questions()[n_queries:1000 - 2 * n_queries]:
        rt.call("memory.recall", {"query": q})
    # resident memory split as the kernel counts it: anonymous (the heap, numpy arrays, a graph in memory of its
    # own) and file-backed (mapped files: the snapshot files an index reads where they lie, libraries)
    mem = status_mb()
    out.update(rss_1000_mb=mem.get("VmRSS", float("nan")), rss_anon_mb=mem.get("RssAnon", float("nan")),
               rss_file_mb=mem.get("RssFile", float("nan")))
    state = rt.pack_state("memory")
    index, embedders = state.index.of("default"), state.embedders  # one index per namespace (ADR 0016)
    vi = index.vectors[next(iter(index.vectors))]
    mask = index.allowed(index.mask("default", RecallFilters()))
    Q = embedders.embed("wordllama", qs)
    found, t_leg, t_exact = [], [], []
    for v in Q:
        t = time.thread_time()
        got = vi.search(v, 200, allowed=mask)
        t_leg.append(time.thread_time() - t)
        t = time.thread_time()
        exact = vi.search_exact(v, 200, allowed=mask)
        t_exact.append(time.thread_time() - t)
        if exact:
            found.append(np.mean([c >= exact[-1][1] - 1e-6 for _, c in got]) if got else 0.0)
    out.update(graph=getattr(vi, "has_graph", getattr(vi, "_proj", None) is not None),
               int8_scan=getattr(vi, "_int8", None) is not None, leg_p50=ms(t_leg), leg_exact_p50=ms(t_exact), leg_found=float(np.mean(found)) * 100)
    if not baselines:  # the tail needs 1,000 notes: the whole corpus in this process would inflate its peak RSS
        return _tail(out, rt, notes_of(corpus, 1000)[0], path)
    # the baselines, over the same texts and the same vectors, in this process
    notes, _ = notes_of(corpus, size)
    texts = [n["content"] for n in notes]
    X = np.ascontiguousarray(vi.matrix_rows(vi.live_rows()[1]), dtype=np.float32)
    import bm25s
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    lat_bm = []
    for q in qs:
        tok = bm25s.tokenize([q], stopwords="en", show_progress=False)
        t = time.thread_time()
        try:
            retriever.retrieve(tok, k=10, show_progress=False, n_threads=1)
        except ValueError:  # a query of only out-of-vocabulary words
            pass
        lat_bm.append(time.thread_time() - t)
    lat_np = []
    from threadpoolctl import threadpool_limits  # (the bench extra)
    with threadpool_limits(limits=1, user_api="blas"):  # one thread, as our cosines run: a second only waits here
        for v in Q:
            t = time.thread_time()
            s = X @ v
            top = np.argpartition(-s, 10)[:10]
            top[np.argsort(-s[top])]
            lat_np.append(time.thread_time() - t)
    import faiss
    faiss.omp_set_num_threads(1)
    hnsw = faiss.IndexHNSWFlat(X.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 40
    t = time.perf_counter()
    hnsw.add(X)
    out["faiss_build_s"] = time.perf_counter() - t
    hnsw.hnsw.efSearch = 64
    lat_hn = []
    for v in Q:
        t = time.thread_time()
        hnsw.search(v[None], 10)
        lat_hn.append(time.thread_time() - t)
    out.update(bm25s_p50=ms(lat_bm), numpy_p50=ms(lat_np), faiss_p50=ms(lat_hn), load_baselines=load())
    del retriever, hnsw, X
    return _tail(out, rt, notes, path)


def _tail(out: dict, rt, notes: list[dict], path: Path) -> dict:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime import Runtime
    t = time.perf_counter()
    rt.close()
    out["close_s"] = time.perf_counter() - t
    out["peak_rss_mb"] = peak_mb()
    # a session's few writes: 1,000 more notes, then close (the snapshots are kept: they cover all but these) and
    # reopen (they are restored and the 1,000 indexed as an ingest would)
    extra = [dict(n, content=n["content"] + " (again)") for n in notes[:1000]]
    rt = Runtime.open(path, env=ENV)
    rt.call("memory.remember_many", {"notes": extra})
    t = time.perf_counter()
    rt.close()
    out["close_tail_s"] = time.perf_counter() - t
    # in a fresh process, as every real open is (the index just closed here may not be freed yet)
    out.update({f"{k}_tail": v for k, v in run_reopen(path).items()})
    out["reopen_tail_s"] = out.pop("reopen_s_tail")
    return out


def reopen(path: Path) -> dict:
    from palimpsest_memory.runtime import Runtime
    t = time.perf_counter()
    rt = Runtime.open(path, env=ENV)
    rt.call("memory.recall", {"query": speed_corpus.questions()[0]})  # open + the namespace's first call
    out = {"reopen_s": time.perf_counter() - t, "load": load(), "rss_mb": rss_mb(),
           "peak_rss_mb": peak_mb()}
    rt.close()
    return out


def run_reopen(path: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--worker", "reopen", "--path", str(path)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"reopen failed:\n{proc.stderr[-3000:]}")


def worker(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if args.worker == "reopen":
        print("RESULT " + json.dumps(reopen(path)))
        return 0
    res = build(args.corpus, args.size, path) if args.worker == "build" else measure(
        args.corpus, args.size, path, args.queries, not args.no_baselines)
    print("RESULT " + json.dumps(res))
    return 0


def run(kind: str, corpus: str, size: int, path: Path, queries: int, baselines: bool = True) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--corpus", corpus, "--size", str(size), "--path", str(path),
           "--queries", str(queries)] + ([] if baselines else ["--no-baselines"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{kind} {corpus} {size} failed:\n{proc.stderr[-3000:]}")


def render(rows: list[dict], cmd: str, when: str) -> list[str]:

    def f(r: dict, k: str, fmt: str = "{:.2f}") -> str:
        return fmt.format(r[k]) if k in r else "—"

    lines = [
        "# Speed at every size (issue 18)\n",
        f"Generated {when} by `{cmd}` on {platform.machine()} ({cpu_model()}), Python "
        f"{platform.python_version()}, 2 shared cores (other agents' jobs ran meanwhile: the 1-minute load average "
        "is beside each figure). Default config (WordLlama 256-d, weighted fusion, context signals, limit 10). "
        "Medians over the LoCoMo questions; recall excludes the query embedding (cached); its CPU time (every "
        "thread's: past 20,000 rows the vector leg runs on a thread of its own beside the BM25 leg, ADR 0008) is less "
        "sensitive to the load than wall time, so the legs and the baselines are timed in CPU time "
        "(a wall-clock timing of a sub-millisecond call on a box this loaded mostly measures the scheduler). Baselines run in the "
        "same process over the same texts and vectors: bm25s top-10 (its own tokenizer, English stop words, one "
        "thread), an exact numpy top-10 (one matvec + argpartition), faiss-cpu HNSWFlat top-10 (M 32, "
        "efConstruction 40, efSearch 64, one thread).\n",
        "| corpus | notes | recall p50 / p95 ms | recall CPU p50 ms | bm25s CPU ms | exact numpy CPU ms | "
        "faiss HNSW CPU ms | "
        "load |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['corpus']} | {r['size']:,} | {r['recall_p50']:.2f} / {r['recall_p95']:.2f} | "
                     f"{f(r, 'recall_cpu_p50')} | {f(r, 'bm25s_p50')} | {f(r, 'numpy_p50')} | {f(r, 'faiss_p50')} | "
                     f"{r['load_recall']} / {r.get('load_baselines', '—')} |")
    lines += ["", "The vector leg alone (top-200 over the namespace, as recall asks it) against the exact scan of the "
              "same vectors (`search_exact`):", "",
              "| corpus | notes | graph | leg CPU p50 ms | exact scan CPU p50 ms | exact top-200 found |",
              "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['corpus']} | {r['size']:,} | {'HNSW' if r['graph'] else 'int8 scan, rescored' if r.get('int8_scan') else 'none (exact)'} | "
                     f"{r['leg_p50']:.2f} | {r['leg_exact_p50']:.2f} | {r['leg_found']:.2f} % |")
    lines += ["", "Ingest (`memory.remember_many`, batches of 5,000, WordLlama embedding included; overall includes "
              "waiting for the last batch's graph insert; \"per CPU s\" divides by the process's CPU time, every "
              "thread, which the load inflates less than wall time), reopen and close (fresh process; the snapshots "
              "restored), then 1,000 more notes (a close that keeps the snapshots, a reopen in a fresh process that "
              "extends them), "
              "memory:", "",
              "| corpus | notes | ingest notes/s overall / median batch / last batch | ingest notes per CPU s | load | "
              "close after ingest s | reopen s (open + first recall) | close s | +1,000 notes: close / reopen s | "
              "RSS after first recall / after the timed recalls / after 1,000 recalls MB (empty process) | "
              "RSS after 1,000 recalls: anonymous + file-backed MB | peak RSS MB: reopen / whole run | "
              "file MB (+ snapshot files) |",
              "|---|---:|---|---:|---|---:|---:|---:|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['corpus']} | {r['size']:,} | {f(r, 'ingest_overall', '{:,.0f}')} / "
            f"{f(r, 'ingest_median_batch', '{:,.0f}')} / {f(r, 'ingest_last_batch', '{:,.0f}')} | "
            f"{f(r, 'ingest_cpu', '{:,.0f}')} | "
            f"{r.get('load_before_ingest', '—')} → {r.get('load_after_ingest', '—')} | "
            f"{f(r, 'close_after_ingest_s')} | {r['reopen_s']:.2f} | {r['close_s']:.2f} | "
            f"{f(r, 'close_tail_s')} / {f(r, 'reopen_tail_s')} (load {r.get('load_tail', '—')}) | "
            f"{r['rss_open_mb']:,.0f} / {f(r, 'rss_steady_mb', '{:,.0f}')} / {f(r, 'rss_1000_mb', '{:,.0f}')} "
            f"({r['rss_base_mb']:,.0f}) | {f(r, 'rss_anon_mb', '{:,.0f}')} + {f(r, 'rss_file_mb', '{:,.0f}')} | "
            f"{f(r, 'peak_open_mb', '{:,.0f}')} / {r['peak_rss_mb']:,.0f} | "
            f"{r['file_mb']:,.0f} (+ {r.get('side_mb', 0):,.0f}) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--corpus", default="distinct,repeated")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--store-dir", default="/tmp/pal-speed")
    ap.add_argument("--keep", action="store_true", help="keep the stores (and reuse a kept one instead of ingesting)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "speed.md"))
    ap.add_argument("--no-baselines", action="store_true",
                    help="skip bm25s and faiss (at 1M their indexes take minutes and gigabytes)")
    ap.add_argument("--worker", choices=["build", "measure", "reopen"], help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args)
    if not speed_corpus.DATA.is_file():
        print(f"skipped: {speed_corpus.DATA} is absent (the benchmark needs ../shared/data)")
        return 0
    rows = []
    for corpus in args.corpus.split(","):
        for size in (int(x) for x in args.sizes.split(",")):
            if corpus == "repeated" and size > 100_000:
                continue
            d = Path(args.store_dir)
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"{corpus}-{size}.duckdb"
            if path.exists() and not args.keep:
                path.unlink()
                shutil.rmtree(Path(str(path) + ".index"), ignore_errors=True)
            r = {"corpus": corpus, "size": size}
            r.update(run("build", corpus, size, path, args.queries) if not path.exists() else {})
            r.update(run("measure", corpus, size, path, args.queries, not args.no_baselines))
            side = Path(str(path) + ".index")  # the snapshots' files beside the store (memory/snapshot.py)
            r["file_mb"] = path.stat().st_size / 2**20
            r["side_mb"] = sum(p.stat().st_size for p in side.glob("*")) / 2**20 if side.is_dir() else 0.0
            print(json.dumps(r), file=sys.stderr)
            rows.append(r)
            if not args.keep:
                path.unlink()
                shutil.rmtree(side, ignore_errors=True)
    if not args.keep:
        shutil.rmtree(args.store_dir, ignore_errors=True)
    cmd = (f"python bench/speed.py --sizes {args.sizes} --corpus {args.corpus} --queries {args.queries}"
           + (" --no-baselines" if args.no_baselines else ""))
    lines = render(rows, cmd, f"{datetime.now():%Y-%m-%d %H:%M}")
    text = "\n".join(lines) + "\n"
    prepend_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

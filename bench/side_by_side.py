"""An honest side-by-side (issue 45, item 5): our recall and three baselines timed the same way, in one loop.

    python bench/side_by_side.py [--sizes 10000,100000] [--queries 200] [--store-dir /tmp/pal-sbs]

What is timed, for every system alike: wall seconds (``perf_counter``) and the CPU seconds of every thread of the
process (``process_time``: bm25s and our vector leg may run work on other threads), around one call that takes a
question's text and returns its top 10. The loop goes question by question; for each, the four systems run in an
order rotated by the question's index (so none always goes first after a context switch), each once as the
question's **first call** and then once more as a **repeat**:

- **ours**: ``rt.call("memory.recall", {"query": q})`` through the runtime, default config. The first call embeds
  the question (WordLlama); the repeat finds its vector in recall's query cache, so the repeat is the fixed cost
  of a recall *excluding the embedding*.
- **bm25s**: tokenize the question (its tokenizer, English stop words) and ``retrieve(k=10, n_threads=0)``: the
  caller's thread, no pool (``n_threads=1`` hands each query to a worker thread, which the round-2 bench then
  timed with the caller's ``thread_time`` and under-counted). With numba installed it also runs with
  ``backend="numba"``, its fastest single-process setting; both are reported. First call and repeat do the same
  work (bm25s keeps no cache).
- **exact numpy**: the question embedded with the same WordLlama model, one matvec over the same vectors our index
  holds and an argpartition (BLAS is held to one thread for the whole run, every system alike); the repeat reuses the vector, as our repeat does.
- **faiss HNSW** (``IndexHNSWFlat``, M 32, efConstruction 40, efSearch 64, one thread): the same vectors, the same
  embedding on the first call.

Also reported: the embedder alone (WordLlama over the corpus's texts, notes/s, in this process) and the medians'
ratios the issue's goals name (ours / bm25s at each size, first call). The store is built by ``bench/speed.py``'s
ingest in a process of its own and reopened here. Writes ``bench/results/side_by_side.md`` (newest run first).
Needs the ``bench`` extra (bm25s, faiss-cpu, threadpoolctl; numba optional) and ``../shared/data``.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import speed  # noqa: E402
import speed_corpus  # noqa: E402
from report import cpu_model, prepend_report  # noqa: E402

OUT = ROOT / "bench" / "results" / "side_by_side.md"


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def systems(rt: Any, texts: list[str]) -> tuple[dict[str, Callable[[str, bool], Any]], dict[str, float]]:
    """Each system as ``run(question, repeat)``; and what building the baselines cost."""
    import bm25s
    import faiss
    from threadpoolctl import threadpool_limits

    # one BLAS thread for the whole run, every system alike (entering threadpoolctl's context per call costs ~2 ms,
    # which the round-2 bench's numpy timing did not pay only because its context wrapped the whole loop)
    threadpool_limits(limits=1, user_api="blas")
    state = rt.pack_state("memory")
    index, embedders = state.index.of("default"), state.embedders
    vi = index.vectors[next(iter(index.vectors))]
    X = np.ascontiguousarray(vi.matrix_rows(vi.live_rows()[1]), dtype=np.float32)
    built: dict[str, float] = {}
    tokens = bm25s.tokenize(texts, stopwords="en", show_progress=False)
    bm = bm25s.BM25()
    built["bm25s_index_s"] = timed(lambda: bm.index(tokens, show_progress=False))[0]
    faiss.omp_set_num_threads(1)
    hnsw = faiss.IndexHNSWFlat(X.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = 40
    built["faiss_build_s"] = timed(lambda: hnsw.add(X))[0]
    hnsw.hnsw.efSearch = 64
    vectors: dict[str, np.ndarray] = {}

    def vector(q: str, repeat: bool) -> np.ndarray:
        if not repeat or q not in vectors:
            vectors[q] = embedders.embed("wordllama", [q])[0]
        return vectors[q]

    def bm25(model: Any) -> Callable[[str, bool], Any]:
        def run(q: str, repeat: bool) -> Any:
            tok = bm25s.tokenize([q], stopwords="en", show_progress=False)
            try:
                return model.retrieve(tok, k=10, show_progress=False, n_threads=0)
            except ValueError:  # a question of only out-of-vocabulary words
                return None
        return run

    def exact(q: str, repeat: bool) -> Any:
        s = X @ vector(q, repeat)
        top = np.argpartition(-s, 10)[:10]
        return top[np.argsort(-s[top])]

    out: dict[str, Callable[[str, bool], Any]] = {
        "ours": lambda q, repeat: rt.call("memory.recall", {"query": q}),
        "bm25s": bm25(bm),
        "exact numpy": exact,
        "faiss HNSW": lambda q, repeat: hnsw.search(vector(q, repeat)[None], 10),
    }
    try:
        import numba  # noqa: F401  (bm25s's fastest single-process backend, when installed)
    except ImportError:
        pass
    else:
        fast = bm25s.BM25(backend="numba")
        built["bm25s_numba_index_s"] = timed(lambda: fast.index(tokens, show_progress=False))[0]
        fast.retrieve(bm25s.tokenize(["warm up the jit"], stopwords="en", show_progress=False), k=10,
                      show_progress=False, n_threads=0)  # numba compiles at the first call: not a query's cost
        out["bm25s (numba)"] = bm25(fast)
    return out, built


def measure(size: int, path: Path, n_queries: int) -> dict[str, Any]:
    from palimpsest_memory.runtime import Runtime

    notes, _ = speed.notes_of("distinct", size)
    texts = [n["content"] for n in notes]
    questions = speed_corpus.questions()
    warm, qs = questions[-20:], questions[:n_queries]
    rt = Runtime.open(path, env=speed.ENV)
    for q in warm:  # the namespace's mirrors and the embedder load: a session's start, not a query's cost
        rt.call("memory.recall", {"query": q})
    runs, built = systems(rt, texts)
    for q in warm:
        for run in runs.values():
            run(q, False)
    names = list(runs)
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {(n, k): [] for n in names for k in ("first", "repeat")}
    load_before = speed.load()
    for i, q in enumerate(qs):
        order = names[i % len(names):] + names[:i % len(names)]
        for kind, repeat in (("first", False), ("repeat", True)):
            for name in order:
                rows[(name, kind)].append(timed(lambda: runs[name](q, repeat)))
    load_after = speed.load()
    state = rt.pack_state("memory")
    sample = texts[:20000]
    t = time.perf_counter()
    state.embedders.embed("wordllama", sample)
    embed_rate = len(sample) / (time.perf_counter() - t)
    rt.close()
    med = {f"{n}|{k}|{w}": statistics.median(x[j] for x in v) * 1000
           for (n, k), v in rows.items() for j, w in enumerate(("wall", "cpu"))}
    return {"size": size, "queries": len(qs), "load": f"{load_before} → {load_after}", "embed_rate": embed_rate,
            "systems": names, "med": med, **built}


def render(results: list[dict[str, Any]], cmd: str) -> str:
    lines = [
        "# Side by side: our recall, bm25s, exact numpy, faiss HNSW, timed alike (issue 45)", "",
        f"Run of {datetime.now():%Y-%m-%d %H:%M}: `{cmd}`. {platform.machine()} ({cpu_model()}), {os.cpu_count()} shared cores, Python {platform.python_version()}. "
        "Medians of each question's time, ms, wall / CPU (all threads); first call = the question's first, "
        "repeat = the same question again (ours and the vector baselines reuse its vector). Interleaved, order "
        "rotated per question; the load average (1 min) before → after the loop is beside each size.", "",
        "| notes | system | first call wall / CPU ms | repeat wall / CPU ms | load |",
        "|---:|---|---:|---:|---|",
    ]
    for r in results:
        m = r["med"]
        for n in r["systems"]:
            lines.append(f"| {r['size']:,} | {n} | {m[f'{n}|first|wall']:.2f} / {m[f'{n}|first|cpu']:.2f} | "
                         f"{m[f'{n}|repeat|wall']:.2f} / {m[f'{n}|repeat|cpu']:.2f} | {r['load']} |")
    lines += ["", "| notes | ours / bm25s, first call (wall) | ours / fastest bm25s, first call (wall) | ours repeat "
              "(excl. embedding) wall ms | WordLlama alone, notes/s | bm25s index s | faiss build s |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        m = r["med"]
        bms = [n for n in r["systems"] if n.startswith("bm25s")]
        fastest = min(bms, key=lambda n: m[f"{n}|first|wall"])
        lines.append(f"| {r['size']:,} | {m['ours|first|wall'] / m['bm25s|first|wall']:.2f}× | "
                     f"{m['ours|first|wall'] / m[f'{fastest}|first|wall']:.2f}× ({fastest}) | "
                     f"{m['ours|repeat|wall']:.2f} | {r['embed_rate']:,.0f} | {r['bm25s_index_s']:.1f} | "
                     f"{r['faiss_build_s']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--store-dir", default="/tmp/pal-sbs")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    if not speed_corpus.DATA.is_file():
        print(f"skipped: {speed_corpus.DATA} is absent (the benchmark needs ../shared/data)")
        return 0
    results = []
    store_dir = Path(args.store_dir)
    for size in (int(s) for s in args.sizes.split(",")):
        shutil.rmtree(store_dir, ignore_errors=True)
        store_dir.mkdir(parents=True)
        path = store_dir / f"distinct-{size}.duckdb"
        speed.run("build", "distinct", size, path, args.queries)  # ingest in a process of its own, then closed
        results.append(measure(size, path, args.queries))
        print(results[-1], file=sys.stderr)
    shutil.rmtree(store_dir, ignore_errors=True)
    cmd = f"python bench/side_by_side.py --sizes {args.sizes} --queries {args.queries}"
    prepend_report(args.out, render(results, cmd))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

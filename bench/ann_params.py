"""What the HNSW graph's build parameters cost and buy at 1M notes (issue 18, ADR 0020): insert time per note
against the vector leg's share of the exact top-200.

Usage: python bench/ann_params.py [--size 1000000] [--configs 16:128,16:96,12:96,16:64,16:128:8] [--dims 256]
                                  [--ivf 1024:20000,2048:20000] [--out bench/results/ann_params.md]

The notes are ``bench/speed_corpus.distinct`` embedded with WordLlama (the default embedder; cached as
``/tmp/pal-ann-vectors-<size>.npy``), the queries LoCoMo's first 200 questions. For each ``connectivity:expansion_add``
a usearch graph is built as the product builds it (int8, inner product, batches of 5,000 in id order, added with
one usearch thread or, given a third figure ``M:expansion_add:threads``, with that many); the insert cost is the
median process CPU time per note of the last 20 batches before 100k and before ``--size``. At both sizes the leg is
asked as recall asks it (``oversample`` 2: 400 rows for a top-200, rescored exactly) with the search list the
product uses (``Ann.search_list``: 2,400 at 1M with the default settings; 2,000 when the runs in
``bench/results/ann_params.md`` were made) and, at the full size, longer ones; "found" is the share of the exact
top-200 (by score, so ties count) among the 200 best rescored rows. ``--dims 128`` builds the graph over the first
128 dimensions (WordLlama's Matryoshka prefix), rescored with all 256. Needs ``../shared/data`` (the corpus is
derived from LoCoMo).

``--ivf nlist:trained_on,…`` measures the other family the issue names, an inverted file (faiss ``IndexIVFFlat``,
inner product, ``nlist`` k-means centroids trained on the first ``trained_on`` vectors — what a store growing note
by note would have when it crossed the threshold — then every vector added in the same batches); its rows say
the insert cost and, for ``nprobe`` 64 / 128 / 256, the share found, the search p50 and the mean share of the rows
a search compares the query with (faiss's own count), one faiss thread.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import speed_corpus  # noqa: E402
from report import prepend_report  # noqa: E402


def vectors(size: int) -> tuple[np.ndarray, np.ndarray]:
    from palimpsest_memory.packs.memory.engine.embedders import WordLlamaEmbedder
    cache = Path(f"/tmp/pal-ann-vectors-{size}.npy")
    e = WordLlamaEmbedder()
    if not cache.exists():
        notes, _ = speed_corpus.distinct(size)
        m = np.zeros((size, e.dim), dtype=np.float32)
        for s in range(0, size, 20000):
            m[s:s + 20000] = e.embed([n["content"] for n in notes[s:s + 20000]])
        np.save(cache, m)
    return np.load(cache, mmap_mode="r"), e.embed(speed_corpus.questions()[:200])


def exact_cuts(X: np.ndarray, Q: np.ndarray, n: int) -> np.ndarray:
    """Per query, the 200th best exact score over the first ``n`` rows: computed once per size, the matrix of
    every score (200 × 1M floats at full size) is not kept."""
    cuts = np.empty(len(Q), dtype=np.float32)
    for s in range(0, len(Q), 50):
        scores = Q[s:s + 50] @ np.asarray(X[:n]).T
        cuts[s:s + 50] = -np.partition(-scores, 199, axis=1)[:, 199]
    return cuts


def share_of_top200(X: np.ndarray, q: np.ndarray, cut: float, keys: np.ndarray) -> float:
    """The share of the exact top-200 (by score, so ties count) among the 200 best of ``keys`` rescored exactly."""
    best = np.sort(np.asarray(X[np.sort(keys)]) @ q)[::-1][:200]
    return float(np.mean(best >= cut - 1e-6)) if len(best) else 0.0


def found(graph, X: np.ndarray, Q: np.ndarray, cuts: np.ndarray, dims: int, ef: int) -> tuple[float, float]:
    """(share of the exact top-200 found, search p50 ms); ``cuts`` are the size's ``exact_cuts``."""
    graph.expansion_search = ef
    shares, took = [], []
    for qi in range(len(Q)):
        q = Q[qi][:dims] / np.linalg.norm(Q[qi][:dims])
        t = time.perf_counter()
        keys = graph.search(q, 400, threads=1).keys.astype(np.int64)
        took.append(time.perf_counter() - t)
        shares.append(share_of_top200(X, Q[qi], cuts[qi], keys))
    return float(np.mean(shares)) * 100, float(np.median(took)) * 1000


def run(X: np.ndarray, Q: np.ndarray, cuts: dict[int, np.ndarray], size: int, m: int, ef_add: int, dims: int,
        threads: int = 1) -> dict:
    from usearch.index import Index

    from palimpsest_memory.packs.memory.engine.vector_graph import Ann
    graph = Index(ndim=dims, metric="ip", dtype="i8", connectivity=m, expansion_add=ef_add, expansion_search=256)
    out: dict = {"M": m, "ef_add": ef_add, "dims": dims, "threads": threads, "insert_us": {}, "found": {}}
    per: list[float] = []
    for s in range(0, size, 5000):
        b = np.asarray(X[s:s + 5000, :dims])
        b = b / np.linalg.norm(b, axis=1, keepdims=True)
        c = time.process_time()  # all of usearch's insert threads, not only the calling one
        graph.add(np.arange(s, s + len(b)), b, threads=threads)
        per.append((time.process_time() - c) / len(b) * 1e6)
        n = s + len(b)
        if n in (100_000, size):
            out["insert_us"][n] = float(np.median(per[-20:]))
            efs = [Ann().search_list(n, ask=400)] + ([3000, 4000] if n == size and n >= 1_000_000 else [])
            out["found"][n] = {ef: found(graph, X, Q, cuts[n], dims, ef) for ef in efs}
            print(json.dumps(out), flush=True)
    return out


def run_ivf(X: np.ndarray, Q: np.ndarray, cuts: np.ndarray, size: int, nlist: int, trained_on: int) -> dict:
    """An inverted file over the same vectors, asked for the same 400 rows as the graph."""
    import faiss
    faiss.omp_set_num_threads(1)
    d = X.shape[1]
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
    ivf.train(np.ascontiguousarray(X[:trained_on], dtype=np.float32))
    per: list[float] = []
    for s in range(0, size, 5000):
        b = np.ascontiguousarray(X[s:s + 5000], dtype=np.float32)
        c = time.process_time()
        ivf.add(b)
        per.append((time.process_time() - c) / len(b) * 1e6)
    sizes = np.array([ivf.invlists.list_size(i) for i in range(nlist)])
    out: dict = {"nlist": nlist, "trained_on": trained_on, "insert_us": float(np.median(per[-20:])),
                 "largest_list_over_mean": float(sizes.max() / sizes.mean()), "found": {}}
    for nprobe in (64, 128, 256):
        ivf.nprobe = nprobe
        shares, took = [], []
        faiss.cvar.indexIVF_stats.reset()  # counts the rows each search compares the query with
        for qi in range(len(Q)):
            t = time.perf_counter()
            _, keys = ivf.search(Q[qi:qi + 1].astype(np.float32), 400)
            took.append(time.perf_counter() - t)
            shares.append(share_of_top200(X, Q[qi], cuts[qi], keys[0][keys[0] >= 0]))  # (-1: fewer rows than asked)
        scanned = faiss.cvar.indexIVF_stats.ndis / len(Q) / size * 100
        out["found"][nprobe] = (float(np.mean(shares)) * 100, float(np.median(took)) * 1000, scanned)
    print(json.dumps(out), flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--configs", default="16:128,16:96,12:96,16:64")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--ivf", default="", help="nlist:trained_on,… (faiss IndexIVFFlat; empty: none)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "ann_params.md"))
    args = ap.parse_args(argv)
    X, Q = vectors(args.size)
    cuts = {n: exact_cuts(X, Q, n) for n in {min(100_000, args.size), args.size}}  # the sizes `found` is asked at
    rows = []
    for c in filter(None, args.configs.split(",")):  # --configs "" measures only --ivf
        m, ef_add, *threads = map(int, c.split(":"))
        rows.append(run(X, Q, cuts, args.size, m, ef_add, args.dims, *threads))
    ivfs = [run_ivf(X, Q, cuts[args.size], args.size, *map(int, c.split(":"))) for c in args.ivf.split(",") if c]
    ivf_arg = f" --ivf {args.ivf}" if args.ivf else ""
    lines = ["# ANN build parameters: insert cost against the leg's share of the exact top-200 (issue 18)", "",
             f"`python bench/ann_params.py --size {args.size} --configs '{args.configs}' --dims {args.dims}{ivf_arg}`",
             ""]
    if rows:
        lines += [("| M | expansion_add | insert threads | dims | insert CPU µs a note at 100k / full | "
                   "found at 100k | found at full size (search list: share, search p50 ms) |"),
                  "|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        at100 = next(iter(r["found"].get(100_000, {}).values()), (float("nan"), 0))
        full = "; ".join(f"{ef}: {f:.2f} %, {ms:.1f}" for ef, (f, ms) in r["found"][args.size].items())
        at100_us = r["insert_us"].get(100_000, float("nan"))
        lines.append(f"| {r['M']} | {r['ef_add']} | {r['threads']} | {r['dims']} | {at100_us:.0f} / "
                     f"{r['insert_us'][args.size]:.0f} | {at100[0]:.2f} % | {full} |")
    if ivfs:
        lines += ["", "An inverted file instead (faiss `IndexIVFFlat`, one thread, 400 rows asked as above):", "",
                  ("| nlist | centroids trained on | largest list / mean | insert CPU µs a note at full size | "
                   "found at full size (nprobe: share, search p50 ms, rows scanned) |"), "|---:|---:|---:|---:|---|"]
        for r in ivfs:
            full = "; ".join(f"{p}: {f:.2f} %, {ms:.1f}, {sc:.0f} %" for p, (f, ms, sc) in r["found"].items())
            lines.append(f"| {r['nlist']} | {r['trained_on']:,} | {r['largest_list_over_mean']:.1f} | "
                         f"{r['insert_us']:.0f} | {full} |")
    prepend_report(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

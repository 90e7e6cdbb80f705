"""What the brain's serve ledger costs a recall, and how much it grows a store (issue 16.13).

Usage: python bench/brain_ledger.py [--base DIR] [--notes 2000] [--recalls 2000] [--serves 100000]
                                    [--out bench/results/brain_ledger.md]

For this tree, and for an older checkout given as ``--base`` (the ledger before the change), each in a child
process that imports that tree:
- recall latency on a file store of ``--notes`` notes (LoCoMo turns from ../shared/data, else generated text),
  with the brain pack loaded and with it disabled (``runtime.disabled = ["brain"]``): two stores open side by
  side, recalls alternated in blocks of 50 so both share the machine's noise; medians and p95; the load average
  (``os.getloadavg``) before and after;
- the growth of the brain store over those recalls (file size after ``CHECKPOINT``);
- the growth per ``--serves`` serves (100k by default: no extrapolation): serves of 10 results, their note ids,
  components and weights taken from real recalls of that store, kept through ``brain.record_serve`` — the same
  path and flush as the ``recall_served`` subscriber —, the file size after ``CHECKPOINT`` every 10%.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from report import write_report  # bench/, this script's folder

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"
ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}
BLOCK = 50


def texts(n: int) -> tuple[list[str], list[str]]:
    """n note texts and the questions to recall with."""
    if DATA.is_file():
        sessions = json.loads(DATA.read_text())
        turns, questions = [], []
        for s in sessions:
            questions += [q["question"] for q in s["qa"]]
            conv = s["conversation"]
            for key in sorted(k for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
                turns += [f"{t['speaker']}: {t['text']}" for t in conv[key]]
        out = [f"{turns[i % len(turns)]} (copy {i // len(turns)})" for i in range(n)]
        return out, questions
    words = "orion postgres migration deploy budget review alice bob cache index latency plan".split()
    out = [" ".join(words[(i * k) % len(words)] for k in range(1, 9)) + f" #{i}" for i in range(n)]
    return out, [" ".join(words[i % len(words)] for i in range(j, j + 3)) for j in range(40)]


def size(db: Path) -> int:
    wal = db.with_name(db.name + ".wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def checkpointed(rt, db: Path) -> int:
    if "brain" in rt.catalog.packs:
        rt.call("brain.flush_serves", {}, internal=True)
    rt.store.con.execute("CHECKPOINT")
    return size(db)


def fill(rt, notes: list[str]) -> None:
    rt.call("memory.remember_many", {"notes": [{"content": t} for t in notes]})


def record(rt, serve: dict) -> None:
    """Keep one serve as the subscriber does; the older ledger also wanted the query and the scores."""
    from palimpsest_memory.runtime import errors

    try:
        rt.call("brain.record_serve", {"recall_id": uuid.uuid4().hex, **serve}, internal=True)
    except errors.InvalidParams:
        rt.call("brain.record_serve", {"recall_id": uuid.uuid4().hex, "query": "q",
                                       "scores": [0.5] * len(serve["note_ids"]), **serve}, internal=True)


def worker(args: argparse.Namespace) -> dict:
    from palimpsest_memory.runtime import Runtime

    notes, questions = texts(args.notes)
    tmp = Path(tempfile.mkdtemp(prefix="pal-ledger-"))
    out: dict = {"tree": str(ROOT), "notes": args.notes}
    dbs = {"brain": tmp / "brain.duckdb", "no brain": tmp / "plain.duckdb"}
    configs = {"brain": None, "no brain": {"runtime": {"disabled": ["brain"]}}}
    rts = {k: Runtime.open(dbs[k], config=configs[k], env=ENV) for k in dbs}
    try:
        for rt in rts.values():
            fill(rt, notes)
        start = checkpointed(rts["brain"], dbs["brain"])
        lat: dict[str, list[float]] = {k: [] for k in rts}
        for q in questions[:BLOCK]:  # warm both (embedder, caches) before timing
            for rt in rts.values():
                rt.call("memory.recall", {"query": q})
        out["load_before"] = os.getloadavg()
        n = 0
        while n < args.recalls:
            for name, rt in rts.items():
                for q in (questions[(n + i) % len(questions)] for i in range(BLOCK)):
                    t = time.perf_counter()
                    rt.call("memory.recall", {"query": q})
                    lat[name].append(time.perf_counter() - t)
            n += BLOCK
        out["load_after"] = os.getloadavg()
        for name, xs in lat.items():
            xs.sort()
            out[name] = {"p50_ms": statistics.median(xs) * 1000, "p95_ms": xs[int(0.95 * len(xs))] * 1000,
                         "n": len(xs)}
        out["recall_growth_bytes"] = checkpointed(rts["brain"], dbs["brain"]) - start
        out["recalls_timed"] = n + BLOCK
        # realistic serves: ids, components and weights of real recalls of this store
        pool = []
        for q in questions[:200]:
            hits = rts["brain"].call("memory.recall", {"query": q, "limit": 10, "include_breakdown": True}).results
            if len(hits) == 10:
                w = hits[0].breakdown.weights
                pool.append({"weights": {c: w[c] for c in ("relevance", "salience", "temporal")},
                             "note_ids": [h.note.id for h in hits],
                             "relevance": [h.breakdown.relevance for h in hits],
                             "effective_salience": [h.breakdown.effective_salience for h in hits],
                             "recency": [h.breakdown.recency for h in hits]})
    finally:
        for rt in rts.values():
            rt.close()
    out["serve_runs"] = {}
    runs = {"default bounds": None}
    if args.unbounded:
        runs["no size bound"] = {"packs": {"brain": {"serve_max_per_namespace": 10_000_000}}}
    for label, config in runs.items():
        db = tmp / f"serves-{len(out['serve_runs'])}.duckdb"
        with Runtime.open(db, config=config, env=ENV) as rt:
            fill(rt, notes)
            base = checkpointed(rt, db)
            curve, t0, steps = [], time.perf_counter(), 10
            for i in range(args.serves):
                record(rt, pool[i % len(pool)])
                if (i + 1) % (args.serves // steps) == 0:
                    curve.append((i + 1, checkpointed(rt, db) - base))
            secs = time.perf_counter() - t0
        out["serve_runs"][label] = {"base_bytes": base, "curve": curve, "per_serve_ms": secs / args.serves * 1000}
    out["load_end"] = os.getloadavg()
    return out


def child(tree: Path, args: argparse.Namespace, unbounded: bool) -> dict:
    cmd = [sys.executable, str(ROOT / "bench" / "brain_ledger.py"), "--worker", "--notes", str(args.notes),
           "--recalls", str(args.recalls), "--serves", str(args.serves)] + (["--unbounded"] if unbounded else [])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def mb(b: float) -> str:
    return f"{b / 1e6:.1f}"


def report(runs: dict[str, dict], argv: list[str]) -> str:
    lines = ["## Brain serve ledger: recall cost and store growth (issue 16.13)", "",
             f"`python bench/brain_ledger.py {' '.join(argv)}` — each tree in its own child process, one after the "
             "other; within a tree the two stores (brain loaded, brain disabled) are open side by side and "
             f"recalls alternate between them in blocks of {BLOCK}. Figures are medians of single recalls. "
             "Load is `os.getloadavg()` (1, 5, 15 min) on a 2-core machine shared with other agents.", "",
             "| tree | recall p50 brain / none (ms) | p95 brain / none (ms) | brain − none p50 (ms) | load before → "
             "after | growth over those recalls (MB) |", "|---|---|---|---|---|---|"]
    for name, r in runs.items():
        b, nb = r["brain"], r["no brain"]
        lines.append(f"| {name} | {b['p50_ms']:.2f} / {nb['p50_ms']:.2f} | {b['p95_ms']:.2f} / {nb['p95_ms']:.2f} | "
                     f"{b['p50_ms'] - nb['p50_ms']:+.2f} | {'/'.join(f'{x:.1f}' for x in r['load_before'])} → "
                     f"{'/'.join(f'{x:.1f}' for x in r['load_after'])} | {mb(r['recall_growth_bytes'])} over "
                     f"{r['recalls_timed']} recalls |")
    lines += ["", f"Growth of a {next(iter(runs.values()))['notes']}-note store per serves kept (10 results each, "
              "through `brain.record_serve`, file size after CHECKPOINT minus the size before the first serve):", "",
              "| tree | bounds | " + " | ".join(f"{n / 1000:g}k" for n, _ in
                                                 next(iter(runs.values()))["serve_runs"]["default bounds"]["curve"])
              + " | ms a serve |", "|---|---|" + "---|" * (len(next(iter(runs.values()))["serve_runs"]
                                                                  ["default bounds"]["curve"]) + 1)]
    for name, r in runs.items():
        for label, s in r["serve_runs"].items():
            lines.append(f"| {name} | {label} | " + " | ".join(mb(g) for _, g in s["curve"])
                         + f" | {s['per_serve_ms']:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="an older checkout to measure the same way (the ledger before the change)")
    ap.add_argument("--notes", type=int, default=2000)
    ap.add_argument("--recalls", type=int, default=2000)
    ap.add_argument("--serves", type=int, default=100_000)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "brain_ledger.md"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--unbounded", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    runs = {"this tree": child(ROOT, args, unbounded=True)}
    if args.base:
        commit = subprocess.run(["git", "-C", args.base, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                text=True).stdout.strip() or Path(args.base).name
        runs[f"before ({commit})"] = child(Path(args.base).resolve(), args, unbounded=False)
    text = report(runs, argv)
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

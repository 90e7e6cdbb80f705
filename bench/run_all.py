"""`make bench`: run every benchmark and assemble bench/RESULTS.md (machine, commands, figures).

Each benchmark writes its own markdown to bench/results/; this script runs them one after another (never in
parallel: the machine has 2 shared cores) and concatenates their reports under a header describing the
machine. A benchmark whose data (../shared/data) is absent says so and is skipped.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from report import cpu_model  # noqa: E402

RESULTS = ROOT / "bench" / "results"
BENCHES = [  # (results file, command)
    ("locomo.md", ["bench/locomo.py"]),
    ("locomo_episodes.md", ["bench/locomo_episodes.py"]),
    ("locomo_sessions.md", ["bench/locomo_sessions.py"]),  # recall by episode at session level (issue 44, ADR 0036)
    ("locomo_dupes.md", ["bench/locomo_dupes.py"]),  # merging a text remembered again (issue 42 item 4, ADR 0039)
    ("locomo_temporal.md", ["bench/locomo_temporal.py"]),  # time in the question (issue 44 item 3, ADR 0041)
    ("memory_perf.md", ["bench/memory_perf.py", "--sizes", "10000,100000"]),
    ("embedder_cost.md", ["bench/embedder_cost.py", "--embedders", "wordllama,e5"]),
    ("speed.md", ["bench/speed.py", "--sizes", "10000,100000"]),
    ("side_by_side.md", ["bench/side_by_side.py", "--sizes", "10000,100000"]),  # all timed alike (issue 45)
    ("memory_rss.md", ["bench/memory_rss.py", "--sizes", "10000,100000", "--profile"]),
    ("memory_graph.md", ["bench/memory_graph.py"]),
    ("explain.md", ["bench/explain_locomo.py"]),
    ("brain.md", ["bench/brain_learning.py"]),
    ("brain_ledger.md", ["bench/brain_ledger.py"]),
    ("kg_yago", ["bench/kg_yago.py", "--questions", "20000"]),
    ("startup.md", ["bench/startup.py", "--runs", "7"]),
    ("mcp.md", ["bench/mcp_cost.py", "--runs", "5", "--queries", "40"]),
    ("data_rights.md", ["bench/data_rights.py", "--notes", "100000"]),
    ("postgres.md", ["bench/pg_multi.py", "--notes", "20000", "--size", "100000"]),
    ("pg_restart.md", ["bench/pg_restart.py", "--notes", "10000", "--restarts", "5", "--opens", "5"]),
    ("pg_follower_pace.md", ["bench/pg_follower_pace.py", "--writers", "4", "--notes", "60000"]),
    ("import_formats.md", ["bench/import_formats.py", "--messages", "10000"]),  # ChatGPT, Claude, Markdown (issue 42)
    ("mutation.md", ["bench/mutation.py"]),  # planted bugs in the guard, importers, forget, follower (issue 46)
]
# Long runs, only when named (`python bench/run_all.py kg_scale`); their figures are kept in bench/results/kg.md.
ON_REQUEST = [("kg_scale", ["bench/kg_scale.py", "--facts", "1000000", "--edges", "1000000", "--lookups", "500"])]
# goals.md is written by hand from the reports below (the issues' goals next to what was reached): update it when
# a figure it quotes moves.
# house.md compares two trees (`python bench/house_compare.py --base DIR`), so it too is run by hand.
REPORTS = ["goals.md", "house.md", "locomo.md", "locomo_episodes.md", "locomo_sessions.md", "locomo_dupes.md",
           "locomo_temporal.md", "embedder_cost.md",
           "speed.md", "side_by_side.md", "ann_params.md",
           "memory_perf.md", "memory_rss.md", "memory_graph.md", "explain.md", "brain.md", "brain_ledger.md", "kg.md",
           "reliability.md", "startup.md", "mcp.md", "data_rights.md",
           "postgres.md", "pg_follower_pace.md", "pg_restart.md", "copy_store.md", "namespaces.md", "import_formats.md",
           "mutation.md"]


def machine() -> str:
    cpu = cpu_model()
    mem = next((int(ln.split()[1]) // 1024 // 1024 for ln in Path("/proc/meminfo").read_text().splitlines()
                if ln.startswith("MemTotal")), 0) if Path("/proc/meminfo").exists() else 0
    return (f"{cpu}, {os.cpu_count()} cores, {mem} GiB RAM, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}")


def main() -> int:
    args = sys.argv[1:]
    assemble_only = "--assemble-only" in args  # rebuild RESULTS.md from the reports already in bench/results
    only = {a for a in args if not a.startswith("--")}
    RESULTS.mkdir(parents=True, exist_ok=True)
    ran = []
    for name, cmd in BENCHES + [b for b in ON_REQUEST if b[0] in only]:
        if assemble_only or (only and name.split(".")[0] not in only):
            continue
        script = ROOT / cmd[0]
        if not script.exists():
            print(f"skip {name}: {cmd[0]} is missing")
            continue
        t = time.perf_counter()
        print(f"== {' '.join(cmd)}", flush=True)
        proc = subprocess.run([sys.executable, *cmd], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        print(proc.stdout[-4000:])
        if not name.endswith(".md"):  # a bench that prints its figures: keep them as they were printed
            (RESULTS / f"{name}.txt").write_text(f"$ python {' '.join(cmd)}\n{proc.stdout}")
        ran.append((name, " ".join(["python", *cmd]), proc.returncode, time.perf_counter() - t))
    runs_file = RESULTS / "runs.json"
    if assemble_only and runs_file.exists():
        ran = [tuple(r) for r in json.loads(runs_file.read_text())]
    else:
        runs_file.write_text(json.dumps(ran))
    parts = [
        "# Benchmark results\n",
        f"Assembled {datetime.now():%Y-%m-%d %H:%M} by `make bench` (`python bench/run_all.py`).",
        f"Machine: {machine()}. The machine is shared and noisy: figures are medians, and every comparison",
        "that matters (ours vs plain BM25 vs plain dense) is measured side by side in the same run.\n",
        "| report | command | exit | seconds |", "|---|---|---|---|",
        *[f"| {n} | `{c}` | {rc} | {s:.0f} |" for n, c, rc, s in ran], "",
    ]
    for name in REPORTS:
        path = RESULTS / name
        if path.exists():
            parts += [f"\n---\n<!-- {name} -->\n", path.read_text()]
    for name, _ in BENCHES + ON_REQUEST:
        path = RESULTS / f"{name}.txt"
        if path.exists():
            parts += [f"\n---\n## Output of {name} (this run)\n", "```", path.read_text().strip()[-6000:], "```"]
    (ROOT / "bench" / "RESULTS.md").write_text("\n".join(parts) + "\n")
    print("wrote bench/RESULTS.md")
    return 0 if all(rc == 0 for _, _, rc, _ in ran) else 1


if __name__ == "__main__":
    raise SystemExit(main())

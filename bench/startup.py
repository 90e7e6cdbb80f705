"""How fast `pal` starts: CPU seconds of `pal --help` and `pal --version`, and the wall time until a fresh `pal mcp`
(stdio) has answered `initialize` and `tools/list` (issue 20, item 4: goals 0.3 s CPU and 1.5 s).

    python bench/startup.py [--runs 7] [--base DIR]

Each figure is the median of --runs fresh processes (CPU = user + sys of the child, from os.wait4). The MCP figure
uses a database that already exists (created by a first, unmeasured start), with the shipped default embedder.
``--base DIR`` measures another checkout (e.g. main before this change) in the same run, side by side (its
`pal mcp` is started without --tools). Writes bench/results/startup.md.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "startup.md"
PAL = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]


TREE = [ROOT]  # the checkout being measured


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    e.update(PALIMPSEST_CONFIG_DISABLED="1", PYTHONPATH=str(TREE[0]))
    return e


def cpu_of(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of ``pal ARGS``."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(PAL + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(), cwd=TREE[0])
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, f"pal {' '.join(args)} exited with {proc.returncode}"
    return usage.ru_utime + usage.ru_stime, wall


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + sys) a live process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def mcp_ready(db: str, tools: str) -> tuple[float, float, int]:
    """Wall and CPU seconds from spawning `pal mcp` to its tools/list answer, and how many tools it listed."""
    t0 = time.perf_counter()
    argv = PAL + ["--db", db, "mcp"] + (["--tools", tools] if tools else [])
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env(),
                            cwd=TREE[0], text=True)
    assert proc.stdin and proc.stdout

    def ask(msg: dict) -> dict:
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    listed = ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    ready = time.perf_counter() - t0
    cpu = proc_cpu(proc.pid)
    proc.stdin.close()
    proc.wait(timeout=60)
    return ready, cpu, len(listed["result"]["tools"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--base", help="another checkout to measure in the same run (before/after)")
    args = parser.parse_args()
    load = os.getloadavg()
    trees = [("this tree", ROOT)] + ([("base", Path(args.base).resolve())] if args.base else [])
    rows, mcp = [], []
    for tree_label, tree in trees:
        TREE[0] = tree
        for label, argv in (("pal --help", ["--help"]), ("pal --version", ["--version"]),
                            ("pal verbs (loads the packs, no database)", ["verbs"])):
            if argv == ["--version"] and tree_label == "base" and "--version" not in (tree / "runtime" / "adapters" /
                                                                                     "cli.py").read_text():
                continue
            runs = [cpu_of(argv) for _ in range(args.runs)]
            rows.append((tree_label, label, statistics.median(c for c, _ in runs), statistics.median(w for _, w in runs)))
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "bench.duckdb")
            choices = ["core", "all"] if tree_label == "this tree" else [None]
            mcp_ready(db, choices[0])  # creates and migrates the database: not measured
            for tools in choices:
                runs = [mcp_ready(db, tools) for _ in range(args.runs)]
                mcp.append((tree_label, f"--tools {tools}" if tools else "(every verb)",
                            statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[0][2]))
    load_after = os.getloadavg()
    cmd = f"python bench/startup.py --runs {args.runs}" + (f" --base {args.base}" if args.base else "")
    lines = [
        "# Startup: `pal --help` and `pal mcp`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()} {platform.release()}. Load average before {load[0]:.2f} / after {load_after[0]:.2f} "
        f"(1 min). Command: `{cmd}`. Medians of {args.runs} fresh processes.",
        "",
        "Goals (issue 20, item 4): `pal --help` under 0.3 s CPU, `pal mcp` ready under 1.5 s.",
        "",
        "| tree | command | CPU s (median) | wall s (median) |",
        "|---|---|---:|---:|",
        *[f"| {tree} | {label} | {cpu:.3f} | {wall:.3f} |" for tree, label, cpu, wall in rows],
        "",
        "| tree | `pal mcp` (stdio, existing database) | tools | CPU s to ready (median) | wall s to ready (median) |",
        "|---|---|---:|---:|---:|",
        *[f"| {tree} | {t} | {n} | {c:.3f} | {r:.3f} |" for tree, t, r, c, n in mcp],
        "",
        "Ready = spawned, `initialize` answered and `tools/list` answered. On a loaded machine the wall time is",
        "stretched by the other processes; the CPU time is what the start itself costs (on an idle core, wall ≈",
        "CPU).",
        "",
        "`pal --help` and `pal --version` import neither the packs nor DuckDB, numpy or pydantic models: the root",
        "help lists each pack by its entry point name, and `runtime` resolves its public names on first use.",
        "",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

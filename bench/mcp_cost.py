"""What `pal mcp` costs an agent (issue 42, item 6): the time to `initialize` and to the first tool call over stdio,
cold and warm, and the bytes a recall answer carries per result, compact (the default) and with `detail`.

    python bench/mcp_cost.py [--runs 5] [--file ../shared/data/locomo/locomo-dev5.json] [--queries 40]

- **cold**: a new store: the process creates and migrates it, then loads the embedder at the first recall;
  **warm**: the same store again (created by an earlier run, files in the page cache). Each run is a fresh
  `pal mcp` (stdio, `--tools core`, the shipped default embedder); wall seconds from spawn to each answer, CPU
  seconds of the child (user + sys, from /proc) when it answered. Medians of --runs.
- **forwarded**: the same, while another `pal mcp` holds the file and shares it (ADR 0037): the new process
  forwards its calls to the holder; its CPU is its own, the holder's work is not counted.
- **take-over**: a holder and a forwarding `pal mcp` on one file; the holder's client quits (stdin closed): wall
  seconds until the holder has exited, then of the forwarder's next recall, which finds nobody there, opens the
  file itself and answers.
- **answer bytes**: the LoCoMo conversations imported with `pal import locomo`, then each of the first --queries
  questions recalled with `limit` 10, compact and with `detail: true`; bytes of the answer's text (what the agent
  reads; the issue measured 6.5 KB for 10 results) and of the whole JSON-RPC line, per result and per answer.
  Without the file the byte section says so and is skipped.

Writes bench/results/mcp.md.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from report import cpu_model  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "mcp.md"
DATA = ROOT / ".." / "shared" / "data" / "locomo" / "locomo-dev5.json"
PAL = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    e.update(PALIMPSEST_CONFIG_DISABLED="1", PYTHONPATH=str(ROOT))
    return e


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Mcp:
    """One `pal mcp` over stdio, spoken to line by line."""

    def __init__(self, db: str) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(PAL + ["--db", db, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env(), cwd=ROOT)
        self.n = 0

    def ask(self, method: str, params: dict[str, Any]) -> bytes:
        self.n += 1
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params}).encode()
                              + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"pal mcp exited ({self.proc.wait()}) before answering {method}")
        return line

    def initialize(self) -> None:
        self.ask("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "0"}})
        assert self.proc.stdin
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        self.proc.stdin.flush()

    def call(self, tool: str, arguments: dict[str, Any]) -> bytes:
        line = self.ask("tools/call", {"name": tool, "arguments": arguments})
        if json.loads(line)["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {line[:300]!r}")
        return line

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def start_once(db: str) -> dict[str, float]:
    """Wall and CPU seconds from spawn to the `initialize` answer and to the first tool call's (a recall)."""
    mcp = Mcp(db)
    mcp.initialize()
    init_wall, init_cpu = time.perf_counter() - mcp.t0, proc_cpu(mcp.proc.pid)
    mcp.call("memory_recall", {"query": "what did we decide about the database?"})
    call_wall, call_cpu = time.perf_counter() - mcp.t0, proc_cpu(mcp.proc.pid)
    mcp.close()
    return {"init_wall": init_wall, "init_cpu": init_cpu, "call_wall": call_wall, "call_cpu": call_cpu}


def held(db: str) -> Mcp:
    """A `pal mcp` that holds ``db`` and shares it: initialized and one call answered."""
    holder = Mcp(db)
    holder.initialize()
    holder.call("memory_recall", {"query": "warm up"})
    return holder


def take_over(db: str) -> tuple[float, float]:
    """Wall seconds for the holder to exit once its client quit, and of a forwarder's next recall after that (it
    finds nobody there, opens the file and answers)."""
    holder = held(db)
    forwarder = Mcp(db)
    forwarder.initialize()
    forwarder.call("memory_recall", {"query": "through the holder"})
    t0 = time.perf_counter()
    assert holder.proc.stdin
    holder.proc.stdin.close()  # its client quit
    holder.proc.wait(timeout=120)
    exited = time.perf_counter() - t0
    t1 = time.perf_counter()
    forwarder.call("memory_recall", {"query": "what did we decide about the database?"})
    call = time.perf_counter() - t1
    forwarder.close()
    return exited, call


def timings(runs: int) -> tuple[list[tuple[str, dict[str, float]]], tuple[float, float]]:
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        cold = [start_once(str(Path(tmp) / f"cold{i}.duckdb")) for i in range(runs)]
        warm_db = str(Path(tmp) / "cold0.duckdb")
        warm = [start_once(warm_db) for _ in range(runs)]
        holder = held(warm_db)
        forwarded = [start_once(warm_db) for _ in range(runs)]
        holder.close()
        pairs = [take_over(warm_db) for _ in range(runs)]
        handover = (statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs))
    for label, rows in (("cold (new store)", cold), ("warm (existing store)", warm),
                        ("forwarded (another `pal mcp` holds the file)", forwarded)):
        out.append((label, {k: statistics.median(r[k] for r in rows) for k in rows[0]}))
    return out, handover


def answer_bytes(file: Path, queries: int) -> dict[str, Any] | None:
    if not file.exists():
        return None
    data = json.loads(file.read_text())
    questions = [qa["question"] for conv in data for qa in conv.get("qa", []) if qa.get("question")][:queries]
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "locomo.duckdb")
        imported = subprocess.run(PAL + ["--db", db, "import", "locomo", str(file)], env=env(), cwd=ROOT,
                                  capture_output=True, text=True)
        if imported.returncode != 0:
            raise RuntimeError(f"pal import locomo failed: {imported.stderr[-2000:]}")
        mcp = Mcp(db)
        mcp.initialize()
        rows: dict[str, list[tuple[int, int, int, int]]] = {"compact": [], "detail": []}
        for q in questions:
            for mode, extra in (("compact", {}), ("detail", {"detail": True})):
                line = mcp.call("memory_recall", {"query": q, "limit": 10, **extra})
                text = json.loads(line)["result"]["content"][0]["text"]
                results = json.loads(text)["result"]["results"]
                note_chars = sum(len(r["text"] if "text" in r else r["note"]["content"]) for r in results)
                rows[mode].append((len(results), len(text.encode()), len(line), note_chars))
        mcp.close()
    return {"questions": len(questions), "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--file", default=str(DATA))
    parser.add_argument("--queries", type=int, default=40)
    args = parser.parse_args()
    load = os.getloadavg()
    times, handover = timings(args.runs)
    sizes = answer_bytes(Path(args.file), args.queries)
    load_after = os.getloadavg()
    cmd = f"python bench/mcp_cost.py --runs {args.runs} --queries {args.queries}"
    lines = [
        "# MCP: what a session and a recall cost an agent",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores. Load average (1 min) before {load[0]:.2f}, after "
        f"{load_after[0]:.2f}. Command: `{cmd}`. `pal mcp` over stdio, `--tools core`, the shipped default "
        f"embedder; medians of {args.runs} fresh processes.",
        "",
        "| start | `initialize` wall s | CPU s | first tool call (recall) wall s | CPU s |",
        "|---|---:|---:|---:|---:|",
        *[f"| {label} | {t['init_wall']:.2f} | {t['init_cpu']:.2f} | {t['call_wall']:.2f} | {t['call_cpu']:.2f} |"
          for label, t in times],
        "",
        f"Take-over (medians of {args.runs}): the holder exits {handover[0]:.2f} s after its client quit; the "
        f"forwarder's next recall then takes **{handover[1]:.2f} s** wall (it finds nobody there, opens the file, "
        "loads the embedder, shares the file in turn and answers).",
        "",
        "Times are from spawning the process; the first tool call includes loading the embedder and, cold,",
        "creating and migrating the store. Wall time on this shared machine is stretched by its load; the CPU time",
        "is what the start itself costs. A forwarded process loads the catalog but not the store or the embedder.",
        "",
    ]
    if sizes is None:
        lines += [f"Answer bytes: skipped, {args.file} is absent.", ""]
    else:
        lines += [
            f"## Recall answer bytes (LoCoMo dev, {sizes['questions']} questions, `limit` 10)",
            "",
            "| answer | results per answer | text bytes per answer (median) | text bytes per result | "
            "JSON-RPC line bytes per answer | note text share |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for mode, rows in sizes["rows"].items():
            n = statistics.median(r[0] for r in rows)
            text = statistics.median(r[1] for r in rows)
            per = statistics.median(r[1] / max(r[0], 1) for r in rows)
            line = statistics.median(r[2] for r in rows)
            share = statistics.median(r[3] / r[1] for r in rows)
            lines.append(f"| {mode} | {n:.0f} | {text:.0f} | {per:.0f} | {line:.0f} | {share:.0%} |")
        lines += [
            "",
            "compact: id, text, time, score and scope of each note, and the recall id (the default over MCP);",
            "detail: the whole result (`detail: true`), as every answer was before (it then also carried the same",
            "data a second time as structured content). ADR 0033.",
            "",
        ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

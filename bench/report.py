"""What every benchmark script does with its figures: write the markdown report (bench/results/<name>.md, which
run_all.py assembles into RESULTS.md) and print it; and the percentile in milliseconds they quote."""
from __future__ import annotations

import platform
from pathlib import Path

import numpy as np


def cpu_model() -> str:
    """The CPU's model name: the shared VM has been moved between hosts (an AMD EPYC until 2026-12-02, an Intel
    Xeon on 2026-12-03), and a timing means little without it."""
    info = Path("/proc/cpuinfo")
    names = [ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
             if ln.startswith("model name")] if info.exists() else []
    return names[0] if names else platform.processor() or platform.machine()


def write_report(out: str | Path, text: str) -> None:
    """Write ``text`` to ``out`` (its folder made if missing) and print it."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    print(text)


def pct(seconds: list[float], p: float) -> float:
    """The ``p``-th percentile of durations in seconds, in milliseconds."""
    return float(np.percentile(seconds, p)) * 1000

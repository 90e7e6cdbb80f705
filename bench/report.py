"""What every benchmark script does with its figures: write the markdown report (bench/results/<name>.md, which
run_all.py assembles into RESULTS.md) and print it; and the percentile in milliseconds they quote."""
from __future__ import annotations

import platform
from datetime import datetime
from pathlib import Path

import numpy as np


def cpu_model() -> str:
    """The CPU's model name: the shared VM moves between hosts (an Intel Xeon, then an AMD EPYC, then a Xeon again
    within 2026-12-01..03, the same code's 1M ingest 1.7x apart), and a timing means little without it."""
    info = Path("/proc/cpuinfo")
    names = [ln.split(":", 1)[1].strip() for ln in info.read_text().splitlines()
             if ln.startswith("model name")] if info.exists() else []
    return names[0] if names else platform.processor() or platform.machine()


def write_report(out: str | Path, text: str) -> None:
    """Write ``text`` to ``out`` (its folder made if missing) and print it."""
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    print(text)


def prepend_report(out: str | Path, text: str) -> None:
    """Add a run to a report kept as a log, newest first (speed.md, ann_params.md): their earlier runs carry the
    figures the goals and ADRs quote, with what was learnt from them written by hand, so a new run (``make bench``
    runs ``bench/speed.py``) goes under the title as a section of its own instead of replacing the file."""
    path = Path(out)
    title, _, body = text.partition("\n")
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    if not old.startswith(title + "\n"):
        write_report(out, text)
        return
    when = datetime.now().strftime("%Y-%m-%d %H:%M")
    run = f"## Run of {when}\n\n{body.strip()}\n"
    path.write_text(f"{title}\n\n{run}\n{old[len(title) + 1:].lstrip()}", encoding="utf-8")
    print(f"{title}\n\n{run}")


def pct(seconds: list[float], p: float) -> float:
    """The ``p``-th percentile of durations in seconds, in milliseconds."""
    return float(np.percentile(seconds, p)) * 1000

"""LoCoMo: time in the question (issue 44 item 3, ADR 0041).

Usage: python bench/locomo_temporal.py [--file PATH ...] [--out bench/results/locomo_temporal.md]

Two parts, both through the product (``memory.import_conversations`` + ``memory.recall(query, scope, limit=50)``,
one shared store, with ``thread``, ``now`` = the wall clock, as bench/locomo_runtime.py asks):

1. *What the goal hangs on*, with the time prior off: how many questions name a time (``query_time.spans`` finds
   one), per category; of the temporal questions' lost R@10, how much is in questions that name a time, in
   questions that name a time only relative to an event ("before traveling to Chicago": not a time the parser can
   read), and in the rest ("when did X happen?": the answer is a time, the question names none); and the temporal
   R@10 if every question that names a time were answered in full (the bound no prior on the question's time can
   pass).
2. *The ablation*: the shipped ``time_prior`` against 0 (off), and other strengths for information (not chosen by
   them); per category, Δ R@10 paired
   bootstrap over questions (bench/locomo.py ``bootstrap_ci``), for all questions, the temporal ones, and those that
   name a time; and a check that a question naming no time ranks exactly as with the prior off.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo as L  # noqa: E402
from locomo_runtime import evaluate_runtime  # noqa: E402
from report import write_report  # noqa: E402

from palimpsest_memory.packs.memory.ranking import query_time  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# a time named only relative to an event the question describes ("before traveling to Chicago", "after his trip")
EVENT_RELATIVE = re.compile(r"\b(before|after|since|until)\s+(?!\d|the\s+\d)(?:\w+ing|his|her|their|the|a|an)\b", re.I)


def config(gamma: float) -> dict:
    return {"packs": {"memory": {"context": {"time_prior": gamma}}}}


def run(path: Path, convs, gamma: float) -> dict:
    return evaluate_runtime(path, convs, now="clock", config=config(gamma))


def kinds(convs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per question: category, names a time (the parser's spans, anchored at the clock), event-relative only."""
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    qs = [qa for c in convs for qa in c.qa]
    cats = np.array([qa["cat"] for qa in qs])
    named = np.array([bool(query_time.spans(qa["q"], now)) for qa in qs])
    event = np.array([not n and bool(EVENT_RELATIVE.search(qa["q"])) for qa, n in zip(qs, named)])
    return cats, named, event


def pct(x: float) -> str:
    return f"{x:.1f}"


def ci(a: np.ndarray, b: np.ndarray) -> str:
    if not a.size:
        return ""
    m, lo, hi = L.bootstrap_ci(a, b)
    star = " *" if lo > 0 or hi < 0 else ""
    return f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]{star}"


def section(path: Path) -> list[str]:
    convs = L.load(path)
    cats, named, event = kinds(convs)
    temporal = cats == 2
    out = [f"\n## `{path.name}`: {len(cats)} questions\n"]
    t0 = time.time()
    runs = {"off": run(path, convs, 0.0)}
    base = runs["off"]["rows"][:, 1]
    # -- 1. what the goal hangs on
    out += ["### What the goal hangs on (the time prior off)\n",
            "| category | questions | name a time | R@10 | R@10 of those naming a time |", "|---|---|---|---|---|"]
    for k, name in L.CATS.items():
        m = cats == k
        out.append(f"| {name} | {m.sum()} | {(m & named).sum()} | {pct(base[m].mean())} | "
                   f"{pct(base[m & named].mean()) if (m & named).any() else ''} |")
    lost = 100.0 - base
    n_t = temporal.sum()
    parts = {"name a time": temporal & named, "name an event's time only (before / after …)": temporal & event,
             "name no time (\"when did X happen?\")": temporal & ~named & ~event}
    out += ["", f"Temporal R@10 {pct(base[temporal].mean())} ({n_t} questions); the goal 92 needs "
                f"{(92 - base[temporal].mean()) * n_t / 100:.1f} more questions' worth of evidence found.\n",
            "| temporal questions that … | questions | with R@10 < 100 | R@10 lost (question-equivalents) | "
            "temporal R@10 if all of them were found |", "|---|---|---|---|---|"]
    for label, m in parts.items():
        up = base[temporal].copy()
        up[m[temporal]] = 100.0
        out.append(f"| {label} | {m.sum()} | {(m & (base < 100)).sum()} | {lost[m].sum() / 100:.2f} | "
                   f"{pct(up.mean())} |")
    out.append("")
    # -- 2. the ablation
    variants = [("shipped: `time_prior` 1.0", 1.0), ("`time_prior` 0.5 (information only)", 0.5),
                ("`time_prior` 2.0 (information only)", 2.0), ("`time_prior` 4.0 (information only)", 4.0)]
    for label, g in variants:
        runs[label] = run(path, convs, g)
    header = ("| `memory.recall` | R@5 | R@10 | R@25 | " + " | ".join(L.CATS.values()) +
              " | Δ R@10 vs off | Δ temporal | Δ questions naming a time | Δ the others | rankings changed "
              "(naming a time / not) |")
    out += ["### The ablation (Δ R@10 = variant − off, paired bootstrap over questions, 2,000 resamples, 95 %)\n",
            header, "|" + "---|" * (header.count("|") - 1)]
    for label, r in runs.items():
        rows = r["rows"]
        cells = [pct(rows[:, j].mean()) for j in range(3)] + [pct(rows[cats == k, 1].mean()) for k in L.CATS]
        if label == "off":
            out.append("| time prior off | " + " | ".join(cells) + " | | | | | |")
            continue
        ch = np.array([a != b for a, b in zip(r["rankings"], runs["off"]["rankings"])])
        out.append(f"| {label} | " + " | ".join(cells) + f" | {ci(rows[:, 1], base)} | "
                   f"{ci(rows[temporal, 1], base[temporal])} | {ci(rows[named, 1], base[named])} | "
                   f"{ci(rows[~named, 1], base[~named])} | {ch[named].sum()} / {ch[~named].sum()} |")
    out.append("")
    shipped = runs[variants[0][0]]
    out += [f"- recall p50 / p95 through the runtime (query embedding included, all 999 questions): off "
            f"{runs['off']['recall_p50_ms']:.1f} / {runs['off']['recall_p95_ms']:.1f} ms, shipped "
            f"{shipped['recall_p50_ms']:.1f} / {shipped['recall_p95_ms']:.1f} ms",
            "- the temporal questions that name a time, R@10 off → shipped: " + "; ".join(
                f"{qa['q']!r} {base[j]:.0f} → {shipped['rows'][j, 1]:.0f}" for j, qa in
                enumerate(qa for c in convs for qa in c.qa) if temporal[j] and named[j] and
                (base[j] < 100 or shipped['rows'][j, 1] < 100)),
            f"- {time.time() - t0:.0f} s for this file; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    return out


# The first run (commit cb2495a) also took as a note's times the spans its own text names ("last night" in a note
# of 2 May: 1 May), read as a query's are: R@10 and every category as with occurred_at alone (116 vs 117 rankings
# changed), at p95 115 ms against 11.5 (every pooled note's text parsed). Not kept (ADR 0041).


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", action="append", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "locomo_temporal.md")
    a = ap.parse_args(argv)
    files = a.file or [L.DEFAULT_FILE]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = ["# LoCoMo: time in the question (issue 44 item 3, ADR 0041)\n",
             f"Generated {dt.datetime.now():%Y-%m-%d %H:%M} by `python bench/locomo_temporal.py`, on "
             f"{platform.node()} ({os.cpu_count()} cores, shared); load average at the start {load}.\n",
             "Through the product: `memory.import_conversations` + `memory.recall(query, scope=<conversation>, "
             "limit=50)`, one shared DuckDB store, with `thread`, `now` = the wall clock, WordLlama; R@k as in "
             "bench/locomo.py. A question *names a time* when `packs/memory/query_time.spans` finds one.\n"]
    for f in files:
        lines += section(f)
    write_report(a.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

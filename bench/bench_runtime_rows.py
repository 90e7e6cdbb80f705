"""The product rows of the LoCoMo table: memory.recall through the runtime, old and new default configuration,
with and without ``thread``."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from locomo_runtime import evaluate_runtime

# The pipeline before issue 19: no inferred episodes, no information prior (everything else as packs/memory/defaults.toml).
OLD_CONFIG = {"packs": {"memory": {"context": {"episode_gap_minutes": 0.0, "information_prior": False}}}}
# The default before the information prior (inferred episodes only).
PREV_CONFIG = {"packs": {"memory": {"context": {"information_prior": False}}}}


def runtime_rows(path: Path, convs: list[Any], baselines: dict, cats: np.ndarray, span: np.ndarray,
                 columns: Callable, header: list[str]) -> list[str]:
    from locomo import ci_cell
    out = ["\n### The product: `memory.recall` through the runtime\n",
           "Imported with the importer's fields into a fresh DuckDB file (one namespace: the shared store), "
           "or the same notes without `thread`; each question asked with `memory.recall(query, "
           "scope=<conversation>, limit=50)`, `now` = the wall clock; same metric as above. The BM25 rows are "
           "the shared-store baselines.\n", header[0] + " Δ R@10 vs old default | Δ R@10 vs no prior |",
           header[1] + "---|---|"]
    for name, r in baselines.items():
        out.append(f"| {name} | " + " | ".join(columns(r, cats, span)) + " | | |")
    stats = []
    for threads in (True, False):
        res = {}
        for label, config in (("old default", OLD_CONFIG), ("no information prior", PREV_CONFIG),
                              ("new default", None)):
            r = evaluate_runtime(path, convs, now="clock", config=config, threads=threads)
            res[label] = r
            name = f"memory.recall, {label}, {'with' if threads else 'without'} `thread`"
            delta = ci_cell(r["rows"], res["old default"]["rows"]) if label != "old default" else ""
            d_prev = ci_cell(r["rows"], res["no information prior"]["rows"]) if label == "new default" else ""
            out.append(f"| **{name}** | " + " | ".join(columns(r["rows"], cats, span)) + f" | {delta} | {d_prev} |")
            stats.append(f"- {name}: ingest {r['ingest_notes_per_s']:,.0f} notes/s ({r['notes']} notes, import "
                         f"incl. entity linking); recall p50 {r['recall_p50_ms']:.1f} ms, p95 "
                         f"{r['recall_p95_ms']:.1f} ms (including query embedding, through the runtime); 1-min load "
                         f"{os.getloadavg()[0]:.1f}")
            print(out[-1])
    return out + [""] + stats

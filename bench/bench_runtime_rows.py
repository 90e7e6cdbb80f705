"""The product rows of the LoCoMo table: memory.recall through the runtime, default configuration."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from locomo_runtime import evaluate_runtime


def runtime_rows(path: Path, convs: list[Any], baselines: dict, fmt_row: Callable, header: list[str]) -> list[str]:
    out = ["\n## The product: `memory.recall` through the runtime (default configuration, WordLlama)\n",
           "Imported with `pal import locomo`'s importer into a fresh DuckDB file; each question asked with "
           "`memory.recall(query, scope=<conversation>, limit=50)`; same metric as above. `now` = the wall "
           "clock (the conversations are from 2023, so salience and recency weigh ~0) or the day after the "
           "conversation's last session (recency favours later sessions).\n", *header]
    for name, r in baselines.items():
        out.append(fmt_row(name, r))
    stats = []
    for now in ("clock", "after"):
        r = evaluate_runtime(path, convs, now=now)
        out.append(fmt_row(f"**memory.recall (now = {now})**", r))
        stats.append(f"- now = {now}: ingest {r['ingest_notes_per_s']:,.0f} notes/s ({r['notes']} notes, "
                     f"import incl. entity linking); recall p50 {r['recall_p50_ms']:.1f} ms, "
                     f"p95 {r['recall_p95_ms']:.1f} ms (including query embedding, through the runtime)")
        print(out[-1])
    return out + [""] + stats

"""LoCoMo through the product: `pal import locomo` + `memory.recall` with the shipped default configuration.

Imports the file with the memory pack's own importer into a fresh database, asks every question with
``memory.recall(query, scope=<conversation>, limit=50)`` and scores the returned turns exactly as
``bench/locomo.py`` does (same evidence normalisation and metric), so the rows sit beside its baselines.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from palimpsest_memory.runtime import Runtime

KS = (5, 10, 25, 50)


def evaluate_runtime(path: Path, convs: list[Any], *, now: str, config: dict | None = None,
                     threads: bool = True, prime: Any = None) -> dict:
    """Recall@k of ``memory.recall`` over every question (rows in file order under ``"rows"``); ``now`` is
    "clock" or "after" (day after the last turn); ``threads=False`` imports every turn without its ``thread``
    (an agent calling ``memory.remember`` with content, time and scope only). ``prime(rt)``, when given, runs
    right after the open (bench/locomo.py installs a slow model's vectors, memoised, through it). ``"rankings"``
    holds each question's returned turns (dia ids, best first)."""
    from palimpsest_memory.packs.memory.importers.conversations import parse_locomo

    db = Path(tempfile.mkdtemp(prefix="pal-locomo-")) / "locomo.duckdb"
    with Runtime.open(db, config=config, env={"PALIMPSEST_CONFIG_DISABLED": "1"}) as rt:
        if prime is not None:
            prime(rt)
        t0 = time.perf_counter()
        parsed = parse_locomo(path)
        payload = [{"scope": c.scope, "speakers": c.speakers,
                    "notes": [{k: v for k, v in n.items() if threads or k != "thread"} for n in c.notes("locomo")]}
                   for c in parsed]
        res = rt.call("memory.import_conversations", {"conversations": payload}, internal=True)
        counts = {"created": res.created}
        ingest_s = time.perf_counter() - t0
        last = {c.scope: max(t.occurred_at for t in c.turns) for c in parsed}
        rows, lat, rankings = [], [], []
        for conv in convs:
            when = (last[conv.sid] + timedelta(days=1)).isoformat() if now == "after" else None
            for qa in conv.qa:
                params = {"query": qa["q"], "scope": conv.sid, "limit": max(KS)}
                if when:
                    params["now"] = when
                t = time.perf_counter()
                try:
                    res = rt.call("memory.recall", params)
                    ranking = [h.note.source_id for h in res.results]
                except Exception as exc:  # a refused (meaningless) question retrieves nothing; count it as such
                    ranking = []
                    print(f"refused: {qa['q']!r}: {exc}")
                lat.append(time.perf_counter() - t)
                rankings.append(ranking)
                ev = set(qa["ev"])
                rec = [1.0 if not ev else len(ev & set(ranking[:k])) / len(ev) for k in KS]
                rows.append((qa["cat"], rec))
    overall = np.mean([r for _, r in rows], axis=0) * 100
    per_cat = {c: np.mean([r for cc, r in rows if cc == c], axis=0) * 100 for c in sorted({c for c, _ in rows})}
    return {"overall": overall, "cat": per_cat, "n": len(rows), "rows": np.array([r for _, r in rows]) * 100,
            "rankings": rankings, "ingest_notes_per_s": counts["created"] / ingest_s,
            "recall_p50_ms": statistics.median(lat) * 1000,
            "recall_p95_ms": float(np.percentile(lat, 95)) * 1000, "notes": counts["created"],
            "generated": datetime.now().strftime("%Y-%m-%d %H:%M")}

"""memory.explain vs memory.recall on LoCoMo: does inferring the scope from the question's entities pay?

Usage: python bench/explain_locomo.py [--file PATH] [--out bench/results/explain.md] [--limit-questions N]

One fresh database holds every conversation of the file, imported with the product's importer
(``palimpsest_memory.packs.memory.commands.import_conversations``): each conversation is a scope (``conv-26``) and a project
entity of that name, each speaker a person entity with a fact ``(speaker, participates_in, conv-26)``. Then,
for every question, in the same run and with the shipped default configuration:

- ``recall``            memory.recall(question, limit=10), no scope (what an agent without explain gets);
- ``explain``           memory.explain(question, limit=10): scope inferred from the entities the question names;
- ``recall + explain's scope``  memory.recall with the scope explain inferred (explain minus the decision
  preference: isolates what scoping does);
- ``recall, true scope``  memory.recall(question, scope=<the question's conversation>) — the upper reference.

Recall@k is dialog-level evidence recall exactly as ``bench/locomo.py`` computes it (same evidence
normalisation; a question with empty evidence counts 1), over the first k notes of each ranking — for explain
its ``memories`` list only (``source_memories`` and ``baseline_extra`` are not counted). A note counts only
if it belongs to the question's conversation (turn ids repeat across conversations).
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import CATS, load  # noqa: E402

from palimpsest_memory.runtime import Runtime  # noqa: E402

DEFAULT_FILE = ROOT / ".." / "shared" / "data" / "locomo" / "locomo-dev5.json"
KS = (5, 10)
LIMIT = max(KS)
METHODS = ("recall", "explain", "recall + explain's scope", "recall, true scope")


def score(ranking: list[tuple[str | None, str | None]], sid: str, ev: list[str]) -> list[float]:
    """Recall@k for each k: the share of the evidence turns among the first k notes of this conversation."""
    if not ev:
        return [1.0] * len(KS)
    out = []
    for k in KS:
        top = {src for scope, src in ranking[:k] if scope == sid}
        out.append(len(set(ev) & top) / len(ev))
    return out


def ranked(hits) -> list[tuple[str | None, str | None]]:  # type: ignore[no-untyped-def]
    return [(h.note.scope, h.note.source_id) for h in hits]


def run(path: Path, max_questions: int | None) -> dict:
    from palimpsest_memory.packs.memory.commands import import_conversations
    from palimpsest_memory.packs.memory.importers.conversations import parse_locomo

    convs = load(path)
    db = Path(tempfile.mkdtemp(prefix="pal-explain-")) / "locomo.duckdb"
    rows: list[tuple[int, dict[str, list[float]]]] = []
    inference: Counter[str] = Counter()
    lat: dict[str, list[float]] = {m: [] for m in ("recall", "explain")}
    why_questions = 0
    with Runtime.open(db, env={"PALIMPSEST_CONFIG_DISABLED": "1"}) as rt:
        t0 = time.perf_counter()
        counts = import_conversations(rt, parse_locomo(path), "locomo", None)
        ingest_s = time.perf_counter() - t0
        embedder = None
        n = 0
        for conv in convs:
            for qa in conv.qa:
                if max_questions is not None and n >= max_questions:
                    break
                n += 1
                q, ev = qa["q"], qa["ev"]
                res: dict[str, list[float]] = {}
                try:
                    t = time.perf_counter()
                    base = rt.call("memory.recall", {"query": q, "limit": LIMIT})
                    lat["recall"].append(time.perf_counter() - t)
                    embedder = base.embedder
                    t = time.perf_counter()
                    exp = rt.call("memory.explain", {"query": q, "limit": LIMIT})
                    lat["explain"].append(time.perf_counter() - t)
                except Exception as exc:  # a refused (meaningless) question retrieves nothing
                    print(f"refused: {q!r}: {exc}")
                    inference["refused"] += 1
                    rows.append((qa["cat"], {m: score([], conv.sid, ev) for m in METHODS}))
                    continue
                why_questions += exp.why_question
                sc = exp.scope
                inference["none" if sc is None else ("right" if sc == conv.sid else "wrong")] += 1
                if sc is None and any(d.part == "scope" and "several" in d.reason for d in exp.degraded):
                    inference["ambiguous"] += 1
                res["recall"] = score(ranked(base.results), conv.sid, ev)
                res["explain"] = score(ranked(exp.memories), conv.sid, ev)
                scoped = base if sc is None else rt.call("memory.recall", {"query": q, "limit": LIMIT, "scope": sc})
                res["recall + explain's scope"] = score(ranked(scoped.results), conv.sid, ev)
                true = rt.call("memory.recall", {"query": q, "limit": LIMIT, "scope": conv.sid})
                res["recall, true scope"] = score(ranked(true.results), conv.sid, ev)
                rows.append((qa["cat"], res))
    overall = {m: np.mean([r[m] for _, r in rows], axis=0) * 100 for m in METHODS}
    cats = sorted({c for c, _ in rows})
    per_cat = {m: {c: float(np.mean([r[m][1] for cc, r in rows if cc == c]) * 100) for c in cats} for m in METHODS}
    return {"overall": overall, "cat": per_cat, "cats": cats, "n": len(rows), "inference": inference,
            "why": why_questions, "notes": counts["created"], "ingest_s": ingest_s, "embedder": embedder,
            "p50": {m: float(np.median(v)) * 1000 for m, v in lat.items() if v},
            "p95": {m: float(np.percentile(v, 95)) * 1000 for m, v in lat.items() if v}}


def report(r: dict, path: Path, cmd: str, seconds: float) -> str:
    head = " | ".join(["method", *(f"R@{k}" for k in KS), *(f"R@10 {CATS.get(c, c)}" for c in r["cats"])])
    lines = [
        f"# memory.explain vs memory.recall — LoCoMo `{path.name}`", "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `{cmd}` in {seconds:.0f} s on {platform.machine()} "
        f"({platform.processor() or platform.platform()}, {_cores()} cores), Python {platform.python_version()}, "
        f"embedder `{r['embedder']}` (shipped default configuration).", "",
        f"{r['n']} questions, {r['notes']} notes in one database (5 scopes). Each method is called with limit 10; "
        "R@5 is over its first 5 results. For explain only `memories` counts. A gap under ~3 points is noise.", "",
        f"| {head} |", "|" + "---|" * (len(KS) + 1 + len(r["cats"])),
    ]
    for m in METHODS:
        cells = [f"{v:.1f}" for v in r["overall"][m]] + [f"{r['cat'][m][c]:.1f}" for c in r["cats"]]
        name = f"**{m}**" if m == "explain" else m
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    inf = r["inference"]
    n = r["n"]
    lines += [
        "", "Scope inference (explain, no scope given):", "",
        f"- right conversation: {inf['right']} ({inf['right'] / n:.1%}); wrong: {inf['wrong']} "
        f"({inf['wrong'] / n:.1%}); none: {inf['none']} ({inf['none'] / n:.1%}), of which ambiguous "
        f"(a name owning several scopes equally, e.g. *John* speaks in conv-41 and conv-43): {inf['ambiguous']}; "
        f"refused questions: {inf['refused']}.",
        f"- why-questions (decision notes preferred): {r['why']}.",
        f"- latency p50 / p95: recall {r['p50']['recall']:.1f} / {r['p95']['recall']:.1f} ms, explain "
        f"{r['p50']['explain']:.1f} / {r['p95']['explain']:.1f} ms (explain runs 2-3 recalls and a few kg reads).",
        f"- ingest (import_conversations, incl. embedding): {r['ingest_s']:.1f} s.",
    ]
    return "\n".join(lines) + "\n"


def _cores() -> int:
    import os
    return os.cpu_count() or 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "explain.md")
    ap.add_argument("--limit-questions", type=int, default=None, help="Stop after N questions (smoke runs).")
    args = ap.parse_args()
    if not args.file.exists():
        print(f"SKIPPED: {args.file} is absent (LoCoMo dev file; see ../shared/data/README.md)")
        return 0
    t = time.perf_counter()
    r = run(args.file, args.limit_questions)
    cmd = "python bench/explain_locomo.py" + ("" if args.limit_questions is None
                                               else f" --limit-questions {args.limit_questions}")
    text = report(r, args.file, cmd, time.perf_counter() - t)
    print(text)
    if args.limit_questions is None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Does the brain learn? A simulated user with a hidden preference gives feedback on recalls; nDCG@10 against that
preference, per window of rounds, for (a) fixed default weights and (b) the brain — side by side, one run.

Corpus: every turn of ``../shared/data/locomo/locomo-dev5.json`` as a note (``"<speaker>: <text>"``, thread =
session, scope = conversation), with varied occurred_at (each conversation's sessions spread over the
``--span`` days before "now") and salience (uniform 0.05–0.95, seeded; decay 0, so effective salience = salience).
Queries: the LoCoMo questions (shuffled, seeded), each recalled within its conversation (``scope``), limit 10.

The hidden preference: a note is *relevant* to a question when its recall relevance (weight-independent: the
fused, context-aware match scaled to the best candidate) is at least ``--tau`` in a 100-deep pool; among the
relevant notes the user wants, in phase 1, the most recent (gains 5, 4, 3, 2, 1 for the five most recent),
and, from the switch on, the most salient. nDCG@10 uses linear gains and log2 discounts, ideal = the five.

Each round both systems answer the same question; the user gives the brain two explicit events on the brain's
answer: ``useful`` for its best-gain result (if any), ``not_useful`` for its best-ranked zero-gain result.

    python bench/brain_learning.py            # writes bench/results/brain.md
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import random
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"
OUT = ROOT / "bench" / "results" / "brain.md"
NOW = datetime(2026, 3, 1, 12, 0, 0)
TOP_GAINS = (5, 4, 3, 2, 1)

from palimpsest_memory.runtime import Runtime  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def corpus(data: list[dict], span_days: float, seed: int) -> tuple[list[dict], list[tuple[str, str]]]:
    rng = random.Random(seed)
    notes, questions = [], []
    for sample in data:
        sid, conv = sample["sample_id"], sample["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1
                          and isinstance(conv[k], list))
        for i, n in enumerate(sessions):
            day = NOW - timedelta(days=span_days * (len(sessions) - i) / len(sessions))
            for j, turn in enumerate(conv[f"session_{n}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                notes.append({"content": text, "scope": sid, "thread": f"{sid}:s{n}", "source_id": turn["dia_id"],
                              "occurred_at": (day + timedelta(minutes=j)).isoformat(), "decay_factor": 0.0,
                              "salience": round(rng.uniform(0.05, 0.95), 4)})
        questions += [(q["question"], sid) for q in sample["qa"] if q.get("question")]
    rng.shuffle(questions)
    return notes, questions


def open_rt(brain: bool, embedder: str, cap: float | None = None, credit: str | None = None) -> Runtime:
    cfg = {"packs": {"memory": {"embedder": embedder}}, "runtime": {"disabled": [] if brain else ["brain"]}}
    if brain:
        cfg["packs"]["brain"] = {k: v for k, v in (("ess_cap", cap), ("credit", credit)) if v is not None}
    return Runtime.open(":memory:", config=cfg, env=ENV, clock=lambda: NOW)


def ndcg(ranked: list[int], gains: dict[int, float], k: int = 10) -> float:
    dcg = sum(gains.get(n, 0.0) / math.log2(i + 2) for i, n in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=600, help="feedback events per phase (two phases)")
    ap.add_argument("--window", type=int, default=100, help="report every this many feedback events")
    ap.add_argument("--tau", type=float, default=0.5, help="relevance a note needs to count as relevant")
    ap.add_argument("--span", type=float, default=120.0, help="days each conversation's sessions spread over")
    ap.add_argument("--embedder", default="wordllama")
    ap.add_argument("--heldout", type=int, default=100, help="questions kept aside, never given feedback")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cap", type=float, default=None, help="override [packs.brain] ess_cap")
    ap.add_argument("--credit", choices=["relative", "absolute"], default=None, help="override [packs.brain] credit")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--more-seeds", default="11,1,2,3",
                    help="further seeds run the same way, reported as a spread table ('' = none)")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"skipped: {DATA} is absent (the LoCoMo dev file is needed for the corpus)")
        return 0
    t0 = time.perf_counter()
    main_run = run(args, args.seed)
    spread = [(args.seed, main_run["rows"])]
    for seed in (int(x) for x in args.more_seeds.split(",") if x.strip()):
        print(f"== seed {seed}", flush=True)
        spread.append((seed, run(args, seed)["rows"]))
    write_report(args, main_run, time.perf_counter() - t0, spread)
    return 0


def run(args: argparse.Namespace, seed: int) -> dict:
    """One experiment (corpus, both systems, two phases) with this seed."""
    notes, questions = corpus(json.loads(DATA.read_text(encoding="utf-8")), args.span, seed)
    fixed, brain = open_rt(False, args.embedder), open_rt(True, args.embedder, args.cap, args.credit)
    assert "brain" not in fixed.catalog.packs and "brain" in brain.catalog.packs
    for rt in (fixed, brain):
        for i in range(0, len(notes), 1000):
            rt.call("memory.remember_many", {"notes": notes[i:i + 1000], "namespace": "bench"})
    meta = {r[0]: (r[1], r[2]) for r in fixed.store.con.execute(
        "SELECT id, epoch(occurred_at), salience FROM memory.notes").fetchall()}
    pools: dict[int, list[tuple[int, float]]] = {}

    def gains(qi: int, phase: int) -> dict[int, float]:
        if qi not in pools:
            q, sid = questions[qi]
            res = fixed.call("memory.recall", {"query": q, "scope": sid, "limit": 100, "include_breakdown": True,
                                              "now": NOW.isoformat(), "namespace": "bench"})
            pools[qi] = [(h.note.id, h.breakdown.relevance, h.breakdown.effective_salience, h.breakdown.recency)
                         for h in res.results]
        rel = [n for n, r, _, _ in pools[qi] if r >= args.tau]
        key = (lambda n: meta[n][0]) if phase == 1 else (lambda n: meta[n][1])
        return {n: g for n, g in zip(sorted(rel, key=key, reverse=True), TOP_GAINS)}

    heldout = list(range(len(questions) - args.heldout, len(questions)))
    train = len(questions) - args.heldout
    fixed_eval: dict[int, float] = {}

    def evaluate(rt: Runtime, phase: int) -> float:
        """Mean nDCG@10 over the held-out questions (never given feedback) against the phase's preference."""
        vals = []
        for i in heldout:
            g = gains(i, phase)
            if not g:
                continue
            q, sid = questions[i]
            try:
                res = rt.call("memory.recall", {"query": q, "scope": sid, "limit": 10, "now": NOW.isoformat(),
                                                "namespace": "bench"})
            except Exception:
                continue
            vals.append(ndcg([h.note.id for h in res.results], g))
        return sum(vals) / len(vals)

    rows, asked = [], {1: [], 2: []}
    events, qi, rounds = 0, 0, 0
    window: dict[str, list[float]] = {"fixed": [], "brain": []}
    lo = {"relevance": 1.0, "salience": 1.0, "temporal": 1.0}
    hi = {"relevance": 0.0, "salience": 0.0, "temporal": 0.0}
    mark = args.window
    while events < 2 * args.events:
        phase = 1 if events < args.events else 2
        q, sid = questions[qi % train]
        g = gains(qi % train, phase)
        qi += 1
        if not g:
            continue  # nothing relevant: the user has no preference to show
        try:
            params = {"query": q, "scope": sid, "limit": 10, "now": NOW.isoformat(), "namespace": "bench"}
            a = fixed.call("memory.recall", params)
            b = brain.call("memory.recall", params)
        except Exception as exc:  # a refused question (no searchable words)
            print(f"refused: {q!r}: {exc}")
            continue
        rounds += 1
        asked[phase].append((qi - 1) % train)
        window["fixed"].append(ndcg([h.note.id for h in a.results], g))
        window["brain"].append(ndcg([h.note.id for h in b.results], g))
        served = [h.note.id for h in b.results]
        best = max(served, key=lambda n: g.get(n, 0.0))
        zero = next((n for n in served if g.get(n, 0.0) == 0.0), None)
        fb = []
        if g.get(best, 0.0) > 0:
            fb.append((best, "useful"))
        if zero is not None:
            fb.append((zero, "not_useful"))
        for note, signal in fb:
            res = brain.call("brain.feedback", {"recall_id": b.recall_id, "note_id": note, "signal": signal,
                                                "namespace": "bench"})
            events += 1
            for c, p in res.state.posteriors.items():
                lo[c], hi[c] = min(lo[c], p.mean), max(hi[c], p.mean)
        if events >= mark or events >= 2 * args.events:
            st = brain.call("brain.state", {"namespace": "bench"}).state
            m = {c: p.mean for c, p in st.posteriors.items()}
            fa, fb_ = sum(window["fixed"]) / len(window["fixed"]), sum(window["brain"]) / len(window["brain"])
            if phase not in fixed_eval:
                fixed_eval[phase] = evaluate(fixed, phase)
            ha, hb = fixed_eval[phase], evaluate(brain, phase)
            rows.append((events, phase, len(window["fixed"]), fa, fb_, ha, hb, m))
            print(f"events {events:4d} phase {phase} rounds {len(window['fixed']):3d} nDCG@10 fixed {fa:.3f} "
                  f"brain {fb_:.3f} ({(fb_ / fa - 1) * 100:+.1f} %) held-out {ha:.3f} / {hb:.3f} "
                  f"({(hb / ha - 1) * 100:+.1f} %)  means " +
                  " ".join(f"{c[:3]}={v:.3f}" for c, v in m.items()), flush=True)
            window = {"fixed": [], "brain": []}
            mark += args.window
    replay = brain.call("brain.replay", {"namespace": "bench"})
    best = {phase: oracle([(pools[i], gains(i, phase)) for i in asked[phase]]) for phase in (1, 2)}
    for phase, (w, v, d) in best.items():
        print(f"phase {phase}: best fixed weights {w} reach nDCG@10 {v:.3f} offline (defaults {d:.3f})")
    fixed.close()
    brain.close()
    return {"rows": rows, "lo": lo, "hi": hi, "replay_ok": replay.matches, "rounds": rounds,
            "n_notes": len(notes), "best": best}


def oracle(cases: list[tuple[list[tuple], dict[int, float]]]) -> tuple[tuple[float, ...], float, float]:
    """The best fixed weights in hindsight (a 0.05 grid on the simplex), re-scoring each question's 100-deep pool
    offline with the score formula; returns (weights, their mean nDCG@10, the defaults' mean nDCG@10)."""
    import numpy as np

    grid = [(a / 20, b / 20, (20 - a - b) / 20) for a in range(21) for b in range(21 - a)]
    W = np.array(grid + [(0.7, 0.2, 0.1)]).T  # 3 × G (every column sums to 1)
    total = np.zeros(W.shape[1])
    for pool, g in cases:
        ids = np.array([p[0] for p in pool])
        X = np.array([p[1:] for p in pool], dtype=np.float64)
        scores = X @ W  # P × G
        top = np.argsort(-scores, axis=0, kind="stable")[:10]
        for col in range(W.shape[1]):
            total[col] += ndcg(ids[top[:, col]].tolist(), g)
    mean = total / max(len(cases), 1)
    best = int(np.argmax(mean[:-1]))
    return grid[best], float(mean[best]), float(mean[-1])


def at(rows: list, events: int, phase: int) -> tuple[float, float]:
    """(window, held-out) gain of the brain over fixed at the first report at or after ``events`` in ``phase``."""
    for ev, ph, _, fa, fb, ha, hb, _ in rows:
        if ph == phase and ev >= events:
            return (fb / fa - 1) * 100, (hb / ha - 1) * 100
    return float("nan"), float("nan")


def write_report(args, run_: dict, secs: float, spread: list) -> None:
    rows, lo, hi, replay_ok, rounds, n_notes, best = (run_[k] for k in (
        "rows", "lo", "hi", "replay_ok", "rounds", "n_notes", "best"))
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else "?"
    cmd = "python bench/brain_learning.py" + "".join(
        f" --{k} {v}" for k, v in (("events", args.events), ("window", args.window), ("tau", args.tau),
                                   ("span", args.span), ("heldout", args.heldout), ("embedder", args.embedder), ("seed", args.seed),
                                   ("more-seeds", args.more_seeds))) + (
        f" --cap {args.cap:g}" if args.cap is not None else "") + (f" --credit {args.credit}" if args.credit else "")
    lines = [
        "# The brain learns a hidden preference — `locomo-dev5.json`", "",
        f"{n_notes} notes (LoCoMo turns; sessions spread over {args.span:g} days, salience uniform 0.05–0.95, "
        f"decay 0), {rounds} rounds. Phase 1: among relevant notes (relevance ≥ {args.tau}) the most recent are "
        f"useful; after {args.events} feedback events the preference switches to the most salient. Each round: "
        "the same question to (a) fixed default weights 0.70/0.20/0.10 (brain disabled) and (b) the brain; the "
        "simulated user gives the brain one explicit `useful` (its best result) and one explicit `not_useful` "
        "(its best-ranked result of gain 0). nDCG@10 is the mean over the rounds of each window, against the "
        f"hidden preference of that moment; *held-out* is the mean over {args.heldout} questions set aside (never "
        "asked during training, never given feedback), asked to both systems at the end of each window.", "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `{cmd}` in {secs:.0f} s (all seeds) on {cpu} "
        f"({platform.system()} {platform.release()}, Python {platform.python_version()}).", "",
        "| feedback events | phase | rounds | window: fixed | window: brain | brain vs fixed | held-out: fixed | "
        "held-out: brain | brain vs fixed | mean w_rel | mean w_sal | mean w_temp |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for ev, phase, n, fa, fb, ha, hb, m in rows:
        lines.append(f"| {ev} | {'1 recent' if phase == 1 else '2 salient'} | {n} | {fa:.3f} | {fb:.3f} | "
                     f"{(fb / fa - 1) * 100:+.1f} % | {ha:.3f} | {hb:.3f} | {(hb / ha - 1) * 100:+.1f} % | "
                     f"{m['relevance']:.3f} | {m['salience']:.3f} | {m['temporal']:.3f} |")
    lines += ["", "Posterior means over the whole run (one value per feedback event): " + ", ".join(
        f"{c} {lo[c]:.3f}–{hi[c]:.3f}" for c in lo) + " (the cap and floor bound them to [0.025, 0.975]). "
        f"Replaying the event log rebuilds the stored posteriors: {'yes' if replay_ok else 'NO'}.", "",
        "For scale, the best *fixed* weights in hindsight per phase (a 0.05 grid over the weight simplex, each "
        "question's 100-deep pool re-scored offline with the score formula, near-duplicate demotion ignored):", "",
        "| phase | best fixed weights (rel, sal, temp) | their nDCG@10 | defaults, same offline scoring |",
        "|---|---|---|---|"]
    for phase, (w, v, d) in best.items():
        lines.append(f"| {phase} | {w[0]:.2f}, {w[1]:.2f}, {w[2]:.2f} | {v:.3f} | {d:.3f} |")
    e = args.events
    marks = [("phase 1, 500 events", 500, 1), (f"{e + 100} (100 after the switch)", e + 100, 2),
             (f"{e + 200} (200 after)", e + 200, 2), (f"{e + 300} (300 after)", e + 300, 2),
             (f"{2 * e} (end of phase 2)", 2 * e, 2)]
    lines += ["", "The same experiment with other seeds (the seed draws the corpus' dates and saliences, hence "
              "what the hidden preference ranks first): brain vs fixed on the held-out questions, the training "
              f"window in brackets. Command as above with `--seed N`; seeds {', '.join(str(s) for s, _ in spread)}.",
              "", "| feedback events | " + " | ".join(f"seed {s}" for s, _ in spread) + " | mean held-out |",
              "|---|" + "---|" * (len(spread) + 1)]
    for label, ev, ph in marks:
        vals = [at(r, ev, ph) for _, r in spread]
        mean = sum(h for _, h in vals) / len(vals)
        lines.append(f"| {label} | " + " | ".join(f"{h:+.1f} % ({w:+.1f} %)" for w, h in vals) +
                     f" | {mean:+.1f} % |")
    lines += [""]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    raise SystemExit(main())

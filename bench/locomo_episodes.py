"""Episodes from content and time (issue 44, ADR 0034): LoCoMo recall without ``thread`` on perturbed copies.

Usage: python bench/locomo_episodes.py [--file PATH] [--seeds 44,45,46] [--no-product] [--out bench/results/locomo_episodes.md]

The copies are made by bench/locomo_perturb.py's published recipe (turn gaps from a power law on [10 s, 3 h],
sessions 1 h to 7 days apart, seed 44 first; and a copy without any time), plus the stress copy issue 44 names
(every turn 40 minutes after the previous one, sessions as in LoCoMo). On each copy, with the bench's stages
(bench/locomo.py, one store per conversation, the shipped constants): the sessions given as ``thread``, then every
note without ``thread`` under each episode rule: the shipped rule (Tukey's fence over the scope's rhythm, with
the configured gap as a floor), each of its parts alone, the old fixed rule, a topic rule (lexical novelty)
alone and on top, and no inference. Δ = paired bootstrap over questions (bench/locomo.py ``bootstrap_ci``).
Then the product itself (``memory.import_conversations`` + ``memory.recall``, one shared store) with and without
``thread`` on each copy.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo as L  # noqa: E402
from locomo_perturb import SEED, no_times, perturb  # noqa: E402
from report import write_report  # noqa: E402

from palimpsest_memory.packs.memory.engine.threads import Episodes  # noqa: E402

KS = L.KS


# ------------------------------------------------------------ the rules
class TopicEpisodes:
    """A topic rule measured here, not shipped (ADR 0034): a note that shares no word of weight with the scope's
    previous 5 notes starts an episode. Weight = the BM25 idf ``max(0, ln((N − df + 0.5)/(df + 0.5)))`` over
    the scope's notes so far (a word in half of them or more, such as the speakers' names, weighs nothing).
    With ``time`` the shipped time rule decides first (this rule can only add boundaries); without it, time is
    not looked at."""

    reads_words = True
    LOOKBACK = 5

    def __init__(self, gap_seconds: float, *, time: bool = True, rhythm: bool = True) -> None:
        self.time = Episodes(gap_seconds, rhythm=rhythm) if time else None
        self._state: dict = {}

    def key(self, note_id: int, namespace: str, scope, occurred: float, words) -> object:
        st = self._state.setdefault((namespace, scope), {"df": Counter(), "n": 0, "recent": [], "base": None,
                                                         "episode": None})
        words = set(words)
        base = self.time.key(note_id, namespace, scope, occurred) if self.time else "one"
        prior = set().union(*st["recent"])
        n, df = st["n"], st["df"]

        def w(t: str) -> float:
            return max(0.0, math.log((n - df[t] + 0.5) / (df[t] + 0.5)))
        shared = sum(w(t) for t in words & prior)
        novel = bool(st["recent"]) and shared == 0.0 and any(w(t) > 0 for t in words)
        if base != st["base"] or novel or st["episode"] is None:
            st["episode"] = ("~topic", namespace, scope, int(note_id))
        st["base"] = base
        st["recent"] = (st["recent"] + [words])[-self.LOOKBACK:]
        st["n"] += 1
        df.update(words)
        return st["episode"]


NO_FLOOR = 1e-6  # minutes: "the fence alone" (a floor of 0 would turn inference off)
RULES = {  # name in the tables: (Scheme.episodes key, factory of seconds -> rule, gap minutes or None = shipped)
    "**shipped: rhythm fence, floor = episode_gap_minutes**": ("", Episodes, None),
    "time: the old fixed rule (floor alone)": ("fixed", lambda g: Episodes(g, rhythm=False), None),
    "time: the rhythm fence alone (no floor)": ("", Episodes, NO_FLOOR),
    "topic alone (lexical novelty, no time)": ("topic", lambda g: TopicEpisodes(g, time=False), None),
    "both: shipped time rule + topic": ("time+topic", lambda g: TopicEpisodes(g), None),
    "no inference (each note alone)": ("", Episodes, 0.0),
}
for _name, (_key, _make, _) in RULES.items():
    L.EPISODE_RULES.setdefault(_key, _make)


def every_40_minutes(data: list[dict]) -> list[dict]:
    """Issue 44's stress copy: each turn 40 minutes after the previous one of its session, sessions where
    LoCoMo puts them."""
    out = json.loads(json.dumps(data))
    for sample in out:
        conv = sample["conversation"]
        for n in sorted(int(k.split("_")[1]) for k in conv if k.count("_") == 1 and isinstance(conv[k], list)):
            start = L.parse_session_date(conv.get(f"session_{n}_date_time", ""))
            for j, t in enumerate(conv[f"session_{n}"]):
                if start is not None:
                    t["timestamp"] = (start + dt.timedelta(minutes=40 * j)).isoformat()
    return out


# ------------------------------------------------------------ the product
def evaluate_product(convs: list, threads: bool, config: dict | None = None) -> np.ndarray:
    """Recall@KS of ``memory.recall`` over every question, each turn imported with its own time (none when the
    copy has none: the store's clock) and, with ``threads``, its session as ``thread``."""
    from palimpsest_memory.runtime import Runtime
    db = Path(tempfile.mkdtemp(prefix="pal-episodes-")) / "s.duckdb"
    rows = []
    with Runtime.open(db, config=config, env={"PALIMPSEST_CONFIG_DISABLED": "1"}) as rt:
        payload = []
        for c in convs:
            notes = []
            for t in c.turns:
                n = {"content": t.content, "scope": c.sid, "source_id": t.dia, "key": f"locomo:{c.sid}:{t.dia}"}
                if t.occurred_at is not None:
                    n["occurred_at"] = t.occurred_at.isoformat()
                if threads:
                    n["thread"] = t.thread.split("/", 1)[1]
                notes.append(n)
            payload.append({"scope": c.sid, "speakers": c.speakers, "notes": notes})
        rt.call("memory.import_conversations", {"conversations": payload}, internal=True)
        for c in convs:
            for qa in c.qa:
                got = [h.note.source_id for h in rt.call("memory.recall", {"query": qa["q"], "scope": c.sid,
                                                                            "limit": max(KS)}).results]
                ev = set(qa["ev"])
                rows.append([1.0 if not ev else len(ev & set(got[:k])) / len(ev) for k in KS])
    return np.array(rows) * 100


# ------------------------------------------------------------ the report
def episodes_of(convs: list, scheme) -> int:
    return len(set(L.thread_keys(convs, False, scheme.ep).values()))


def boundary_match(convs: list, scheme) -> tuple[float, float]:
    """Precision and recall of the rule's episode starts against the session starts (turns after the first)."""
    keys = L.thread_keys(convs, False, scheme.ep)
    tp = fp = fn = 0
    for c in convs:
        for a, b in zip(c.turns, c.turns[1:]):
            cut, truth = keys[a.id] != keys[b.id], a.thread != b.thread
            tp, fp, fn = tp + (cut and truth), fp + (cut and not truth), fn + (truth and not cut)
    return 100 * tp / max(tp + fp, 1), 100 * tp / max(tp + fn, 1)


def copy_section(label: str, data: list[dict], emb, product: bool, cache_dir) -> tuple[list[str], dict]:
    convs = L.load(data)
    qcache = {emb.name: {c.sid: L.embed_texts(emb, [q["q"] for q in c.qa], query=True, cache_dir=cache_dir)
                         for c in convs}}
    cache = {(emb.name, d): {c.sid: L.embed_texts(emb, [L.indexed_text(t, d) for t in c.turns], cache_dir=cache_dir)
                             for c in convs} for d in (True, False)}
    st = L.Stores(convs)
    new = L.shipped()
    with_thread = L.evaluate(st, new, (False, True), emb, cache, qcache)
    res = {"with `thread` (the sessions)": with_thread}
    out = [f"\n### {label}\n",
           "| rule (notes without `thread`) | R@5 | R@10 | R@25 | episodes | boundary precision / recall | "
           "Δ R@10 vs with `thread` | Δ R@10 vs the old fixed rule |", "|---|---|---|---|---|---|---|---|",
           f"| with `thread` (the sessions) | {with_thread[:, 0].mean():.1f} | {with_thread[:, 1].mean():.1f} | "
           f"{with_thread[:, 2].mean():.1f} | {sum(len({t.thread for t in c.turns}) for c in convs)} | | | |"]
    schemes = {}
    for name, (key, _, gap) in RULES.items():
        schemes[name] = replace(new, name=name, episodes=key, gap_minutes=new.gap_minutes if gap is None else gap)
    old = L.evaluate(st, schemes["time: the old fixed rule (floor alone)"], (False, False), emb, cache, qcache)
    for name, s in schemes.items():
        r = res[name] = L.evaluate(st, s, (False, False), emb, cache, qcache)
        p, rc = boundary_match(convs, s) if s.gap_minutes > 0 else (float("nan"), 0.0)
        vs_old = "" if "old fixed" in name else L.ci_cell(r, old)
        out.append(f"| {name} | {r[:, 0].mean():.1f} | {r[:, 1].mean():.1f} | {r[:, 2].mean():.1f} | "
                   f"{episodes_of(convs, s) if s.gap_minutes > 0 else sum(len(c.turns) for c in convs)} | "
                   f"{p:.0f} / {rc:.0f} | {L.ci_cell(r, with_thread)} | {vs_old} |")
        print(out[-1], file=sys.stderr, flush=True)
    if product:
        t0 = time.perf_counter()
        a, b = evaluate_product(convs, True), evaluate_product(convs, False)
        res["product with"], res["product without"] = a, b
        out += ["", "The product (`memory.import_conversations` + `memory.recall(query, scope, limit=50)`, one shared "
                "store, shipped config):", "",
                "| memory.recall | R@5 | R@10 | R@25 | Δ R@10 vs with `thread` |", "|---|---|---|---|---|",
                f"| with `thread` | {a[:, 0].mean():.1f} | {a[:, 1].mean():.1f} | {a[:, 2].mean():.1f} | |",
                f"| **without `thread`** | {b[:, 0].mean():.1f} | {b[:, 1].mean():.1f} | {b[:, 2].mean():.1f} | "
                f"{L.ci_cell(b, a)} |",
                f"\n({time.perf_counter() - t0:.0f} s for both product runs; 1-min load {os.getloadavg()[0]:.1f})"]
        print("\n".join(out[-4:]), file=sys.stderr, flush=True)
    return out, res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(L.DEFAULT_FILE))
    ap.add_argument("--seeds", default=f"{SEED},{SEED + 1},{SEED + 2}",
                    help="perturbation seeds; the first is the published copy, the others check it is no fluke")
    ap.add_argument("--embedder", default="wordllama", choices=["wordllama", "minilm", "e5"])
    ap.add_argument("--embed-cache", help="memoise embeddings on disk in this directory")
    ap.add_argument("--product", action=argparse.BooleanOptionalAction, default=True,
                    help="also run memory.recall with and without `thread` on each copy")
    ap.add_argument("--out", default=str(L.ROOT / "bench" / "results" / "locomo_episodes.md"))
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    data = json.loads(Path(args.file).read_text())
    emb = L.get_embedder(args.embedder)
    t0 = time.perf_counter()
    cmd = (f"python bench/locomo_episodes.py --seeds {args.seeds}" + ("" if args.product else " --no-product")
           + ("" if Path(args.file) == Path(L.DEFAULT_FILE) else f" --file {args.file}"))
    new = L.shipped()
    out = ["# Episodes from content and time (issue 44, ADR 0034)\n",
           f"Generated {dt.datetime.now():%Y-%m-%d %H:%M} by `{cmd}` (embedder `{emb.name}`, file "
           f"`{Path(args.file).name}`), on {platform.node()} ({os.cpu_count()} cores, shared); 1-min load average "
           f"at the start {os.getloadavg()[0]:.1f}.\n",
           "Copies (bench/locomo_perturb.py, the recipe in its docstring and ADR 0034): *timed* = each turn its own "
           "time, gaps inside a session from a power law on [10 s, 3 h] (shape 0.5), sessions 1 h to 7 days apart "
           "(log-uniform), seed in the title; *untimed* = no time at all (the notes are written at one instant); "
           "*every 40 minutes* = issue 44's stress copy; *as published* = LoCoMo's own session times. The bench's "
           "stages (bench/locomo.py), one store per conversation, shipped constants "
           f"(`episode_gap_minutes` = {new.gap_minutes:g}). Boundary precision / recall: the rule's episode starts "
           "against the session starts. Δ: paired bootstrap over the 999 questions (2,000 resamples, 95 % "
           "interval); * = it excludes 0. The goals (issue 44): R@10 without `thread` within 1.5 points of with "
           "`thread` on the timed copy, and ≥ 77 on the untimed one.\n"]
    copies = [(f"timed, seed {s}{' (the published copy)' if s == seeds[0] else ''}", perturb(data, s)) for s in seeds]
    copies += [("untimed", no_times(data)), ("every 40 minutes (issue 44's stress copy)", every_40_minutes(data)),
               ("as published (LoCoMo's session times)", data)]
    summary = []
    for label, d in copies:
        rows, res = copy_section(label, d, emb, args.product and (label.startswith("timed, seed " + str(seeds[0]))
                                                                 or label == "untimed"), args.embed_cache)
        out += rows
        shipped = res["**shipped: rhythm fence, floor = episode_gap_minutes**"]
        line = (f"| {label} | {res['with `thread` (the sessions)'][:, 1].mean():.1f} | {shipped[:, 1].mean():.1f} | "
                f"{L.ci_cell(shipped, res['with `thread` (the sessions)'])} |")
        if "product with" in res:
            line += (f" {res['product with'][:, 1].mean():.1f} | {res['product without'][:, 1].mean():.1f} | "
                     f"{L.ci_cell(res['product without'], res['product with'])} |")
        else:
            line += " | | |"
        summary.append(line)
    out[3:3] = ["\n## Summary: R@10 with and without `thread` (shipped rule)\n",
                "| copy | bench, with `thread` | bench, without | Δ | memory.recall, with `thread` | without | Δ |",
                "|---|---|---|---|---|---|---|", *summary, "\n## Ablations, copy by copy"]
    out.append(f"\nEvaluation time: {time.perf_counter() - t0:.0f} s; 1-min load at the end {os.getloadavg()[0]:.1f}.")
    write_report(args.out, "\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

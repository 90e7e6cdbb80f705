"""Where the evidence a ranking misses stands against the question's words (issue 19, ADR 0008).

An evidence turn *shares a word* with its question when one of the question's index terms (the product's
``tokenize``: stop words dropped, stemmed), other than the conversation's speakers' names, is among the turn's
own terms. Evidence that shares none is found by the dense leg, by the context signals (its thread neighbours
matched) or through the words the index folds into its bag (the neighbours' words, its date); BM25 on its own
words cannot see it, whatever the ranking does with BM25's scores. The section counts, per
category and evidence span, how much of the evidence is like that, and what share of each kind a ranking puts in
its top 10, so that a weak spot can be read as "the words are there and the ranking misses them" or "no leg that
matches words can reach it".
"""
from __future__ import annotations

from typing import Any

import numpy as np

from palimpsest_memory.packs.memory.text import tokenize

TOP = 10


def shared_word(convs: list[Any]) -> list[dict[str, bool]]:
    """Per question in file order, ``{evidence dia id: shares an index term with the question}``; the turn's
    own text (after ``"<speaker>: "``, without the date or the neighbours' words the index adds) and the question's
    terms minus the speakers' names are compared."""
    out = []
    for conv in convs:
        text = {t.dia: t.content.split(": ", 1)[-1] for t in conv.turns}
        names = {tok for sp in conv.speakers for tok in tokenize(sp)}
        for qa in conv.qa:
            terms = set(tokenize(qa["q"])) - names
            out.append({e: bool(terms & set(tokenize(text[e]))) for e in qa["ev"]})
    return out


def gap_counts(shared: list[dict[str, bool]], rankings: list[list[str]], select: np.ndarray) -> tuple[int, int, int, int]:
    """``(evidence, of which sharing no word, found in the top 10 among those sharing one, … among the rest)``
    over the selected questions."""
    n = no = hit_yes = hit_no = 0
    for q in np.flatnonzero(select).tolist():
        top = set(rankings[q][:TOP])
        for e, yes in shared[q].items():
            n += 1
            no += not yes
            if e in top:
                hit_yes += yes
                hit_no += not yes
    return n, no, hit_yes, hit_no


def gap_section(convs: list[Any], cats: np.ndarray, span: np.ndarray, named: list[tuple[str, list[list[str]]]],
                store: str) -> list[str]:
    """A markdown section: per ranking, the share of the evidence found in the top 10 among the evidence that
    shares a word with its question and among the evidence that does not; overall, multi-hop, open-domain and
    several sessions."""
    shared = shared_word(convs)
    groups = [("all questions", np.ones(cats.size, dtype=bool)), ("multi-hop", cats == 1), ("open-domain", cats == 3),
              ("several sessions", span >= 2)]
    out = [f"\n### The lexical gap: evidence that shares no word with its question ({store})\n",
           "An evidence turn shares a word when one of the question's index terms (stop words dropped, stemmed; "
           "the speakers' names aside) is among the turn's own terms (bench/locomo_gap.py). BM25 reaches the "
           "others only through what the index folds into a turn's bag (its thread neighbours' words, its date); "
           "the dense leg and the context signals can reach them. Cells: the share of that kind of "
           "evidence in the ranking's top 10, per evidence turn (not averaged per question as above).\n"]
    counts = [gap_counts(shared, named[0][1], sel) for _, sel in groups]
    out += ["| ranking | " + " | ".join(f"{g}: shares a word | {g}: shares none" for g, _ in groups) + " |",
            "|---|" + "---|" * (2 * len(groups)),
            "| *evidence turns* | " + " | ".join(f"*{n - no}* | *{no} ({100 * no / max(n, 1):.0f} %)*"
                                                 for n, no, _, _ in counts) + " |"]
    for name, rankings in named:
        cells = []
        for _, sel in groups:
            n, no, hy, hn = gap_counts(shared, rankings, sel)
            cells += [f"{100 * hy / max(n - no, 1):.1f}", f"{100 * hn / max(no, 1):.1f}"]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["\nWhat ranking alone could reach: R@10 per question as above, then the same with every evidence turn "
            "that shares a word with its question counted as found (an oracle that ranks all of them into the top 10 "
            "and leaves the rest where the ranking put them). A goal above the second figure needs the evidence "
            "that shares no word.\n",
            "| ranking | " + " | ".join(f"{g}: R@10 / with every word-sharing turn found" for g, _ in groups) + " |",
            "|---|" + "---|" * len(groups)]
    for name, rankings in named:
        now, bound = word_bound(shared, rankings)
        out.append(f"| {name} | " + " | ".join(f"{now[sel].mean():.1f} / {bound[sel].mean():.1f}" if sel.any() else "–"
                                              for _, sel in groups) + " |")
    name, rankings = named[-1]
    for g, sel in groups[1:]:
        n, rank, above, silent = missed_profile(convs, rankings, sel)
        out.append(f"- {name}, {g}: {n} word-sharing evidence turns miss the top 10 (median rank {rank:.0f}; a turn "
                   f"the ranking did not return counts as one place past its end); {100 * above:.0f} % of them match "
                   f"more of the question's information than the median top-10 note does; the top 10 of these questions "
                   f"hold on average {silent:.1f} notes that say no query word themselves.")
    n, beyond, beside, session = gap_reach(convs, shared, rankings)
    out.append(f"- {name}: of the {n} evidence turns that share no word and miss the top 10, {beyond} are not among "
               f"the {max((len(r) for r in rankings), default=0)} returned, {beside} sit next to a top-10 note of their "
               f"thread, and {session} have their thread (session) in the top 10 at all. The context signals lift a "
               f"matched note's thread and neighbours: they cannot reach the {n - session} whose thread has no note "
               f"in the top 10.")
    return out


def gap_reach(convs: list[Any], shared: list[dict[str, bool]], rankings: list[list[str]]) -> tuple[int, int, int, int]:
    """Of the evidence turns that share no word with their question and miss the top 10: ``(count, not returned
    at all, next to a top-10 note of their thread, with any top-10 note in their thread)``."""
    n = beyond = beside = session = 0
    q = 0
    for conv in convs:
        order = [t.dia for t in conv.turns]
        thread = {t.dia: t.thread for t in conv.turns}
        at = {d: i for i, d in enumerate(order)}
        for _ in conv.qa:
            ranking, ev = rankings[q], shared[q]
            q += 1
            top = set(ranking[:TOP])
            for e, yes in ev.items():
                if yes or e in top:
                    continue
                n += 1
                beyond += e not in ranking
                i = at[e]
                near = {order[j] for j in (i - 1, i + 1) if 0 <= j < len(order) and thread[order[j]] == thread[e]}
                beside += bool(near & top)
                session += any(thread.get(t) == thread[e] for t in top)
    return n, beyond, beside, session


def missed_profile(convs: list[Any], rankings: list[list[str]], select: np.ndarray) -> tuple[int, float, float, float]:
    """Of the evidence that shares a word with its question and misses the top 10, over the selected questions:
    ``(count, median rank (1-based), share whose matched information — Σ idf of the question's terms among the
    turn's own terms, idf over the turn's conversation — exceeds the median top-10 note's, mean number of top-10
    notes matching no question term themselves)``."""
    ranks, above, silent, q = [], [], [], 0
    for conv in convs:
        own = {t.dia: set(tokenize(t.content.split(": ", 1)[-1])) for t in conv.turns}
        df: dict[str, int] = {}
        for terms in own.values():
            for w in terms:
                df[w] = df.get(w, 0) + 1
        n = len(own)
        names = {tok for sp in conv.speakers for tok in tokenize(sp)}
        for qa in conv.qa:
            ranking, keep = rankings[q], bool(select[q])
            q += 1
            if not keep:
                continue
            terms = set(tokenize(qa["q"])) - names
            def info(d: str) -> float:
                return float(sum(np.log1p((n - df[w] + 0.5) / (df[w] + 0.5)) for w in terms & own.get(d, set())))
            top = ranking[:TOP]
            top_info = [info(d) for d in top]
            missed = [e for e in qa["ev"] if terms & own[e] and e not in top]
            for e in missed:
                ranks.append(ranking.index(e) + 1 if e in ranking else len(ranking) + 1)
                above.append(info(e) > float(np.median(top_info)) if top_info else True)
                silent.append(sum(x == 0 for x in top_info))
    if not ranks:
        return 0, float("nan"), float("nan"), float("nan")
    return len(ranks), float(np.median(ranks)), float(np.mean(above)), float(np.mean(silent))


def word_bound(shared: list[dict[str, bool]], rankings: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per question, R@10 of the ranking and R@10 with every word-sharing evidence turn counted as found (a
    question without evidence counts 100, as the metric does)."""
    now, bound = [], []
    for ev, ranking in zip(shared, rankings):
        top = set(ranking[:TOP])
        if not ev:
            now.append(1.0)
            bound.append(1.0)
            continue
        now.append(sum(e in top for e in ev) / len(ev))
        bound.append(sum(yes or e in top for e, yes in ev.items()) / len(ev))
    return np.array(now) * 100, np.array(bound) * 100

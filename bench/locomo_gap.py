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

from dataclasses import dataclass
from typing import Any

import numpy as np

from palimpsest_memory.packs.memory.engine.text import tokenize

TOP = 10


@dataclass(frozen=True)
class Turns:
    """One conversation's turns as the section compares them: each turn's own index terms (the text after
    ``"<speaker>: "``, without the date or the neighbours' words the index adds), their order and threads, and the
    document frequency of each term over the conversation (the idf a scoped recall weighs words by)."""
    own: dict[str, set[str]]
    order: list[str]
    thread: dict[str, Any]
    df: dict[str, int]

    @classmethod
    def of(cls, conv: Any) -> "Turns":
        own = {t.dia: set(tokenize(t.content.split(": ", 1)[-1])) for t in conv.turns}
        df: dict[str, int] = {}
        for terms in own.values():
            for w in terms:
                df[w] = df.get(w, 0) + 1
        return cls(own, [t.dia for t in conv.turns], {t.dia: t.thread for t in conv.turns}, df)

    def information(self, terms: set[str], dia: str) -> float:
        """Σ idf of ``terms`` among the turn's own terms (0 for a turn not of this conversation)."""
        n = len(self.own)
        return float(sum(np.log1p((n - self.df[w] + 0.5) / (self.df[w] + 0.5)) for w in terms & self.own.get(dia, set())))


@dataclass(frozen=True)
class Asked:
    """One question: its index terms other than the speakers' names, its evidence, and its conversation's turns."""
    terms: set[str]
    evidence: list[str]
    turns: Turns


def asked(convs: list[Any]) -> list[Asked]:
    """Every question in file order (the order of the rankings and of ``cats``/``span``)."""
    out = []
    for conv in convs:
        turns = Turns.of(conv)
        names = {tok for sp in conv.speakers for tok in tokenize(sp)}
        out += [Asked(set(tokenize(qa["q"])) - names, qa["ev"], turns) for qa in conv.qa]
    return out


def shared_word(questions: list[Asked]) -> list[dict[str, bool]]:
    """Per question, ``{evidence dia id: shares an index term with the question}``."""
    return [{e: bool(a.terms & a.turns.own[e]) for e in a.evidence} for a in questions]


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
    questions = asked(convs)
    shared = shared_word(questions)
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
        n, rank, above, silent = missed_profile(questions, rankings, sel)
        out.append(f"- {name}, {g}: {n} word-sharing evidence turns miss the top 10 (median rank {rank:.0f}; a turn "
                   f"the ranking did not return counts as one place past its end); {100 * above:.0f} % of them match "
                   f"more of the question's information than the median top-10 note does; the top 10 of these questions "
                   f"hold on average {silent:.1f} notes that say no query word themselves.")
    n, beyond, beside, session = gap_reach(questions, shared, rankings)
    out.append(f"- {name}: of the {n} evidence turns that share no word and miss the top 10, {beyond} are not among "
               f"the {max((len(r) for r in rankings), default=0)} returned, {beside} sit next to a top-10 note of their "
               f"thread, and {session} have their thread (session) in the top 10 at all. The context signals lift a "
               f"matched note's thread and neighbours: they cannot reach the {n - session} whose thread has no note "
               f"in the top 10.")
    return out


def gap_reach(questions: list[Asked], shared: list[dict[str, bool]],
              rankings: list[list[str]]) -> tuple[int, int, int, int]:
    """Of the evidence turns that share no word with their question and miss the top 10: ``(count, not returned
    at all, next to a top-10 note of their thread, with any top-10 note in their thread)``."""
    n = beyond = beside = session = 0
    for a, ev, ranking in zip(questions, shared, rankings):
        order, thread = a.turns.order, a.turns.thread
        top = set(ranking[:TOP])
        for e, yes in ev.items():
            if yes or e in top:
                continue
            n += 1
            beyond += e not in ranking
            i = order.index(e)
            near = {order[j] for j in (i - 1, i + 1) if 0 <= j < len(order) and thread[order[j]] == thread[e]}
            beside += bool(near & top)
            session += any(thread.get(t) == thread[e] for t in top)
    return n, beyond, beside, session


def missed_profile(questions: list[Asked], rankings: list[list[str]],
                   select: np.ndarray) -> tuple[int, float, float, float]:
    """Of the evidence that shares a word with its question and misses the top 10, over the selected questions:
    ``(count, median rank (1-based), share whose matched information — Σ idf of the question's terms among the
    turn's own terms, idf over the turn's conversation — exceeds the median top-10 note's, mean number of top-10
    notes matching no question term themselves)``."""
    ranks, above, silent = [], [], []
    for a, ranking, keep in zip(questions, rankings, select):
        if not keep:
            continue
        top = ranking[:TOP]
        top_info = [a.turns.information(a.terms, d) for d in top]
        for e in a.evidence:
            if not a.terms & a.turns.own[e] or e in top:
                continue
            ranks.append(ranking.index(e) + 1 if e in ranking else len(ranking) + 1)
            above.append(a.turns.information(a.terms, e) > float(np.median(top_info)) if top_info else True)
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

"""memory.recall(group="episode") (issue 44 item 2, ADR 0036): episodes ranked by score, each with its best turns
and its span; a thread wins over inference; namespace, scope and as_of honoured; bad params refused with a typed
error; the grouped answer never loses the ungrouped recall's top note. Runs on both backends (tests/packs)."""
from __future__ import annotations

import random
from datetime import timedelta

import numpy as np
import pytest

from palimpsest_memory.packs.memory.ranking import grouping
from palimpsest_memory.runtime import errors
from store_support import HASHING, T0

HOUR = timedelta(hours=1)


def remember(rt, content: str, at, **kw) -> int:
    return rt.call("memory.remember", {"content": content, "occurred_at": at.isoformat(), **kw}).note.id


def grouped(rt, query: str, **kw):
    return rt.call("memory.recall", {"query": query, "group": "episode", **kw})


@pytest.fixture
def chats(rt):  # type: ignore[no-untyped-def]
    """Scope 'orion': a thread 'db' (3 notes) and, interleaved at the same times, 3 notes without a thread (one
    inferred episode); a second inferred episode two days later; scope 'other' says the same words."""
    ids = {"db": [], "bare": [], "later": []}
    for i, (a, b) in enumerate([("we chose postgres for orion", "the cat sleeps on the sofa"),
                                ("postgres keeps invoices strict", "lunch was pizza again"),
                                ("orion migrates to postgres 16", "the weather is grey")]):
        ids["db"].append(remember(rt, a, T0 + i * timedelta(minutes=1), scope="orion", thread="db"))
        ids["bare"].append(remember(rt, b, T0 + i * timedelta(minutes=1), scope="orion"))
    for i, text in enumerate(["postgres backups for orion run nightly", "orion backups tested"]):
        ids["later"].append(remember(rt, text, T0 + 48 * HOUR + i * timedelta(minutes=1), scope="orion"))
    ids["other"] = [remember(rt, "postgres for orion, said the other team", T0, scope="other")]
    return ids


def test_episodes_are_ranked_with_their_best_turns_and_results_hold_those_turns(rt, chats):
    r = grouped(rt, "postgres orion", scope="orion", turns=2)
    scores = [e.score for e in r.episodes]
    assert scores == sorted(scores, reverse=True) and len(r.episodes) == 3
    by_id = {h.note.id: h for h in r.results}
    assert [t.id for e in r.episodes for t in e.turns] == [h.note.id for h in r.results]
    for e in r.episodes:
        assert 1 <= len(e.turns) <= 2
        assert [t.score for t in e.turns] == sorted((t.score for t in e.turns), reverse=True)
        assert e.score == e.turns[0].score  # the shipped rule: the best turn's score
        assert all(by_id[t.id].score == t.score for t in e.turns)
    first = r.episodes[0]
    assert first.thread == "db" and not first.inferred and {t.id for t in first.turns} <= set(chats["db"])


def test_the_best_turns_are_the_episodes_best_notes_in_the_flat_ranking(rt, chats):
    flat = rt.call("memory.recall", {"query": "postgres orion", "scope": "orion", "limit": 50}).results
    r = grouped(rt, "postgres orion", scope="orion", turns=2)
    for e in r.episodes:
        members = set(range(e.span.first_id, e.span.last_id + 1)) & {h.note.id for h in flat}
        mine = [h.note.id for h in flat if h.note.id in members and
                (h.note.thread == e.thread if e.thread else h.note.thread is None)]
        assert [t.id for t in e.turns] == mine[:2]


def test_spans_cover_the_whole_episode_not_only_its_hits(rt, chats):
    r = grouped(rt, "postgres", scope="orion", turns=1, limit=10)
    spans = {(e.thread, e.inferred, e.span.first_id): e.span for e in r.episodes}
    db = spans[("db", False, chats["db"][0])]
    assert (db.notes, db.last_id, db.first_at, db.last_at) == (3, chats["db"][-1], T0, T0 + timedelta(minutes=2))
    later = spans[(None, True, chats["later"][0])]
    assert (later.notes, later.last_id, later.first_at) == (2, chats["later"][-1], T0 + 48 * HOUR)


def test_a_thread_wins_over_inference(rt, chats):
    """Notes at the same minutes, one set with a thread: two episodes, never one."""
    r = grouped(rt, "postgres cat pizza weather orion", scope="orion", limit=10, turns=5)
    of = {t.id: (e.thread, e.inferred) for e in r.episodes for t in e.turns}
    assert {of[i] for i in chats["db"] if i in of} == {("db", False)}
    assert {of[i] for i in chats["bare"] if i in of} == {(None, True)}
    bare = next(e for e in r.episodes if e.span.first_id == chats["bare"][0])
    assert bare.span.notes == 3  # the thread's notes neither join nor break the inferred episode


def test_scope_and_namespace_are_honoured(rt, chats):
    r = grouped(rt, "postgres orion", scope="other")
    assert [t.id for e in r.episodes for t in e.turns] == chats["other"]
    assert not grouped(rt, "postgres orion", namespace="elsewhere").episodes
    remember(rt, "postgres orion elsewhere", T0, scope="orion", thread="db", namespace="elsewhere")
    there = grouped(rt, "postgres orion", namespace="elsewhere")
    assert len(there.episodes) == 1 and there.episodes[0].span.notes == 1  # same thread name, its own namespace


def test_as_of_shows_the_span_as_it_was(make_pal_runtime, clock):
    """as_of is about when notes were saved: the clock moves between the two."""
    rt = make_pal_runtime(config=HASHING, clock=clock)
    a = remember(rt, "postgres chosen", T0, scope="s", thread="t")
    clock.now = T0 + 5 * HOUR
    remember(rt, "postgres tuned", T0 + 5 * HOUR, scope="s", thread="t")
    now = grouped(rt, "postgres").episodes[0].span
    then = grouped(rt, "postgres", as_of=(T0 + HOUR).isoformat()).episodes[0].span
    assert (now.notes, then.notes, then.last_id) == (2, 1, a)


def test_limit_counts_episodes_and_the_budget_cuts_whole_turns(make_pal_runtime, clock):
    rt = make_pal_runtime(config={**HASHING, "packs": {"memory": {"embedder": "hashing",
                                                                  "response_char_budget": 120}}}, clock=clock)
    for k in range(4):
        for j in range(3):
            remember(rt, f"postgres note {k}.{j} " + "x" * 30, T0 + j * timedelta(minutes=1), thread=f"t{k}")
    fits = grouped(rt, "postgres", limit=2, turns=1)  # 2 notes of 47 characters: within the budget
    assert [len(e.turns) for e in fits.episodes] == [1, 1] and not fits.truncated
    cut = grouped(rt, "postgres", limit=2, turns=3)  # 6 notes would be 282 characters
    assert cut.truncated and sum(len(h.note.content) for h in cut.results) <= 120
    assert [t.id for e in cut.episodes for t in e.turns] == [h.note.id for h in cut.results]


def test_min_score_drops_turns_before_grouping(rt, chats):
    every = grouped(rt, "postgres orion", scope="orion", limit=10, turns=20)
    cut = sorted(t.score for e in every.episodes for t in e.turns)[len(every.results) // 2]
    r = grouped(rt, "postgres orion", scope="orion", limit=10, turns=20, min_score=cut)
    kept = [t.id for e in every.episodes for t in e.turns if t.score >= cut]
    assert [t.id for e in r.episodes for t in e.turns] == kept and all(e.turns for e in r.episodes)


@pytest.mark.parametrize("params", [{"group": "session"}, {"group": "episode", "turns": 0},
                                    {"group": "episode", "turns": 21}, {"turns": 2}, {"group": "note", "turns": 2},
                                    {"group": "episode", "limit": 0}])
def test_bad_params_are_typed_errors(rt, params):
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.recall", {"query": "postgres", **params})


def test_a_flat_recall_is_unchanged(rt, chats):
    r = rt.call("memory.recall", {"query": "postgres orion"})
    assert r.episodes is None and r.results


def test_grouping_never_loses_the_top_note(rt):
    """Property over random stores: the ungrouped recall's top note is the first turn of the first episode."""
    rng = random.Random(44)
    words = "postgres orion invoices backup pizza cat weather migrate strict nightly".split()
    for n in range(40):
        thread = rng.choice([None, None, "a", "b", "c"])
        at = T0 + timedelta(minutes=rng.choice([0, 1, 2, 90, 3000]) + n)
        remember(rt, " ".join(rng.sample(words, 3)) + f" #{n}", at, scope=rng.choice(["s", "t"]), thread=thread)
    for _ in range(25):
        q = " ".join(rng.sample(words, rng.choice([1, 2])))
        scope = rng.choice([None, "s"])
        flat = rt.call("memory.recall", {"query": q, "scope": scope}).results
        g = grouped(rt, q, scope=scope, turns=rng.choice([1, 3]))
        assert flat and g.episodes[0].turns[0].id == flat[0].note.id, q


# -- the pure rule -------------------------------------------------------------------------------------------------
def test_each_rule_computes_its_formula():
    s = np.array([0.9, 0.8, 0.6, 0.5, 0.4])
    codes = np.array([7, 0, 7, 7, 7])  # a thread of 4 pooled notes and one note alone
    want = {"max": 0.9, "softor": 1 - 0.1 * 0.4 * 0.5, "sum": 0.9 + 0.6 + 0.5, "mean": (0.9 + 0.6 + 0.5) / 3,
            "rrf": sum(1 / (60 + r) for r in (1, 3, 4, 5)),
            "lse": 0.1 * np.log(np.exp(9) + np.exp(6) + np.exp(5))}
    for rule, value in want.items():
        g = grouping.group(s, codes, rule)
        j = list(g.code).index(7)
        assert g.score[j] == pytest.approx(value), rule
        assert g.members[j].tolist() == [0, 2, 3, 4] and g.members[1 - j].tolist() == [1]
    with pytest.raises(ValueError):
        grouping.group(s, codes, "median")


def test_max_orders_episodes_as_their_best_turns_and_notes_without_thread_stand_alone():
    s = np.array([0.9, 0.9, 0.7, 0.7, 0.2])
    g = grouping.group(s, np.array([0, 3, 0, 3, 5]))
    assert [m.tolist() for m in g.members] == [[0], [1, 3], [2], [4]] and g.code.tolist() == [0, 3, 0, 5]
    assert grouping.group(np.zeros(0), np.zeros(0)).members == []

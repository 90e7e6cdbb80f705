"""memory.recall publishes recall_served for every call, with the typed score components of each served note
(ADR 0008): the numbers the breakdown shows, whether or not the caller asked for the breakdown."""
from datetime import datetime, timedelta

import pytest

from palimpsest_memory.runtime import Pack
from palimpsest_memory.runtime.events import RecallServed, ScoreComponents

NOW = datetime(2026, 3, 2, 12, 0, 0)
CONFIG = {"packs": {"memory": {"embedder": "hashing"}}}


def listener(seen: list) -> Pack:
    p = Pack("listener", version="0.0.1", requires=["memory"])

    @p.subscribe("memory.recall_served")
    def on_served(event: RecallServed, ctx) -> None:  # type: ignore[no-untyped-def]
        seen.append((event, ctx.namespace, ctx.actor))

    return p


def seed(rt) -> None:
    for days, text in [(1, "Orion Postgres migration plan"), (30, "Postgres tuning for Orion"),
                       (200, "Orion kickoff notes"), (3, "lunch menu")]:
        rt.call("memory.remember", {"content": text, "occurred_at": (NOW - timedelta(days=days)).isoformat()})


@pytest.mark.parametrize("breakdown", [False, True])
def test_every_recall_publishes_what_it_served_with_its_components(make_pal_runtime, breakdown):
    seen: list = []
    rt = make_pal_runtime(listener(seen), discover=True, config=CONFIG, clock=lambda: NOW)
    seed(rt)
    params = {"query": "Orion Postgres", "now": NOW.isoformat(), "limit": 2}
    res = rt.call("memory.recall", {**params, "include_breakdown": breakdown}, actor="alice")
    full = rt.call("memory.recall", {**params, "include_breakdown": True})
    assert all((h.breakdown is not None) == breakdown for h in res.results)  # the caller gets what it asked
    assert len(seen) == 2
    event, ns, actor = seen[0]
    assert (ns, actor) == ("default", "alice")
    assert event.recall_id == res.recall_id and event.query == "Orion Postgres"
    assert [n.note_id for n in event.notes] == [h.note.id for h in res.results]
    assert [n.score for n in event.notes] == [h.score for h in res.results]
    for n, h in zip(event.notes, full.results):
        b = h.breakdown
        assert n.components == ScoreComponents(b.relevance, b.effective_salience, b.recency)
    w = full.results[0].breakdown.weights
    assert (event.weights.relevance, event.weights.salience, event.weights.temporal) == (
        w["relevance"], w["salience"], w["temporal"])


def test_a_failed_recall_publishes_nothing(make_pal_runtime):
    seen: list = []
    rt = make_pal_runtime(listener(seen), discover=True, config=CONFIG, clock=lambda: NOW)
    seed(rt)
    with pytest.raises(Exception):
        rt.call("memory.recall", {"query": "??"})  # empty: nothing to search with
    assert seen == []


def test_the_subhandlers_give_what_recall_ranks_with(make_pal_runtime):
    """recall calls the stages as plain functions; each sub-handler verb wraps the same function."""
    rt = make_pal_runtime(config=CONFIG, clock=lambda: NOW)
    seed(rt)
    q = "Orion Postgres"
    emb = rt.call("memory.recall_embed", {"query": q}, internal=True)
    legs = rt.call("memory.recall_candidates", {"query": q, "vector": emb.vector, "model": emb.model, "k": 40},
                   internal=True)
    fused = rt.call("memory.recall_fuse", {"query": q, "text": legs.text.model_dump(),
                                           "vector": legs.vector.model_dump(), "fusion": "weighted"}, internal=True)
    expanded = rt.call("memory.recall_expand", {"candidates": fused.candidates.model_dump(), "vector": emb.vector,
                                                "model": emb.model}, internal=True)
    assert expanded.added == [] and expanded.candidates.ids == fused.candidates.ids  # no edges: nothing added
    scored = rt.call("memory.recall_score", {"candidates": fused.candidates.model_dump(), "now": NOW.isoformat()},
                     internal=True).results
    unranked = rt.call("memory.recall_score", {"candidates": fused.candidates.model_dump(), "now": NOW.isoformat(),
                                               "rerank": False}, internal=True).results
    assert unranked == scored  # the rerank stage is off by default
    reranked = rt.call("memory.recall_rerank", {"results": scored.model_dump()}, internal=True).results
    assert reranked == scored
    got = rt.call("memory.recall", {"query": q, "now": NOW.isoformat(), "include_breakdown": True,
                                    "limit": 50}).results
    assert [(h.note.id, h.score) for h in got] == list(zip(scored.ids, scored.score))


def test_a_recall_by_episode_publishes_the_turns_it_served(make_pal_runtime):
    """ADR 0036: the brain learns from what was shown, the episodes' turns, with their own components."""
    seen: list = []
    rt = make_pal_runtime(listener(seen), discover=True, config=CONFIG, clock=lambda: NOW)
    seed(rt)
    res = rt.call("memory.recall", {"query": "Orion Postgres", "now": NOW.isoformat(), "group": "episode",
                                    "turns": 2, "include_breakdown": True})
    event = seen[0][0]
    assert [n.note_id for n in event.notes] == [t.id for e in res.episodes for t in e.turns] == [
        h.note.id for h in res.results]
    for n, h in zip(event.notes, res.results):
        b = h.breakdown
        assert n.score == h.score and n.components == ScoreComponents(b.relevance, b.effective_salience, b.recency)

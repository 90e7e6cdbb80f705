"""What recall keeps between recalls (recall_cache.py, issue 18): the filter masks and each note's own information
are derived from the index and must never outlive the state they came from. Every test recalls once (filling the
caches), changes the store through a verb, and checks the next recall sees the change exactly as a fresh
computation would; and the array paths recall now ranks with equal the dict formulas they replaced."""
from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_support import T0

from palimpsest_memory.packs.memory.ranking import fusion, adjusters, recall_cache
from palimpsest_memory.packs.memory.ranking.context_scores import unique, unique_first
from palimpsest_memory.packs.memory.models.notes import RecallFilters

WORDS = ["kayak", "harbour", "pier", "lantern", "orchard", "glacier", "violin", "compass", "meadow", "quarry"]


def _remember(rt, texts, thread="t1", start=0):  # type: ignore[no-untyped-def]
    return [rt.call("memory.remember", {"content": t, "thread": thread,
                                        "occurred_at": (T0 + timedelta(minutes=start + j)).isoformat()}).note.id
            for j, t in enumerate(texts)]


def _index(rt):  # type: ignore[no-untyped-def]
    return rt.pack_state("memory").index.of("default")


def _information(rt, query):  # type: ignore[no-untyped-def]
    """{note: the information factor recall ranked it by} for the notes a leg matched, and the same factor
    computed now from the index's BM25 (no cache)."""
    res = rt.call("memory.recall", {"query": query, "include_breakdown": True, "limit": 50})
    got = {h.note.id: h.breakdown.context["information"] for h in res.results
           if h.breakdown.text_match > 0 or h.breakdown.vector_match > 0}
    ids = np.array(sorted(got), dtype=np.int64)
    fresh = _index(rt).bm25.own_information(ids)
    return got, {int(i): math.log(math.e + max(float(v), 0.0)) for i, v in zip(ids, fresh)}


def test_information_is_recomputed_after_every_write(rt):
    _remember(rt, [f"the {a} by the {b} near the {c}" for a, b, c in zip(WORDS, WORDS[3:], WORDS[6:])])
    got, fresh = _information(rt, "kayak harbour lantern")
    assert got and got == fresh
    before = dict(got)
    # more notes saying these words: every idf (N and df) moves, so every cached I is stale
    _remember(rt, ["kayak kayak harbour", "lantern and kayak", "harbour lantern kayak"], thread="t2", start=100)
    got, fresh = _information(rt, "kayak harbour lantern")
    assert got == fresh
    assert any(got[i] != before[i] for i in before if i in got)  # the change is visible, not the old values
    # a forget moves them again
    rt.call("memory.forget", {"ids": [max(got)], "reason": "test"})
    got, fresh = _information(rt, "kayak harbour lantern")
    assert got == fresh


def test_the_filter_mask_follows_archive_supersede_and_metadata_edits(rt):
    ids = _remember(rt, ["glacier walk on Monday", "glacier photos from the trip", "quarry swim"])
    seen = lambda **f: [h.note.id for h in rt.call("memory.recall", {"query": "glacier", **f}).results]  # noqa: E731
    assert set(ids[:2]) <= set(seen())
    assert set(seen(min_salience=0.99)) == set()
    rt.call("memory.update", {"id": ids[0], "salience": 1.0})  # the salience column changed: so must the mask
    assert seen(min_salience=0.99) == [ids[0]]
    rt.call("memory.archive", {"ids": [ids[1]]})
    assert ids[1] not in seen()
    new = rt.call("memory.update", {"id": ids[0], "content": "glacier walk moved to Tuesday"}).note.id
    after = seen()
    assert ids[0] not in after and new in after


def test_recall_cache_values_equal_a_fresh_computation(rt):
    _remember(rt, [" ".join(WORDS[j:j + 4]) for j in range(7)])
    index = _index(rt)
    ids = np.array(sorted(index.rows), dtype=np.int64)
    rng = np.random.default_rng(7)
    for _ in range(5):  # subsets in any order, some ids repeated, one unknown: each value as a whole-set call
        ask = np.concatenate([rng.permutation(ids)[: rng.integers(1, ids.size + 1)], [ids[0], 10**9]])
        assert np.array_equal(recall_cache.information(index, ask), index.bm25.own_information(ask))
    f = RecallFilters()
    a = recall_cache.allowed(index, "default", f)
    assert recall_cache.allowed(index, "default", f) is a  # kept while the index holds
    assert np.array_equal(a.mask, index.mask("default", f)) and not a.mask.flags.writeable
    assert recall_cache.allowed(index, "other", f) is not a  # one per namespace and filter set
    _remember(rt, ["violin lesson"], start=50)
    assert recall_cache.allowed(index, "default", f) is not a  # a write: derived again
    assert np.array_equal(recall_cache.allowed(index, "default", f).mask, index.mask("default", f))


def test_allowed_rows_of_a_leg_follow_its_growth(rt):
    _remember(rt, [f"note {j} about the {WORDS[j % 10]}" for j in range(30)])
    index = _index(rt)
    a = recall_cache.allowed(index, "default", RecallFilters())
    rows = np.zeros(5000, dtype=np.int64)  # a leg's row-id array (a view of a larger buffer), as BM25 keeps one
    rows[:40] = np.arange(1, 41)
    view = rows[:4096]
    first = a.allows(view)
    assert np.array_equal(first, index.allowed(a.mask).allows(view))
    assert a.allows(view) is first  # the same array: answered from the cache
    longer = rows[:4500]
    assert np.array_equal(a.allows(longer), index.allowed(a.mask).allows(longer))  # another length: not mixed up
    assert np.array_equal(a.allows(view, np.array([0, 3, 39])), first[[0, 3, 39]])


def _pairs(draw_ids, scores):  # type: ignore[no-untyped-def]
    order = sorted(range(len(draw_ids)), key=lambda j: -scores[j])
    return [(draw_ids[j], scores[j]) for j in order]


legs = st.lists(st.tuples(st.integers(1, 60), st.floats(0.0, 30.0, allow_nan=False)), max_size=25,
                unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None)
@given(text=legs, vector=legs, how=st.sampled_from(["rrf", "weighted", "union", "vector_only", "keyword_only"]))
def test_fuse_legs_equals_the_dict_fusions(text, vector, how):
    text = sorted(text, key=lambda t: -t[1])
    vector = sorted(vector, key=lambda t: -t[1])
    w = {"text": 0.4, "vector": 0.6}
    got = adjusters.fuse_legs(([i for i, _ in text], [s for _, s in text]),
                            ([i for i, _ in vector], [s for _, s in vector]), how, rrf_k=60.0, weights=w)
    named = {"text": text, "vector": vector}
    if how == "rrf":
        want = fusion.rrf(named, k=60.0)
    elif how == "weighted":
        want = fusion.weighted(named, w)
    elif how == "union":
        want = fusion.union(named)
    else:
        only = "vector" if how == "vector_only" else "text"
        want = fusion.weighted({only: named[only]}, {only: 1.0})
    assert dict(zip(got.ids[got.fused].tolist(), got.scores[got.fused].tolist())) == want.scores  # bit-equal
    for name in named:  # text_match / vector_match: each leg's min-max, 0 where it missed
        m = fusion.minmax(named[name])
        assert got.match[name].tolist() == [m.get(i, 0.0) for i in got.ids.tolist()]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 40), max_size=60))
def test_unique_helpers_equal_numpy(xs):
    x = np.array(xs, dtype=np.int64)
    assert np.array_equal(unique(x), np.unique(x))
    values, first, inverse = unique_first(x)
    v, f, inv = np.unique(x, return_index=True, return_inverse=True)
    assert np.array_equal(values, v) and np.array_equal(first, f) and np.array_equal(inverse, inv.ravel())


def test_sub_handler_verbs_hand_out_lists(rt):
    _remember(rt, ["orchard apples in October", "orchard pears", "the meadow"])
    emb = rt.call("memory.recall_embed", {"query": "orchard"}, internal=True)
    assert isinstance(emb.vector, list)
    legs_ = rt.call("memory.recall_candidates", {"query": "orchard", "vector": emb.vector, "model": emb.model,
                                                 "k": 10}, internal=True)
    fused = rt.call("memory.recall_fuse", {"query": "orchard", "text": legs_.text.model_dump(),
                                           "vector": legs_.vector.model_dump(), "fusion": "weighted"},
                    internal=True).candidates
    assert all(isinstance(getattr(fused, c), list) for c in ("ids", "relevance", "text_match", "vector_match"))
    assert all(isinstance(v, list) for v in fused.context.values())
    scored = rt.call("memory.recall_score", {"candidates": fused.model_dump(), "now": T0.isoformat()},
                     internal=True).results
    assert isinstance(scored.ids, list) and all(isinstance(i, int) for i in scored.ids)
    assert all(isinstance(v, list) for v in scored.context.values())
    assert scored.model_dump_json()  # serialisable as the adapters send it


@pytest.mark.parametrize("fusion_name", ["rrf", "weighted", "union", "vector_only", "keyword_only"])
def test_recall_answers_equal_the_stage_verbs_for_every_fusion(rt, fusion_name):
    _remember(rt, [f"the {a} and the {b}" for a, b in zip(WORDS, WORDS[1:] + WORDS[:1])])
    q = "kayak harbour orchard"
    res = rt.call("memory.recall", {"query": q, "fusion": fusion_name, "now": T0.isoformat(), "limit": 20,
                                    "include_breakdown": True})
    emb = rt.call("memory.recall_embed", {"query": q}, internal=True)
    legs_ = rt.call("memory.recall_candidates", {"query": q, "vector": [] if fusion_name == "keyword_only" else
                                                 emb.vector, "model": emb.model, "k": 200}, internal=True)
    fused = rt.call("memory.recall_fuse", {"query": q, "text": legs_.text.model_dump(),
                                           "vector": legs_.vector.model_dump(), "fusion": fusion_name},
                    internal=True).candidates
    scored = rt.call("memory.recall_score", {"candidates": fused.model_dump(), "now": T0.isoformat()},
                     internal=True).results
    assert [h.note.id for h in res.results] == scored.ids[:20]
    assert [h.score for h in res.results] == scored.score[:20]
    assert [h.breakdown.relevance for h in res.results] == scored.relevance[:20]

"""Inferred episodes: notes remembered without a thread, one after another in a scope within the gap, are thread
neighbours (issue 19, ADR 0008)."""
from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_support import HASHING, T0, Clock

from palimpsest_memory.packs.memory.engine.threads import Episodes
from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime
from index_support import held_index

GAP = 30 * 60.0


def test_episode_keys_follow_scope_and_gap():
    ep = Episodes(GAP)
    a = ep.key(1, "ns", "s", 0.0)
    assert ep.key(2, "ns", "s", 60.0) == a  # a minute later, same scope: same episode
    other_scope = ep.key(3, "ns", "t", 90.0)
    assert other_scope != a  # another scope has its own episodes
    assert ep.key(4, "ns", "s", 120.0 + GAP) != a  # a pause longer than the gap starts a new one
    assert ep.key(5, "other", "s", 120.0 + GAP) not in (a, other_scope)  # namespaces never share one
    assert ep.key(6, "ns", "t", 100.0) == other_scope  # notes of scope s in between do not break scope t's


WHERE = [("ns", "s"), ("ns", "t"), ("ns", None), ("other", "s")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from(range(len(WHERE))),
                          st.integers(-60, 60).map(lambda m: 60.0 * m)), max_size=60),  # exactly the gap too
       st.lists(st.integers(1, 20), max_size=6), st.integers(0, 12))
def test_a_batch_of_notes_gets_the_episodes_one_at_a_time_would(notes, cuts, late):
    """``Episodes.batch`` (a load or an ingest batch) infers what ``key`` infers note by note, in any split into
    batches: pauses longer than the gap either way, scopes interleaved, notes older than their scope's last one."""
    ids, occurred, where, i, t = [], [], [], 100, 0.0
    for step, w, dt in notes:
        i += step
        t += dt
        ids.append(i)
        occurred.append(t)
        where.append(w)
    one, many = Episodes(GAP), Episodes(GAP)
    prior = [(30 + 7 * k, k % len(WHERE), 60.0 * k) for k in range(late)]  # earlier writes, some with ids above
    for nid, w, occ in prior:
        one.key(nid, *WHERE[w], occ)
        many.key(nid, *WHERE[w], occ)
    expected = [one.key(nid, *WHERE[w], occ) for nid, w, occ in zip(ids, where, occurred)]
    got: list = []
    bounds = sorted({0, len(ids), *(c for c in np.cumsum(cuts).tolist() if c < len(ids))})
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        at, keys, firsts = many.batch(np.array(ids[lo:hi], dtype=np.int64), np.array(where[lo:hi], dtype=np.int64),
                                      lambda g: WHERE[g], np.array(occurred[lo:hi]))
        got += [keys[k] for k in at.tolist()]
        assert [at[j] for j in firsts.tolist()] == list(range(len(keys)))  # each episode's first note is its own
        assert all(at[:j].tolist().count(at[j]) == 0 for j in firsts.tolist())
    assert got == expected
    assert many._last == one._last


def test_episodes_off_give_no_batch_episodes():
    at, keys, firsts = Episodes(0.0).batch(np.array([1, 2]), np.array([0, 0]), lambda g: WHERE[g],
                                           np.array([0.0, 1.0]))
    assert at.tolist() == [-1, -1] and keys == [] and firsts.size == 0


def test_episode_gap_is_measured_between_consecutive_notes_both_ways():
    ep = Episodes(GAP)
    a = ep.key(1, "ns", None, 10_000.0)
    assert ep.key(2, "ns", None, 10_000.0 - GAP) == a  # back in time within the gap (same chat, clock skew)
    assert ep.key(3, "ns", None, 10_000.0 - 2 * GAP - 1) != a


def test_episodes_off_and_out_of_order_ids():
    assert Episodes(0).key(1, "ns", "s", 0.0) is None
    ep = Episodes(GAP)
    a = ep.key(10, "ns", "s", 0.0)
    late = ep.key(5, "ns", "s", 0.0)  # an older id seen after a newer one: its own episode, the run goes on
    assert late != a and ep.key(11, "ns", "s", 1.0) == a


def _runtime(clock, gap=None, path=":memory:"):
    memory = dict(HASHING["packs"]["memory"])
    if gap is not None:
        memory["context"] = {"episode_gap_minutes": gap}
    return open_test_runtime(config={"packs": {"memory": memory}}, clock=clock, path=path)


def _remember(rt, content, **kw):
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def _links(rt):
    index = held_index(rt)
    ids = range(max(index.rows) + 1)  # by note id, as the columns were before they were kept by slot
    return (index.column("prev")[ids].tolist(), index.column("next")[ids].tolist(),
            index.column("thread")[ids].tolist())


def test_notes_remembered_in_a_row_are_neighbours_in_recall():
    clock = Clock(T0)
    rt = _runtime(clock)
    try:
        a = _remember(rt, "Did you ever find the blue kayak?", scope="chat")
        clock.now = T0 + timedelta(minutes=1)
        b = _remember(rt, "Yes, last Tuesday, under the pier", scope="chat")
        clock.now = T0 + timedelta(hours=3)  # after a pause: a new episode
        c = _remember(rt, "Groceries: milk and eggs", scope="chat")
        prev, nxt, thread = _links(rt)
        assert (prev[b], nxt[a], nxt[b], prev[c]) == (a, b, -1, -1)
        assert thread[a] == thread[b] != thread[c]
        # the answer shares no word with the question, but it is the question's neighbour
        res = rt.call("memory.recall", {"query": "blue kayak", "include_breakdown": True, "fusion": "keyword_only"})
        got = [h.note.id for h in res.results]
        assert got[:2] == [a, b] and c not in got
        assert res.results[1].breakdown.context["neighbour"] > 0
        # the note's own thread field is untouched: the episode is the index's inference, not stored data
        assert rt.call("memory.get", {"ids": [b]}).notes[0].thread is None
    finally:
        rt.close()


def test_an_explicit_thread_wins_and_does_not_break_the_episode():
    clock = Clock(T0)
    rt = _runtime(clock)
    try:
        a = _remember(rt, "first plain note", scope="s")
        t = _remember(rt, "a note of a named thread", scope="s", thread="standup")
        b = _remember(rt, "second plain note", scope="s")
        prev, nxt, thread = _links(rt)
        assert (nxt[a], prev[b]) == (b, a)  # the threaded note sits outside the episode
        assert prev[t] == -1 and nxt[t] == -1 and thread[t] not in (0, thread[a])
    finally:
        rt.close()


def test_gap_zero_turns_inference_off():
    rt = _runtime(Clock(T0), gap=0.0)
    try:
        a, b = _remember(rt, "one note"), _remember(rt, "another note")
        prev, nxt, thread = _links(rt)
        assert (nxt[a], prev[b], thread[a], thread[b]) == (-1, -1, 0, 0)
    finally:
        rt.close()


def test_a_negative_gap_is_a_config_error():
    with pytest.raises(errors.ConfigError):
        _runtime(Clock(T0), gap=-1.0)


@pytest.mark.parametrize("key", ["speaker_gamma", "date_gamma"])
def test_a_context_key_recall_never_read_is_refused_by_name(key):
    """The date and speaker boosts were measured by the bench only (ADR 0008); their keys were config that did
    nothing, so a config that still sets one is refused and told which key."""
    memory = {**HASHING["packs"]["memory"], "context": {key: 0.1}}
    with pytest.raises(errors.ConfigError, match=rf"packs\.memory\.context\.{key}"):
        open_test_runtime(config={"packs": {"memory": memory}})


@pytest.mark.parametrize("snapshot_min", [0, 1_000_000], ids=["snapshot", "rebuild"])
def test_reopening_infers_the_same_episodes(tmp_path, snapshot_min):
    """A fresh load (from the BM25 snapshot or by re-tokenising) links the same notes as the live index did."""
    path = str(tmp_path / "store.duckdb")
    clock = Clock(T0)
    config = {"packs": {"memory": {**HASHING["packs"]["memory"], "index_snapshot_min_notes": snapshot_min}}}
    rt = open_test_runtime(config=config, clock=clock, path=path)
    for i in range(12):
        clock.now = T0 + timedelta(minutes=20 * i * (1 + i % 3))
        _remember(rt, f"note {i} about harbour {i % 4}", scope=f"s{i % 2}", **({"thread": "x"} if i == 7 else {}))
    live = _links(rt)
    query = {"query": "harbour note", "limit": 12, "include_breakdown": True}
    before = [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results]
    rt.close()
    rt = open_test_runtime(config=config, clock=clock, path=path)
    try:
        prev, nxt, thread = _links(rt)
        assert (prev, nxt) == live[:2]
        assert np.array_equal(np.unique(thread, return_inverse=True)[1], np.unique(live[2], return_inverse=True)[1])
        assert [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results] == before
    finally:
        rt.close()


def test_moving_a_note_to_another_scope_relinks_as_a_rebuild_would(tmp_path):
    path = str(tmp_path / "store.duckdb")
    clock = Clock(T0)
    rt = open_test_runtime(config=HASHING, clock=clock, path=path)
    a, b, c = (_remember(rt, f"harbour note {x}", scope="s") for x in "abc")
    d = _remember(rt, "harbour note d", scope="t")
    prev, nxt, _ = _links(rt)
    assert (nxt[a], nxt[b], prev[c]) == (b, c, b)
    rt.call("memory.update", {"id": b, "scope": "t"})
    live = _links(rt)
    prev, nxt, thread = live
    assert (nxt[a], prev[c]) == (c, a)  # b left scope s's episode…
    assert (nxt[b], prev[d]) == (d, b) and thread[b] == thread[d]  # …and joined scope t's, in id order
    query = {"query": "harbour note", "limit": 10}
    before = [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results]
    rt.close()
    rt = open_test_runtime(config=HASHING, clock=clock, path=path)
    try:
        assert _links(rt)[:2] == live[:2]
        assert [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results] == before
    finally:
        rt.close()


@pytest.mark.parametrize("snapshot_min", [0, 1_000_000], ids=["snapshot", "rebuild"])
def test_a_thread_name_is_its_scopes_own(tmp_path, snapshot_min):
    """``session_1`` in two scopes is two threads: a conversation's notes never take another scope's as neighbours
    (the LoCoMo importer names every conversation's sessions alike). Moving a threaded note to another scope moves
    it to that scope's thread of the same name, in id order, as a rebuild would link it."""
    path = str(tmp_path / "store.duckdb")
    clock = Clock(T0)
    config = {"packs": {"memory": {**HASHING["packs"]["memory"], "index_snapshot_min_notes": snapshot_min}}}
    rt = open_test_runtime(config=config, clock=clock, path=path)
    a1 = _remember(rt, "kayak under the pier", scope="s", thread="session_1")
    b1 = _remember(rt, "harbour fees went up", scope="t", thread="session_1")
    a2 = _remember(rt, "found it last tuesday", scope="s", thread="session_1")
    b2 = _remember(rt, "pay them by friday", scope="t", thread="session_1")
    prev, nxt, thread = _links(rt)
    assert (nxt[a1], prev[a2], nxt[b1], prev[b2]) == (a2, a1, b2, b1)
    assert thread[a1] == thread[a2] != thread[b1] == thread[b2]
    # a scope's words stay out of another scope's notes: "harbour" is in no bag of scope s
    got = rt.call("memory.recall", {"query": "harbour", "scope": "s", "fusion": "keyword_only"}).results
    assert got == []
    rt.call("memory.update", {"id": b1, "scope": "s"})
    live = _links(rt)
    prev, nxt, thread = live
    assert (nxt[a1], prev[b1], nxt[b1], prev[a2]) == (b1, a1, a2, b1)  # between a1 and a2, by id
    assert prev[b2] == -1 and thread[b1] == thread[a1] != thread[b2]
    query = {"query": "harbour kayak friday", "limit": 10, "include_breakdown": True}
    before = [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results]
    assert {i for i, _ in before} == {a1, b1, a2, b2}
    rt.close()
    rt = open_test_runtime(config=config, clock=clock, path=path)
    try:
        assert _links(rt)[:2] == live[:2]
        assert [(h.note.id, round(h.score, 12)) for h in rt.call("memory.recall", query).results] == before
    finally:
        rt.close()

"""Lifecycle: memory.consolidate, memory.consolidation_candidates, memory.archive, memory.prune (issue 5)."""
from datetime import timedelta

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime
from store_support import HASHING, T0, snapshot


def remember(rt, content: str, **kw) -> int:
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def recall_ids(rt, query: str, **kw) -> list[int]:
    return [h.note.id for h in rt.call("memory.recall", {"query": query, "limit": 50, **kw}).results]


DUPES = ["Standup: the Orion deploy failed again because the database migration timed out",
         "Standup today: the Orion deploy failed again because the database migration timed out",
         "Standup notes: the Orion deploy failed again because the database migration timed out twice"]


# -- consolidate ------------------------------------------------------------------------------------------------
def test_consolidate_writes_a_semantic_note_triggered_by_each_source(rt):
    src = [remember(rt, t, scope="orion") for t in DUPES]
    res = rt.call("memory.consolidate", {"source_ids": src, "content": "Orion deploys fail on slow migrations"})
    note = res.note
    assert note.memory_type == "semantic" and note.scope == "orion" and res.archived == []
    edges = rt.call("memory.edges", {"memory_id": note.id, "direction": "out"}).edges
    assert sorted((e.target_id, e.relation) for e in edges) == [(s, "triggered_by") for s in src]
    assert sorted(e.id for e in edges) == sorted(res.edge_ids)
    assert set(src) <= set(recall_ids(rt, "Orion deploy migration"))  # sources stay unless archived


def test_consolidate_can_archive_its_sources(rt):
    src = [remember(rt, t) for t in DUPES]
    res = rt.call("memory.consolidate", {"source_ids": src, "content": "Orion deploys fail on slow migrations",
                                         "archive_sources": True})
    assert res.archived == sorted(src)
    hits = recall_ids(rt, "Orion deploy migration")
    assert res.note.id in hits and not set(src) & set(hits)
    assert [n.archived_at is not None for n in rt.call("memory.get", {"ids": src}).notes] == [True] * 3


@pytest.mark.parametrize("params,error", [
    ({"source_ids": [], "content": "summary"}, errors.InvalidParams),
    ({"source_ids": [999], "content": "summary"}, errors.NotFound),
    ({"source_ids": "SRC+missing", "content": "summary"}, errors.NotFound),
    ({"source_ids": "SRC", "content": " "}, errors.InvalidParams),
    ({"source_ids": "SRC", "content": "summary", "salience": 3}, errors.InvalidParams),
    ({"source_ids": "SRC", "content": "summary", "llm": True}, errors.InvalidParams),
])
def test_bad_consolidations_are_typed_errors_that_write_nothing(rt, params, error):
    src = [remember(rt, t) for t in DUPES]
    params = dict(params)
    if params["source_ids"] == "SRC":
        params["source_ids"] = src
    elif params["source_ids"] == "SRC+missing":
        params["source_ids"] = src + [12345]
    before = snapshot(rt)
    with pytest.raises(error):
        rt.call("memory.consolidate", params)
    assert snapshot(rt) == before


def test_consolidate_refuses_notes_of_another_namespace(rt):
    mine = remember(rt, DUPES[0], namespace="mine")
    theirs = remember(rt, DUPES[1], namespace="theirs")
    before = snapshot(rt)
    with pytest.raises(errors.NotFound):
        rt.call("memory.consolidate", {"source_ids": [mine, theirs], "content": "x summary"}, namespace="mine")
    assert snapshot(rt) == before


# -- candidates -------------------------------------------------------------------------------------------------
def test_candidates_group_near_duplicates_and_skip_consolidated_ones(rt):
    dupes = [remember(rt, t) for t in DUPES]
    remember(rt, "Lunch was a sandwich with pickles")
    remember(rt, "The Orion roadmap is due in May", memory_type="semantic")
    other = remember(rt, "Standup: the Orion deploy failed again because the database migration timed out",
                     namespace="elsewhere")
    res = rt.call("memory.consolidation_candidates", {"min_similarity": 0.6})
    assert [g.note_ids for g in res.groups] == [sorted(dupes)]
    assert 0.6 <= res.groups[0].mean_similarity <= 1.0
    assert [n.content for n in res.groups[0].notes] == DUPES
    assert other not in res.groups[0].note_ids
    assert rt.call("memory.consolidation_candidates", {"min_similarity": 0.999}).groups == []
    rt.call("memory.consolidate", {"source_ids": dupes, "content": "Orion deploys fail on slow migrations"})
    assert rt.call("memory.consolidation_candidates", {"min_similarity": 0.6}).groups == []


def test_candidates_respect_scope(rt):
    a = [remember(rt, t, scope="orion") for t in DUPES[:2]]
    remember(rt, DUPES[2], scope="vega")
    res = rt.call("memory.consolidation_candidates", {"scope": "orion", "min_similarity": 0.6})
    assert [g.note_ids for g in res.groups] == [sorted(a)]


# -- archive and prune -----------------------------------------------------------------------------------------
def test_archived_notes_leave_recall_and_walk_but_stay_readable(rt):
    a = remember(rt, "Orion uses Postgres for strict transactions")
    b = remember(rt, "Postgres strict transactions keep Orion consistent")
    rt.call("memory.link", {"source_id": a, "target_id": b, "relation": "supports"})
    res = rt.call("memory.archive", {"ids": [b, b]})
    assert res.archived == [b] and res.already == []
    assert rt.call("memory.archive", {"ids": [b]}).already == [b]
    for kw in ({}, {"expand_graph": True}, {"include_superseded": True}):
        assert b not in recall_ids(rt, "Postgres strict transactions Orion", **kw)
    walked = rt.call("memory.walk", {"query": "Postgres strict transactions Orion", "min_similarity": -1,
                                     "max_depth": 3}).results
    assert [h.note.id for h in walked] == [a]
    note = rt.call("memory.get", {"ids": [b]}).notes[0]
    assert note.archived_at == T0 and note.content.startswith("Postgres strict")
    assert [e.target_id for e in rt.call("memory.edges", {"memory_id": a}).edges] == [b]


def test_archive_survives_a_reopen(tmp_path):
    path = str(tmp_path / "a.duckdb")
    with open_test_runtime(config=HASHING, path=path) as r:
        a = remember(r, "Orion uses Postgres")
        r.call("memory.archive", {"ids": [a]})
    with open_test_runtime(config=HASHING, path=path) as r:
        assert recall_ids(r, "Orion Postgres") == []


def test_archive_bad_input_writes_nothing(rt):
    a = remember(rt, "alpha note")
    theirs = remember(rt, "beta note", namespace="other")
    before = snapshot(rt)
    with pytest.raises(errors.NotFound) as info:
        rt.call("memory.archive", {"ids": [a, theirs]})
    assert info.value.details["missing"] == [theirs]
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.archive", {"ids": []})
    with pytest.raises(errors.LimitExceeded):
        rt.call("memory.archive", {"ids": list(range(1, 1002))})
    assert snapshot(rt) == before


def test_prune_by_decayed_salience_and_age(rt, clock):
    old = remember(rt, "an old passing remark", salience=0.3, decay_factor=0.1)
    clock.now = T0 + timedelta(days=30)
    fresh = remember(rt, "a fresh passing remark", salience=0.3, decay_factor=0.1)
    keep = remember(rt, "an important decision", salience=0.9, decay_factor=0.0)
    before = snapshot(rt)
    dry = rt.call("memory.prune", {"min_salience": 0.1})
    assert dry.dry_run and dry.note_ids == [old]  # 0.3·e^(−3) ≈ 0.015 < 0.1; the fresh one is still 0.3
    assert snapshot(rt) == before
    assert rt.call("memory.prune", {"before": (T0 + timedelta(days=1)).isoformat()}).note_ids == [old]
    assert rt.call("memory.prune", {"min_salience": 0.5, "before": (T0 + timedelta(days=1)).isoformat()}).note_ids \
        == [old]
    assert rt.call("memory.prune", {"min_salience": 0.5}).note_ids == [old, fresh]
    done = rt.call("memory.prune", {"min_salience": 0.1, "dry_run": False})
    assert done.note_ids == [old] and not done.dry_run
    got = recall_ids(rt, "passing remark")  # (keep may follow: it is fresh's neighbour in an inferred episode)
    assert got[0] == fresh and old not in got
    assert rt.call("memory.prune", {"min_salience": 0.1}).note_ids == []  # archived notes are not pruned twice
    assert keep not in rt.call("memory.prune", {"min_salience": 0.5}).note_ids


def test_prune_needs_a_criterion(rt):
    remember(rt, "alpha note")
    before = snapshot(rt)
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.prune", {"dry_run": False})
    assert snapshot(rt) == before

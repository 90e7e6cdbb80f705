"""Beliefs: memory.upsert_belief versions a keyed semantic note into an append-only history, linked by
supersedes edges; memory.belief_history lists the versions (issue 5)."""
from datetime import timedelta

import pytest

from palimpsest_memory.runtime import errors
from store_support import T0, snapshot


def upsert(rt, key: str, content: str, **kw):
    return rt.call("memory.upsert_belief", {"fact_key": key, "content": content, **kw})


def recall_ids(rt, query: str, **kw) -> list[int]:
    return [h.note.id for h in rt.call("memory.recall", {"query": query, "limit": 20, **kw}).results]


@pytest.fixture
def three(rt, clock):
    """orion.database: MySQL (T0) → Postgres (T0+1d) → CockroachDB (T0+2d)."""
    v = []
    for i, db in enumerate(("MySQL", "Postgres", "CockroachDB")):
        clock.now = T0 + timedelta(days=i)
        v.append(upsert(rt, "orion.database", f"The Orion project database is {db}"))
    return v


def test_versions_supersede_each_other_and_recall_returns_only_the_latest(rt, three):
    v1, v2, v3 = three
    assert [v.version for v in three] == [1, 2, 3] and all(v.changed for v in three)
    assert v1.note.memory_type == "semantic"
    assert (v1.supersedes, v2.supersedes, v3.supersedes) == (None, v1.note.id, v2.note.id)
    hits = recall_ids(rt, "Orion project database")
    assert v3.note.id in hits and v1.note.id not in hits and v2.note.id not in hits
    # as_of before the second version: the first one is the belief then
    then = recall_ids(rt, "Orion project database", as_of=(T0 + timedelta(hours=12)).isoformat())
    assert v1.note.id in then and v2.note.id not in then and v3.note.id not in then
    notes = {n.id: n for n in rt.call("memory.get", {"ids": [v.note.id for v in three]}).notes}
    assert notes[v1.note.id].superseded_by == v2.note.id and notes[v2.note.id].superseded_by == v3.note.id
    assert notes[v3.note.id].superseded_by is None


def test_history_lists_every_version_with_the_supersedes_chain(rt, three):
    v1, v2, v3 = three
    hist = rt.call("memory.belief_history", {"fact_key": "orion.database"})
    assert hist.current == 3
    assert [h.note_id for h in hist.versions] == [v1.note.id, v2.note.id, v3.note.id]
    assert [h.content for h in hist.versions] == [f"The Orion project database is {d}"
                                                  for d in ("MySQL", "Postgres", "CockroachDB")]
    assert [h.recorded_at for h in hist.versions] == [T0, T0 + timedelta(days=1), T0 + timedelta(days=2)]
    assert [h.superseded_at for h in hist.versions] == [T0 + timedelta(days=1), T0 + timedelta(days=2), None]
    assert [h.supersedes for h in hist.versions] == [None, v1.note.id, v2.note.id]
    assert [h.superseded_by for h in hist.versions] == [v2.note.id, v3.note.id, None]
    # each link is a real supersedes edge new → old
    for h in hist.versions[1:]:
        edges = rt.call("memory.edges", {"memory_id": h.note_id, "direction": "out"}).edges
        assert [(e.id, e.target_id, e.relation) for e in edges] == [(h.edge_id, h.supersedes, "supersedes")]


def test_the_history_is_append_only(rt, clock):
    upsert(rt, "k", "first value of k")
    rows_v1 = rt.store.con.execute("SELECT * FROM memory.belief_versions").fetchall()
    clock.now = T0 + timedelta(days=1)
    upsert(rt, "k", "second value of k")
    rows = rt.store.con.execute("SELECT * FROM memory.belief_versions ORDER BY version").fetchall()
    assert rows[0] == rows_v1[0] and len(rows) == 2  # version 1's row untouched, version 2 appended


def test_identical_content_is_a_no_op(rt, three):
    before = snapshot(rt)
    again = upsert(rt, "orion.database", "The Orion project database is CockroachDB")
    assert not again.changed and again.version == 3 and again.note.id == three[2].note.id
    assert snapshot(rt) == before
    # the same content as an older version is a change: it becomes version 4
    back = upsert(rt, "orion.database", "The Orion project database is MySQL")
    assert back.changed and back.version == 4 and back.supersedes == three[2].note.id


def test_beliefs_are_namespace_isolated(rt):
    a = rt.call("memory.upsert_belief", {"fact_key": "lead", "content": "Alice leads Orion"}, namespace="team-a")
    b = rt.call("memory.upsert_belief", {"fact_key": "lead", "content": "Bob leads Orion"}, namespace="team-b")
    assert a.version == b.version == 1 and a.note.id != b.note.id  # same key, two namespaces, no supersession
    assert rt.call("memory.belief_history", {"fact_key": "lead"}, namespace="team-a").versions[0].note_id == a.note.id
    with pytest.raises(errors.NotFound):
        rt.call("memory.belief_history", {"fact_key": "lead"}, namespace="team-c")


@pytest.mark.parametrize("params,error", [
    ({"fact_key": "", "content": "x y"}, errors.InvalidParams),
    ({"fact_key": "k", "content": "   "}, errors.InvalidParams),
    ({"fact_key": "k", "content": "a value", "salience": 2}, errors.InvalidParams),
    ({"fact_key": "k", "content": "a value", "tags": [" "]}, errors.InvalidParams),
    ({"fact_key": "k", "content": "a value", "version": 3}, errors.InvalidParams),
    ({"fact_key": "k", "content": "x" * 100_001}, errors.LimitExceeded),
])
def test_bad_beliefs_are_typed_errors_that_write_nothing(rt, params, error):
    upsert(rt, "k", "the first value")
    before = snapshot(rt)
    with pytest.raises(error):
        rt.call("memory.upsert_belief", params)
    assert snapshot(rt) == before


def test_history_of_an_unknown_key_is_not_found(rt):
    with pytest.raises(errors.NotFound):
        rt.call("memory.belief_history", {"fact_key": "nobody.knows"})

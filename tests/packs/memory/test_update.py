"""memory.update and memory.history (issue 17, item 2): a content change is a new version that supersedes the old
one (history kept, recall returns the new text); metadata changes edit in place, are audited, reach recall's
filters, and keep the index equal to a fresh load; bad input changes nothing."""
from __future__ import annotations

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime

HASHING = {"packs": {"memory": {"embedder": "hashing"}}}


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(config=HASHING, discover=True, path=str(tmp_path / "u.duckdb"))
    yield runtime
    runtime.close()


def recall_ids(rt, query: str, **filters) -> list[int]:  # type: ignore[no-untyped-def]
    return [h.note.id for h in rt.call("memory.recall", {"query": query, **filters}).results]


def test_a_content_change_is_a_new_version_that_recall_returns(rt) -> None:  # type: ignore[no-untyped-def]
    old = rt.call("memory.remember", {"content": "Orion uses Postgres for billing", "scope": "orion",
                                      "tags": ["db"], "kind": "decision"}).note
    res = rt.call("memory.update", {"id": old.id, "content": "Orion uses CockroachDB for billing"}, actor="ada")
    new = res.note
    assert res.previous == old.id and res.changed == ["content"] and new.id != old.id
    assert (new.scope, new.tags, new.kind) == ("orion", ["db"], "decision")  # carried over
    assert recall_ids(rt, "Orion billing database") == [new.id]
    assert rt.call("memory.get", {"ids": [old.id]}).notes[0].content == "Orion uses Postgres for billing"
    hist = rt.call("memory.history", {"id": new.id})
    assert [v.id for v in hist.versions] == [old.id, new.id]
    assert [v.id for v in rt.call("memory.history", {"id": old.id}).versions] == [old.id, new.id]
    with pytest.raises(errors.Conflict, match="superseded"):
        rt.call("memory.update", {"id": old.id, "content": "again"})


def test_metadata_changes_edit_in_place_are_audited_and_reach_recall(rt, tmp_path) -> None:  # type: ignore[no-untyped-def]
    note = rt.call("memory.remember", {"content": "The launch moved to May", "scope": "vega"}).note
    res = rt.call("memory.update", {"id": note.id, "tags": ["launch"], "salience": 0.9, "kind": "milestone",
                                    "scope": "orion"}, actor="ben")
    assert res.note.id == note.id and sorted(res.changed) == ["kind", "salience", "scope", "tags"]
    assert recall_ids(rt, "launch May", scope="orion", kind="milestone", tags=["launch"]) == [note.id]
    assert recall_ids(rt, "launch May", scope="vega") == []
    assert recall_ids(rt, "launch May", min_salience=0.85) == [note.id]
    changes = {c.field: (c.old, c.new, c.actor) for c in rt.call("memory.history", {"id": note.id}).changes}
    assert changes["scope"] == ("vega", "orion", "ben") and changes["tags"] == ([], ["launch"], "ben")
    assert changes["salience"][1] == 0.9
    again = rt.call("memory.update", {"id": note.id, "scope": "orion"})  # no actual change: nothing audited
    assert again.changed == [] and len(rt.call("memory.history", {"id": note.id}).changes) == 4
    live = {n: m.digest() for n, m in rt.followers.mirrors["memory"]}
    path = rt.path
    rt.close()
    with open_test_runtime(config=HASHING, discover=True, path=path) as fresh:
        fresh.hold("default")
        assert {n: m.digest() for n, m in fresh.followers.mirrors["memory"]} == live


@pytest.mark.parametrize("params, exc", [
    ({"id": 999}, errors.NotFound), ({"id": 999, "salience": 0.5}, errors.NotFound),
    ({"salience": 1.5}, errors.InvalidParams), ({"content": "   "}, errors.InvalidParams),
    ({}, errors.InvalidParams), ({"kind": "nonsense"}, errors.InvalidParams),
])
def test_bad_updates_are_typed_and_change_nothing(rt, params, exc) -> None:  # type: ignore[no-untyped-def]
    note = rt.call("memory.remember", {"content": "a stable note about tea"}).note
    before = rt.store.con.execute("SELECT * FROM memory.notes ORDER BY id").fetchall()
    with pytest.raises(exc):
        rt.call("memory.update", {"id": note.id, **params})
    assert rt.store.con.execute("SELECT * FROM memory.notes ORDER BY id").fetchall() == before
    assert rt.store.con.execute("SELECT count(*) FROM memory.note_audit").fetchone() == (0,)
    with pytest.raises(errors.NotFound):
        rt.call("memory.update", {"id": note.id, "salience": 0.5}, namespace="other")

"""Mirrors per namespace, on demand, under a memory budget (issue 14 item 4; ADR 0016).

A runtime holds nothing at open; a namespace's mirrors (memory index and graph, kg fact cache and detectors) load
at its first call; with ``runtime.mirror_budget_mb`` the least recently used namespace is written and dropped.
Every test runs on a DuckDB file and on PostgreSQL (the both-backends fixture)."""
from __future__ import annotations

from typing import Any

import pytest
from store_support import HASHING

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime

SPACES = ["ns-a", "ns-b", "ns-c", "ns-d"]
TINY = 0.001  # MB: smaller than any namespace, so only the namespace of the last call stays held


@pytest.fixture
def target(pal_target: str) -> str:
    return pal_target


def config(budget: float = 0) -> dict[str, Any]:
    return {**HASHING, "runtime": {**HASHING.get("runtime", {}), "mirror_budget_mb": budget}}


def fill(rt: Any) -> dict[str, list[int]]:
    ids = {}
    for k, ns in enumerate(SPACES):
        notes = [{"content": f"{ns} note {i} about {['coffee', 'paris', 'deadline'][i % 3]} {ns}"} for i in range(6)]
        ids[ns] = rt.call("memory.remember_many", {"notes": notes}, namespace=ns).ids
        rt.call("memory.link", {"source_id": ids[ns][0], "target_id": ids[ns][1], "relation": "supports"},
                namespace=ns)
        rt.call("kg.assert_fact", {"subject": "Ada", "predicate": "lives_in", "object": f"City{k}"}, namespace=ns)
        rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project", "aliases": [f"Orion-{k}"]}, namespace=ns)
        rt.call("memory.archive", {"ids": ids[ns][5:]}, namespace=ns)
        rt.call("memory.centrality", {}, namespace=ns)
    return ids


def digests(rt: Any) -> dict[str, Any]:
    out = {}
    for owner, mirrors in rt.followers.mirrors.items():
        for name, mirror in mirrors:
            if mirror.per_namespace:
                out[f"{owner}.{name}"] = mirror.digest()
    return out


def answers(rt: Any, ns: str) -> tuple:
    recall = rt.call("memory.recall", {"query": "coffee note"}, namespace=ns)
    hits = [h.note.id for h in recall.results]
    facts = [(f.subject, f.object) for f in rt.call("kg.facts", {"subject": "Ada"}, namespace=ns).facts]
    found = rt.call("kg.detect_entities", {"text": "Ada and Orion"}, namespace=ns).entity_ids
    walk = [h.note.id for h in rt.call("memory.walk", {"query": "coffee", "seeds": 1, "min_similarity": -1},
                                       namespace=ns).results]
    return hits, facts, found, walk, recall.recall_id


def test_nothing_is_held_at_open_and_a_namespace_loads_at_its_first_call(target) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(config=config(), discover=True, path=target) as rt:
        fill(rt)
    with open_test_runtime(config=config(), discover=True, path=target) as rt:
        assert rt.held_namespaces() == []
        assert rt.call("memory.recall", {"query": "coffee"}, namespace="ns-b").results
        assert rt.held_namespaces() == ["ns-b"]
        rt.call("kg.facts", {"subject": "Ada"}, namespace="ns-a")
        rt.call("memory.recall", {"query": "coffee"}, namespace="ns-b")
        assert rt.held_namespaces() == ["ns-a", "ns-b"]  # least recently used first
        # cross-namespace verbs read SQL: every namespace is listed with its size though two are held
        listed = {n.name: n.notes for n in rt.call("memory.namespaces", {}).namespaces}
        assert {ns: listed.get(ns) for ns in SPACES} == dict.fromkeys(SPACES, 5)  # 6 remembered, 1 archived


def test_evict_then_reload_equals_the_mirrors_kept_by_apply(target) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(config=config(), discover=True, path=target) as rt:
        fill(rt)
        kept = digests(rt)  # every namespace held since its first write, kept by apply
        held = rt.held_namespaces()
        assert set(held) >= set(SPACES)
        for ns in held:
            with rt._lock:
                rt.followers.evict(ns)
        assert rt.held_namespaces() == [] and digests(rt) != kept
        for ns in held:
            rt.hold(ns)
        assert digests(rt) == kept
    with open_test_runtime(config=config(), discover=True, path=target) as fresh:  # and a fresh process agrees
        for ns in held:
            fresh.hold(ns)
        assert digests(fresh) == kept


def test_a_budget_of_one_namespace_still_answers_every_namespace(target) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(config=config(), discover=True, path=target) as rt:
        fill(rt)
        want = {ns: answers(rt, ns)[:4] for ns in SPACES}
    with open_test_runtime(config=config(TINY), discover=True, path=target) as rt:
        before = events(rt)
        for _ in range(2):  # twice round: every namespace is evicted and loaded again in between
            for ns in SPACES:
                *got, recall_id = answers(rt, ns)
                assert tuple(got) == want[ns], ns
                assert rt.held_namespaces() == [ns]
                # feedback on a recall of an evicted-and-reloaded namespace reaches the brain
                rt.call("brain.feedback", {"recall_id": recall_id, "note_id": got[0][0], "signal": "useful"},
                        namespace=ns)
        assert rt.followers.evictions >= 2 * len(SPACES) - 1
        states = {ns: rt.call("brain.state", {}, namespace=ns) for ns in SPACES}
        assert all(s.model_dump() for s in states.values())
        after = events(rt)
        assert {ns: after.get(ns, 0) - before.get(ns, 0) for ns in SPACES} == dict.fromkeys(SPACES, 2)  # none lost


def events(rt: Any) -> dict[str, int]:
    return dict(rt.store.con.execute("SELECT namespace, count(*) FROM brain.events WHERE kind = 'feedback' GROUP BY namespace").fetchall())


def test_close_writes_each_changed_namespace_snapshot_and_reopen_restores_it(target) -> None:  # type: ignore[no-untyped-def]
    cfg = {**config(), "packs": {**HASHING["packs"], "memory": {**HASHING["packs"].get("memory", {}),
                                                                "index_snapshot_min_notes": 1}}}
    with open_test_runtime(config=cfg, discover=True, path=target) as rt:
        fill(rt)
        rt.call("memory.recall", {"query": "nothing"}, namespace="empty")  # held, no notes: no snapshot
        kept = digests(rt)
    with open_test_runtime(config=cfg, discover=True, path=target) as rt:
        held = ["empty", *SPACES]  # the order does not matter to the digests
        rows = rt.store.con.execute("SELECT namespace, notes FROM memory.index_snapshot WHERE id = 1 "
                               "ORDER BY namespace").fetchall()
        assert rows == [(ns, 6) for ns in SPACES]
        for ns in held:
            rt.hold(ns)
            if ns in SPACES:
                assert not rt.pack_state("memory").index.of(ns).dirty  # restored from its own snapshot
        assert digests(rt) == kept
        saved = rt.store.con.execute("SELECT max(saved_at) FROM memory.index_snapshot").fetchall()
    with open_test_runtime(config=cfg, discover=True, path=target) as rt:  # nothing changed: nothing rewritten
        for ns in SPACES:
            rt.hold(ns)
    with open_test_runtime(config=cfg, discover=True, path=target) as rt:
        assert rt.store.con.execute("SELECT max(saved_at) FROM memory.index_snapshot").fetchall() == saved


def test_an_evicted_namespace_is_snapshotted_before_it_is_dropped(target) -> None:  # type: ignore[no-untyped-def]
    cfg = {**config(TINY), "packs": {**HASHING["packs"], "memory": {**HASHING["packs"].get("memory", {}),
                                                                    "index_snapshot_min_notes": 1}}}
    with open_test_runtime(config=cfg, discover=True, path=target) as rt:
        rt.call("memory.remember", {"content": "first namespace note"}, namespace="ns-a")
        assert rt.store.con.execute("SELECT count(*) FROM memory.index_snapshot").fetchall() == [(0,)]
        rt.call("memory.remember", {"content": "second namespace note"}, namespace="ns-b")  # evicts ns-a
        assert rt.held_namespaces() == ["ns-b"]
        assert rt.store.con.execute("SELECT namespace FROM memory.index_snapshot WHERE id = 1").fetchall() == [("ns-a",)]


def test_a_bad_budget_is_a_config_error() -> None:
    for bad in (-1, float("nan"), "lots"):
        with pytest.raises(errors.ConfigError):
            open_test_runtime(config=config(bad), discover=True)  # type: ignore[arg-type]

"""Documented caps (issue 9): every cap in the packs' defaults.toml is enforced with a clear LimitExceeded (HTTP 413)
that names the field and the cap, and a call refused by a cap writes nothing (every table, byte for byte, and
the in-memory indexes). Listing caps clamp instead of refusing; the recall deadline stops a recall.

The caps: ``[packs.memory]`` max_content_chars, max_label_chars, max_tags, max_batch, max_query_chars,
recall_deadline_ms; ``[packs.memory.graph]`` walk_max_depth_cap, walk_max_visited, max_ids; ``[packs.kg]``
max_batch, max_name_length, max_literal_length, max_query_limit, graph_recall_max_nodes(_cap),
graph_recall_max_depth_cap, detect_max_text_length. (kg.graph_recall's text is not capped: see
test_findings.py.)
"""
import itertools
import re
from types import SimpleNamespace

import pytest

from rel_support import memory_fingerprint, table_checksums
from palimpsest_memory.runtime import errors

WORDS = "Alice chose Postgres for Orion because of strict transactions".split()


def config(memory=None, graph=None, kg=None):
    mem = {"embedder": "hashing", **(memory or {})}
    if graph:
        mem["graph"] = graph
    return {"packs": {"memory": mem, "kg": kg or {}}}


def recall_deadline(ms):
    """Only the recall's deadline: the call's own (runtime.deadline_seconds) is set from the real clock, which
    the tests' jumping clock does not follow."""
    return {**config({"recall_deadline_ms": ms}), "runtime": {"deadline_seconds": 0}}


def notes(rt, n, **extra):
    return rt.call("memory.remember_many", {"notes": [
        {"content": f"{' '.join(WORDS[: 3 + i % 5])} note {i}", **extra} for i in range(n)]}).ids


def one_by_one(rt, n):
    return [rt.call("memory.remember", {"content": f"{' '.join(WORDS[: 3 + i])} note {i}"}).note.id for i in range(n)]


# (case id, config, setup(rt) -> ids, verb, params(ids), message regex, error loc)
CASES = [
    ("content/remember", config({"max_content_chars": 50}), None, "memory.remember",
     lambda ids: {"content": "x" * 51}, r"content is 51 characters; the limit is 50", ["content"]),
    ("content/remember_many", config({"max_content_chars": 50}), None, "memory.remember_many",
     lambda ids: {"notes": [{"content": "ok"}, {"content": "y" * 51}]}, r"the limit is 50",
     ["notes", "1", "content"]),
    ("content/upsert_belief", config({"max_content_chars": 50}), None, "memory.upsert_belief",
     lambda ids: {"fact_key": "k", "content": "z" * 51}, r"the limit is 50", ["content"]),
    ("content/consolidate", config({"max_content_chars": 50}), lambda rt: notes(rt, 2), "memory.consolidate",
     lambda ids: {"source_ids": ids, "content": "w" * 51}, r"the limit is 50", ["content"]),
    ("label/scope", config({"max_label_chars": 10}), None, "memory.remember",
     lambda ids: {"content": "c", "scope": "s" * 11}, r"scope is 11 characters; the limit is 10", ["scope"]),
    ("label/thread", config({"max_label_chars": 10}), None, "memory.remember_many",
     lambda ids: {"notes": [{"content": "c", "thread": "t" * 11}]}, r"notes\.0\.thread is 11 characters",
     ["notes", "0", "thread"]),
    ("label/source_id", config({"max_label_chars": 10}), None, "memory.remember",
     lambda ids: {"content": "c", "source_id": "u" * 11}, r"source_id is 11 characters", ["source_id"]),
    ("label/tag", config({"max_label_chars": 10}), None, "memory.remember",
     lambda ids: {"content": "c", "tags": ["ok", "g" * 11]}, r"tags\.1 is 11 characters", ["tags", "1"]),
    ("label/belief scope", config({"max_label_chars": 10}), None, "memory.upsert_belief",
     lambda ids: {"fact_key": "k", "content": "c", "scope": "s" * 11}, r"scope is 11 characters", ["scope"]),
    ("tags/count", config({"max_tags": 2}), None, "memory.remember",
     lambda ids: {"content": "c", "tags": ["a", "b", "c"]}, r"at most 2 tags, got 3", ["tags"]),
    ("batch/remember_many", config({"max_batch": 3}), None, "memory.remember_many",
     lambda ids: {"notes": [{"content": f"n{i}"} for i in range(4)]}, r"at most 3 notes per call, got 4", ["notes"]),
    ("batch/memory.link_many", config({"max_batch": 3}), lambda rt: notes(rt, 3), "memory.link_many",
     lambda ids: {"links": [{"source_id": a, "target_id": b, "relation": "related_to"}
                            for a, b in itertools.permutations(ids, 2)][:4]}, r"at most 3 links per call, got 4",
     ["links"]),
    ("query/recall", config({"max_query_chars": 20}), None, "memory.recall",
     lambda ids: {"query": "q" * 15 + " word!"}, r"query is 21 characters; the limit is 20", ["query"]),
    ("query/explain", config({"max_query_chars": 20}), None, "memory.explain",
     lambda ids: {"query": "why did we choose Postgres"}, r"the limit is 20", ["query"]),
    ("query/walk", config({"max_query_chars": 20}), None, "memory.walk",
     lambda ids: {"query": "why did we choose Postgres"}, r"the limit is 20", ["query"]),
    ("depth/walk", config(), None, "memory.walk",
     lambda ids: {"query": "Postgres", "max_depth": 5}, r"max_depth is at most 4", ["max_depth"]),
    ("ids/archive", config(graph={"max_ids": 2}), lambda rt: notes(rt, 3), "memory.archive",
     lambda ids: {"ids": ids}, r"at most 2 ids per call, got 3", ["ids"]),
    ("ids/consolidate", config(graph={"max_ids": 2}), lambda rt: notes(rt, 3), "memory.consolidate",
     lambda ids: {"source_ids": ids, "content": "summary"}, r"at most 2 ids per call, got 3", ["source_ids"]),
    ("kg batch/assert_facts", config(kg={"max_batch": 2}), None, "kg.assert_facts",
     lambda ids: {"facts": [{"subject": f"P{i}", "predicate": "likes", "object": "Orion"} for i in range(3)]},
     r"at most 2 facts per call, got 3", ["facts"]),
    ("kg batch/link_many", config(kg={"max_batch": 2}), lambda rt: one_by_one(rt, 4), "kg.link_many",
     lambda ids: {"links": [{"src": f"m:{a}", "dst": f"m:{b}", "relation": "supports"}
                            for a, b in zip(ids, ids[1:])]}, r"at most 2 links per call, got 3", ["links"]),
    ("kg name/subject", config(kg={"max_name_length": 10}), None, "kg.assert_fact",
     lambda ids: {"subject": "S" * 11, "predicate": "likes", "object": "Orion"}, r"subject is longer than 10",
     ["subject"]),
    ("kg name/object in batch", config(kg={"max_name_length": 10}), None, "kg.assert_facts",
     lambda ids: {"facts": [{"subject": "Alice", "predicate": "likes", "object": "O" * 11}]},
     r"facts\.0\.object is longer than 10", ["facts", 0, "object"]),
    ("kg name/alias", config(kg={"max_name_length": 10}), None, "kg.upsert_entity",
     lambda ids: {"name": "Alice", "aliases": ["A" * 11]}, r"aliases\.0 is longer than 10", ["aliases", 0]),
    ("kg literal", config(kg={"max_literal_length": 10}), None, "kg.assert_fact",
     lambda ids: {"subject": "Alice", "predicate": "motto", "object": "m" * 11, "literal": True},
     r"object is longer than 10", ["object"]),
    ("kg graph_recall depth", config(kg={"graph_recall_max_depth_cap": 2}), None, "kg.graph_recall",
     lambda ids: {"entities": [], "max_depth": 3}, r"max_depth is at most 2", ["max_depth"]),
    ("kg graph_recall nodes", config(kg={"graph_recall_max_nodes_cap": 5}), None, "kg.graph_recall",
     lambda ids: {"entities": [], "max_nodes": 6}, r"max_nodes is at most 5", ["max_nodes"]),
    ("kg detect text", config(kg={"detect_max_text_length": 100}), None, "kg.detect_entities",
     lambda ids: {"text": "Alice " * 17}, r"longer than 100 characters", ["text"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cap_is_enforced_with_a_clear_error_and_writes_nothing(make_pal_runtime, case):
    _, cfg, setup, verb, params, message, loc = case
    rt = make_pal_runtime(config=cfg)
    ids = setup(rt) if setup else []
    before = table_checksums(rt.store.con), memory_fingerprint(rt)
    with pytest.raises(errors.LimitExceeded) as info:
        rt.call(verb, params(ids))
    err = info.value
    assert re.search(message, err.message), err.message
    assert err.code == "limit_exceeded" and err.http_status == 413 and err.exit_code == 2
    assert err.verb == verb
    assert err.details["errors"][0]["loc"] == loc
    assert (table_checksums(rt.store.con), memory_fingerprint(rt)) == before


def test_caps_at_exactly_the_limit_are_accepted(make_pal_runtime):
    rt = make_pal_runtime(config=config({"max_content_chars": 50, "max_label_chars": 10, "max_tags": 2,
                                         "max_batch": 3, "max_query_chars": 20}, kg={"max_name_length": 10}))
    full = {"content": "x" * 50, "scope": "s" * 10, "thread": "t" * 10, "source_id": "u" * 10, "tags": ["g" * 10, "h"]}
    ids = rt.call("memory.remember_many", {"notes": [full, {"content": "Postgres"}, {"content": "Orion"}]}).ids
    assert len(ids) == 3
    (stored,) = rt.call("memory.get", {"ids": [ids[0]]}).notes
    assert {k: getattr(stored, k) for k in full} == full  # stored whole, not cut to the cap
    hits = rt.call("memory.recall", {"query": "Postgres" + " " * 4 + "x" * 8}).results  # exactly 20 characters
    assert ids[1] in [h.note.id for h in hits]
    rt.call("kg.assert_fact", {"subject": "S" * 10, "predicate": "likes", "object": "Orion"})
    assert [f.subject.name for f in rt.call("kg.facts", {"subject": "S" * 10}).facts] == ["S" * 10]


def test_every_documented_memory_and_kg_cap_is_in_default_config():
    import tomllib
    from pathlib import Path

    packs = Path(__file__).resolve().parents[2] / "packs"
    mem, kg = (tomllib.loads((packs / name / "defaults.toml").read_text()) for name in ("memory", "kg"))
    for key in ("max_content_chars", "max_label_chars", "max_tags", "max_batch", "max_query_chars",
                "recall_deadline_ms"):
        assert mem[key] > 0, key
    for key in ("walk_max_depth_cap", "walk_max_visited", "max_ids"):
        assert mem["graph"][key] > 0, key
    for key in ("max_batch", "max_name_length", "max_literal_length", "max_query_limit", "graph_recall_max_nodes_cap",
                "graph_recall_max_depth_cap", "detect_max_text_length"):
        assert kg[key] > 0, key


# -- listing caps clamp ------------------------------------------------------------------------------------
def test_listing_limits_are_clamped_to_max_query_limit(make_pal_runtime):
    rt = make_pal_runtime(config=config(kg={"max_query_limit": 2}))
    rt.call("kg.assert_facts", {"facts": [{"subject": f"P{i}", "predicate": "likes", "object": "Orion"}
                                          for i in range(5)]})
    assert len(rt.call("kg.facts", {"limit": 2 ** 63 - 1}).facts) == 2
    with pytest.raises(errors.InvalidParams, match="64-bit"):  # beyond any storable integer: refused, not clamped
        rt.call("kg.facts", {"limit": 10 ** 30})
    assert len(rt.call("kg.entities", {"limit": 2 ** 63 - 1}).entities) == 2
    assert len(rt.call("kg.centrality", {"top": 10 ** 12}).top) == 2


def test_memory_limits_beyond_the_model_bounds_are_invalid_params(pal_runtime):
    for verb, params in [("memory.recall", {"query": "Postgres", "limit": 201}),
                         ("memory.get", {"ids": list(range(1, 1002))}),
                         ("memory.edges", {"memory_id": 1, "limit": 10_001}),
                         ("memory.walk", {"query": "Postgres", "seeds": 101}),
                         ("brain.state", {"events": 1001})]:
        with pytest.raises(errors.InvalidParams):
            pal_runtime.call(verb, params)


def test_graph_recall_default_node_budget_truncates(make_pal_runtime):
    rt = make_pal_runtime(config=config(kg={"graph_recall_max_nodes": 3}))
    rt.call("kg.assert_facts", {"facts": [{"subject": "Alice", "predicate": "knows", "object": f"P{i}"}
                                          for i in range(6)]})
    rt.call("kg.define_predicate", {"name": "knows", "cardinality": "many"})
    rt.call("kg.assert_facts", {"facts": [{"subject": "Alice", "predicate": "knows", "object": f"P{i}"}
                                          for i in range(6)]})
    res = rt.call("kg.graph_recall", {"entities": ["Alice"], "max_depth": 2})
    assert res.truncated and len(res.nodes) == 3


def _chain_of_eight(rt) -> list[int]:
    """Eight notes linked in a chain; the middle one (index 3) is worded as the walk's query, so it is the one
    seed whatever the order of tied scores (the others differ only by their number): from it, depth 4 reaches
    both ends (3 back, 4 forward)."""
    ids = rt.call("memory.remember_many", {"notes": [
        {"content": "Orion database decision keystone" if i == 3 else f"Orion database decision number {i}"}
        for i in range(8)]}).ids
    rt.call("memory.link_many", {"links": [{"source_id": a, "target_id": b, "relation": "supports"}
                                           for a, b in zip(ids, ids[1:])]})
    return ids


def test_walk_enters_at_most_walk_max_visited_notes(make_pal_runtime):
    walk = {"query": "Orion database decision keystone", "seeds": 1, "max_depth": 4, "min_similarity": -1.0,
            "limit": 50}
    rt = make_pal_runtime(config=config(graph={"walk_max_visited": 3, "walk_min_similarity": -1.0,
                                               "walk_max_depth_cap": 4}))
    ids = _chain_of_eight(rt)
    res = rt.call("memory.walk", walk)
    assert res.seeds == [ids[3]]
    assert res.visited == 3 and len(res.results) == 3
    uncapped = make_pal_runtime(config=config(graph={"walk_min_similarity": -1.0, "walk_max_depth_cap": 4}))
    ids = _chain_of_eight(uncapped)
    res = uncapped.call("memory.walk", walk)
    assert res.seeds == [ids[3]] and res.visited == 8


# -- the recall deadline -------------------------------------------------------------------------------------
class JumpingClock:
    """A monotonic clock that moves ``step`` seconds each time it is read: deterministic, however fast the
    machine is (a deadline of 1 ms could otherwise be met by a fast recall)."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 1000.0, step

    def monotonic(self) -> float:
        self.t += self.step
        return self.t


@pytest.fixture
def jumping_clock(monkeypatch):
    import palimpsest_memory.runtime.dispatch as dispatch_mod

    clock = JumpingClock(step=0.010)  # 10 ms per read
    monkeypatch.setattr(dispatch_mod, "time", SimpleNamespace(monotonic=clock.monotonic))
    return clock


def test_recall_past_its_deadline_is_stopped_and_records_nothing(make_pal_runtime, jumping_clock):
    rt = make_pal_runtime(config=recall_deadline(5))
    notes(rt, 5)
    before = table_checksums(rt.store.con), memory_fingerprint(rt)
    with pytest.raises(errors.DeadlineExceeded) as info:
        rt.call("memory.recall", {"query": "Postgres Orion"})
    err = info.value
    assert err.code == "deadline_exceeded" and err.http_status == 504
    assert "memory.recall ran past its 5 ms deadline (packs.memory.recall_deadline_ms) during embed" == err.message
    assert err.details == {"deadline_seconds": 0.005, "setting": "packs.memory.recall_deadline_ms", "during": "embed"}
    assert (table_checksums(rt.store.con), memory_fingerprint(rt)) == before  # not even the brain's serve ledger


def test_recall_deadline_reaches_explain(make_pal_runtime, jumping_clock):
    rt = make_pal_runtime(config=recall_deadline(5))
    notes(rt, 3)
    with pytest.raises(errors.DeadlineExceeded):
        rt.call("memory.explain", {"query": "why Postgres for Orion"})


def test_a_zero_deadline_means_no_deadline(make_pal_runtime, jumping_clock):
    rt = make_pal_runtime(config=recall_deadline(0))
    ids = notes(rt, 5)
    reads = jumping_clock.t
    assert set(h.note.id for h in rt.call("memory.recall", {"query": "Postgres Orion"}).results) <= set(ids)
    assert jumping_clock.t == reads  # with no deadline the clock is not even read


def test_a_generous_deadline_lets_a_recall_finish(make_pal_runtime, jumping_clock):
    rt = make_pal_runtime(config=recall_deadline(10_000))
    notes(rt, 5)
    assert rt.call("memory.recall", {"query": "Postgres Orion"}).results

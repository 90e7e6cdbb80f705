"""The kg mirrors (the fact cache, packs/kg/cache.py, and the entity detectors, packs/kg/detect.py) always agree
with the store: after writes, after a rolled-back call, inside a transaction that wrote, after reopen, and per
namespace (adr/0014-kg-scale.md)."""
from __future__ import annotations

import gc
import random

import pytest
from pydantic import BaseModel, ConfigDict, Field

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.testing import open_test_runtime

from palimpsest_memory.packs.kg import pack as kg_pack
from palimpsest_memory.packs.kg.cache import FactCache
from palimpsest_memory.packs.kg.cache_columns import LOAD_COLUMNS
from palimpsest_memory.packs.kg.detect import EntityDetectors

from .conftest import Clock, counts

probe = Pack("kgprobe", version="0.1.0", requires=["kg"])


class ProbeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    facts: list[dict] = Field(default_factory=list)
    retract: int | None = None
    alias: str | None = None
    subject: str = "Alice"
    fail: bool = False
    steal_alias: str | None = None


class ProbeResult(BaseModel):
    seen: list[str]


@probe.verb("write_then_read", act=Act.COMMISSIVE)
def write_then_read(params: ProbeParams, ctx: Context) -> ProbeResult:
    """Write kg data, read it back in the same transaction, then (optionally) fail so everything rolls back."""
    if params.facts:
        ctx.call("kg.assert_facts", {"facts": params.facts})
    if params.retract is not None:
        ctx.call("kg.retract_fact", {"fact_id": params.retract})
    if params.alias:
        ctx.call("kg.upsert_entity", {"name": params.subject, "aliases": [params.alias]})
    seen = [f.object for f in ctx.call("kg.facts", {"subject": params.alias or params.subject}).facts]
    if params.facts:  # a second write in the same transaction must build on the first one
        ctx.call("kg.assert_facts", {"facts": [{**params.facts[-1], "object": "Second"}]})
        seen += [f.object for f in ctx.call("kg.facts", {"subject": params.subject}).facts]
    if params.steal_alias:  # kg creates the entity, then refuses the alias; this caller shrugs and commits
        try:
            ctx.call("kg.upsert_entity", {"name": "Newcomer", "aliases": [params.steal_alias]})
        except errors.Conflict:
            pass
    if params.fail:
        raise errors.Conflict("the caller changed its mind")
    return ProbeResult(seen=seen)


@probe.verb("swallow_then_write", act=Act.COMMISSIVE)
def swallow_then_write(params: ProbeParams, ctx: Context) -> ProbeResult:
    """kg half-writes and refuses (the caller goes on), then the same transaction writes and reads kg again."""
    try:
        ctx.call("kg.upsert_entity", {"name": "Latecomer", "aliases": [params.steal_alias]})
    except errors.Conflict:
        pass
    # Latecomer exists in SQL only: later kg calls of this transaction must not trust the cache
    ctx.call("kg.assert_fact", {"subject": "Latecomer", "predicate": "works_at", "object": "Umbrella"})
    return ProbeResult(seen=[f.object for f in ctx.call("kg.facts", {"subject": "Latecomer"}).facts])


def _state(rt):
    return rt.pack_state("kg")


def _cache(rt, ns: str = "default"):
    return _state(rt).facts.namespaces[ns]


def assert_mirrors_equal_a_fresh_load(rt) -> None:
    """The mirrors kept up to date by apply hold what a fresh load of the same namespaces holds (digests)."""
    st = _state(rt)
    fresh_facts = FactCache(hold=[ns for ns, c in st.facts.namespaces.items() if c is not None])
    fresh_detectors = EntityDetectors(hold=st.detectors.keys)
    for mirror in (fresh_facts, fresh_detectors):
        rt.followers.load("kg", mirror)
    assert fresh_facts.digest() == st.facts.digest()
    assert fresh_detectors.digest() == st.detectors.digest()


def assert_cache_matches_store(rt, ns: str = "default") -> None:
    """Every cached row, key, name and cardinality equals what SQL holds now; every mirror equals a fresh load."""
    assert_mirrors_equal_a_fresh_load(rt)
    c = _cache(rt, ns)
    cached = sorted(((sid, *r) for sid, rows in c.subjects.items() for r in rows), key=lambda r: (r[0], r[2]))
    stored = sorted(rt.store.con.execute(f"SELECT {LOAD_COLUMNS} FROM kg.facts WHERE namespace = ? AND retracted_at IS "
                                    "NULL", [ns]).fetchall(), key=lambda r: (r[0], r[2]))
    assert cached == stored
    keys = rt.store.con.execute("SELECT k.key, e.id, e.name FROM kg.entity_keys k JOIN kg.entities e ON e.id = "
                           "k.entity_id WHERE k.namespace = ?", [ns]).fetchall()
    assert c.keys == {k: i for k, i, _ in keys}
    assert c.names == {i: n for _, i, n in keys}
    assert c.cards == dict(rt.store.con.execute("SELECT name, cardinality FROM kg.predicates WHERE namespace = ?",
                                           [ns]).fetchall())


def assert_reads_match_sql(rt, clock: Clock, subjects: list[str], ns: str = "default") -> None:
    """kg.facts answered from the cache equals the SQL path (known_at = now, after every write)."""
    clock.tick()
    for subject in subjects:
        for as_of in (None, "1990", "2015-06", "2021-06", "2023-06", "2030"):
            base = {"subject": subject}
            if as_of:
                base["as_of"] = as_of
            for extra in ({}, {"predicate": "works_at"}, {"include_superseded": True}, {"object": "Meta"}):
                q = {**base, **extra}
                cached = rt.call("kg.facts", q, namespace=ns).facts
                via_sql = rt.call("kg.facts", {**q, "known_at": clock.now}, namespace=ns).facts
                assert cached == via_sql, q


@pytest.fixture
def rt(make_pal_runtime, clock):
    return make_pal_runtime(kg_pack, probe, clock=clock)


def random_writes(rt, clock, rng: random.Random, steps: int, subjects: list[str], ns: str = "default") -> None:
    """Random assertions (late, open-start, explicit-end, coexisting, literal, sourced), retractions and aliases;
    the cache must equal the store after each step."""
    for step in range(steps):
        clock.tick()
        fact = {"subject": rng.choice(subjects), "predicate": rng.choice(["works_at", "works_at", "speaks"]),
                "object": rng.choice(["Meta", "Google", "Startup", "IBM"]),
                "valid_from": str(rng.randrange(2010, 2026)), "confidence": rng.choice([0.5, 0.9, 1.0])}
        if rng.random() < 0.2:
            fact["valid_to"] = str(int(fact["valid_from"]) + rng.randrange(1, 4))
        if rng.random() < 0.1:
            del fact["valid_from"]
        if rng.random() < 0.1:
            fact["allow_coexisting"] = True
        if rng.random() < 0.15:
            fact["literal"] = True
        if rng.random() < 0.2:
            fact["source_id"] = f"m:{rng.randrange(5)}"
        res = rt.call("kg.assert_facts", {"facts": [fact, {**fact, "subject": rng.choice(subjects)}]}, namespace=ns)
        if step % 7 == 3:
            rt.call("kg.retract_fact", {"fact_id": res.outcomes[0].fact_id}, namespace=ns)
        if step == steps // 2:
            rt.call("kg.upsert_entity", {"name": subjects[0], "aliases": [subjects[0][:3]]}, namespace=ns)
            rt.call("kg.define_predicate", {"name": "works_at", "cardinality": "many"}, namespace=ns)
        assert_cache_matches_store(rt, ns)


def test_cache_agrees_with_the_store_through_random_writes(rt, clock):
    rt.call("kg.define_predicate", {"name": "speaks", "cardinality": "many"})
    random_writes(rt, clock, random.Random(7), 60, ["Alice", "Bob", "Carol"])
    assert_reads_match_sql(rt, clock, ["Alice", "Bob", "Carol", "Ali", "Nobody"])


def test_a_rolled_back_call_leaves_the_cache_unchanged(rt, clock):
    rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta", "valid_from": "2020"})
    fid = rt.call("kg.facts", {"subject": "Alice"}).facts[0].fact_id
    assert_cache_matches_store(rt)
    before = counts(rt)
    clock.tick()
    late = {"subject": "Alice", "predicate": "works_at", "object": "Google", "valid_from": "2023-06"}
    for params in ({"facts": [late, {**late, "subject": "Dave"}], "fail": True}, {"retract": fid, "fail": True},
                   {"alias": "Ali", "fail": True}):
        with pytest.raises(errors.Conflict):
            rt.call("kgprobe.write_then_read", params)
        assert counts(rt) == before
        assert [f.object for f in rt.call("kg.facts", {"subject": "Alice"}).facts] == ["Meta"]
        assert rt.call("kg.facts", {"subject": "Dave"}).facts == []
        assert rt.call("kg.facts", {"subject": "Ali"}).facts == []
        assert_cache_matches_store(rt)
    with pytest.raises(errors.InvalidParams):  # bad input mid-batch: nothing written, nothing cached
        rt.call("kg.assert_facts", {"facts": [late, {**late, "valid_to": "2001"}]})
    assert counts(rt) == before
    assert_cache_matches_store(rt)
    assert_reads_match_sql(rt, clock, ["Alice", "Dave"])


def test_a_transaction_reads_its_own_kg_writes_and_the_cache_follows_its_commit(rt, clock):
    rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta", "valid_from": "2020"})
    clock.tick()
    late = {"subject": "Alice", "predicate": "works_at", "object": "Google", "valid_from": "2023-06"}
    seen = rt.call("kgprobe.write_then_read", {"facts": [late]}).seen
    assert seen == ["Google", "Second"]  # the uncommitted writes were visible inside the transaction
    assert [f.object for f in rt.call("kg.facts", {"subject": "Alice"}).facts] == ["Second"]
    assert_cache_matches_store(rt)
    fid = rt.call("kg.facts", {"subject": "Alice"}).facts[0].fact_id
    clock.tick()
    assert rt.call("kgprobe.write_then_read", {"retract": fid, "alias": "Ali"}).seen == ["Google"]
    assert_cache_matches_store(rt)
    assert_reads_match_sql(rt, clock, ["Alice", "Ali"])


def test_a_failed_kg_write_whose_caller_commits_is_reloaded_from_the_store(rt, clock):
    rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta", "valid_from": "2020"})
    clock.tick()
    late = {"subject": "Alice", "predicate": "works_at", "object": "Google", "valid_from": "2023-06"}
    rt.call("kgprobe.write_then_read", {"facts": [late], "steal_alias": "Alice"})
    # the half-done upsert_entity committed "Newcomer" without running its commit hook: the next use reloads
    assert rt.call("kg.facts", {"subject": "Newcomer"}).facts == []
    assert_cache_matches_store(rt)
    assert "newcomer" in _cache(rt).keys
    rt.call("kg.assert_fact", {"subject": "Newcomer", "predicate": "works_at", "object": "IBM"})
    assert_cache_matches_store(rt)
    assert_reads_match_sql(rt, clock, ["Alice", "Newcomer"])


def test_the_cache_is_rebuilt_from_the_store_after_reopen(tmp_path):
    clock = Clock()
    path = str(tmp_path / "kg.duckdb")
    rt = open_test_runtime(kg_pack, path=path, clock=clock)
    rt.call("kg.define_predicate", {"name": "speaks", "cardinality": "many"})
    rt.call("kg.assert_facts", {"facts": [
        {"subject": "Alice", "predicate": "works_at", "object": "Meta", "valid_from": "2020"},
        {"subject": "Alice", "predicate": "works_at", "object": "Google", "valid_from": "2023-06"},
        {"subject": "Alice", "predicate": "speaks", "object": "French", "literal": True}]})
    before = rt.call("kg.facts", {"subject": "Alice", "include_superseded": True}).facts
    rt.close()
    rt = open_test_runtime(kg_pack, path=path, clock=clock)
    try:
        assert _state(rt).facts.namespaces == {}  # nothing survives the process but the file
        assert rt.call("kg.facts", {"subject": "Alice", "include_superseded": True}).facts == before
        clock.tick()
        rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Startup",
                                   "valid_from": "2021-06"})
        rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "speaks", "object": "German", "literal": True})
        assert_cache_matches_store(rt)
        assert_reads_match_sql(rt, clock, ["Alice"])
    finally:
        rt.close()


def test_namespaces_have_separate_caches(rt, clock):
    for ns, org in (("a", "Meta"), ("b", "Google")):
        rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": org, "valid_from": "2020"},
                namespace=ns)
    with pytest.raises(errors.Conflict):
        rt.call("kgprobe.write_then_read", {"facts": [{"subject": "Alice", "predicate": "works_at",
                                                       "object": "IBM", "valid_from": "2022"}], "fail": True},
                namespace="a")
    assert [f.object for f in rt.call("kg.facts", {"subject": "Alice"}, namespace="a").facts] == ["Meta"]
    assert [f.object for f in rt.call("kg.facts", {"subject": "Alice"}, namespace="b").facts] == ["Google"]
    assert rt.call("kg.facts", {"subject": "Alice"}, namespace="c").facts == []
    for ns in ("a", "b", "c"):
        assert_cache_matches_store(rt, ns)
    assert _cache(rt, "c").subjects == {}
    assert_reads_match_sql(rt, clock, ["Alice"], ns="a")


def test_a_cache_built_from_a_stored_namespace_follows_later_writes(tmp_path):
    """The columnar build (reopen) holds exactly the stored rows, and writes, retractions, rollbacks and settled
    failures over it (subjects it holds, subjects it does not) keep it equal to the store."""
    clock = Clock()
    path = str(tmp_path / "kg.duckdb")
    subjects = ["Alice", "Bob", "Carol", "Dave"]
    rt = open_test_runtime(kg_pack, probe, path=path, clock=clock)
    try:
        rt.call("kg.define_predicate", {"name": "speaks", "cardinality": "many"})
        for ns, seed in (("default", 3), ("other", 4)):
            random_writes(rt, clock, random.Random(seed), 40, subjects, ns)
    finally:
        rt.close()
    rt = open_test_runtime(kg_pack, probe, path=path, clock=clock)
    try:
        assert rt.call("kg.facts", {"subject": "Nobody"}).facts == []  # the first use builds from the store
        c = _cache(rt)
        assert c.subjects.base is not None and not c.subjects.over  # built as columns; nothing materialised
        assert_cache_matches_store(rt)
        assert_reads_match_sql(rt, clock, subjects)
        assert not c.subjects.over  # reads materialise rows without keeping them
        # retract every current fact of one stored subject: the columns still hold it, the cache must not
        for f in rt.call("kg.facts", {"subject": "Dave", "include_superseded": True}).facts:
            rt.call("kg.retract_fact", {"fact_id": f.fact_id})
        assert rt.call("kg.facts", {"subject": "Dave", "include_superseded": True}).facts == []
        assert_cache_matches_store(rt)
        # a write of one predicate keeps the subject's other (stored) predicates
        clock.tick()
        rt.call("kg.assert_fact", {"subject": "Carol", "predicate": "speaks", "object": "Welsh", "literal": True})
        assert_cache_matches_store(rt)
        # rolled back, and failed-but-committed, calls over stored subjects are reloaded from the store
        late = {"subject": "Bob", "predicate": "works_at", "object": "Acme", "valid_from": "2011"}
        with pytest.raises(errors.Conflict):
            rt.call("kgprobe.write_then_read", {"facts": [late, {**late, "subject": "Alice"}], "fail": True})
        assert "Acme" not in [f.object for f in rt.call("kg.facts", {"subject": "Bob"}).facts]  # settles the mark
        assert_cache_matches_store(rt)
        rt.call("kgprobe.write_then_read", {"facts": [late], "subject": "Bob", "steal_alias": "Carol"})
        assert rt.call("kg.facts", {"subject": "Newcomer"}).facts == []
        assert_cache_matches_store(rt)
        random_writes(rt, clock, random.Random(5), 30, [*subjects, "Erin"])
        random_writes(rt, clock, random.Random(6), 10, subjects, "other")
        assert_reads_match_sql(rt, clock, [*subjects, "Erin"])
        assert_reads_match_sql(rt, clock, subjects, ns="other")
    finally:
        rt.close()


def test_a_batch_gives_the_cycle_collector_back_as_it_found_it(rt):
    """kg.assert_facts is a bulk verb: the runtime pauses Python's GC for its batch (runtime/collector.py, ADR 0029);
    it must restore the caller's setting (on, or off if the caller turned it off), and a refused batch leaves it on."""
    fact = {"subject": "Alice", "predicate": "works_at", "object": "Meta", "valid_from": "2020"}
    assert gc.isenabled()
    rt.call("kg.assert_facts", {"facts": [fact]})
    assert gc.isenabled()
    with pytest.raises(errors.InvalidParams):
        rt.call("kg.assert_facts", {"facts": [{**fact, "valid_to": "2001"}]})
    assert gc.isenabled()
    gc.disable()
    try:
        rt.call("kg.assert_facts", {"facts": [{**fact, "object": "IBM"}]})
        assert not gc.isenabled()
    finally:
        gc.enable()


@probe.verb("alias_then_detect", act=Act.COMMISSIVE)
def alias_then_detect(params: ProbeParams, ctx: Context) -> ProbeResult:
    """Add an alias (and a fact whose new object is an entity), detect in the same transaction, maybe fail."""
    ctx.call("kg.upsert_entity", {"name": params.subject, "kind": "person", "aliases": [params.alias]})
    if params.facts:
        ctx.call("kg.assert_facts", {"facts": params.facts})
    found = ctx.call("kg.detect_entities", {"text": f"{params.alias} at Umbrella"}).matches
    seen = [f"{m.name}/{m.kind}" for m in found]
    if params.fail:
        raise errors.Conflict("the caller changed its mind")
    return ProbeResult(seen=seen)


def _detected(rt, text: str, ns: str = "default") -> list[str]:
    return [f"{m.name}/{m.kind}" for m in rt.call("kg.detect_entities", {"text": text}, namespace=ns).matches]


def test_the_entity_detectors_follow_commits_and_never_keep_a_rolled_back_alias(rt):
    rt.call("kg.upsert_entity", {"name": "Alice", "kind": "thing"})
    assert _detected(rt, "Ali and Alice") == ["Alice/thing"]  # builds and keeps the namespace's detector
    kept = _state(rt).detectors.built["default"]
    made = {"alias": "Ali", "facts": [{"subject": "Alice", "predicate": "works_at", "object": "Umbrella"}]}
    # inside the transaction the uncommitted alias, kind and entity are seen (SQL); after the rollback they are not
    with pytest.raises(errors.Conflict):
        rt.call("kgprobe.alias_then_detect", {**made, "fail": True})
    assert _state(rt).detectors.built["default"] is kept
    assert _detected(rt, "Ali at Umbrella") == []
    assert_mirrors_equal_a_fresh_load(rt)
    assert rt.call("kgprobe.alias_then_detect", made).seen == ["Alice/person", "Umbrella/concept"]
    assert _detected(rt, "Ali at Umbrella") == ["Alice/person", "Umbrella/concept"]  # the commit reached the mirror
    assert_mirrors_equal_a_fresh_load(rt)
    assert _detected(rt, "Ali", ns="other") == []  # namespaces apart
    # a caller that swallows kg's refusal and commits: the runtime reloads the mirrors from the store
    rt.call("kgprobe.write_then_read", {"steal_alias": "Ali"})
    assert _detected(rt, "Newcomer met Ali") == ["Newcomer/concept", "Alice/person"]
    assert_mirrors_equal_a_fresh_load(rt)
    # ... and before that commit, the rest of its transaction reads and writes kg through SQL
    assert rt.call("kgprobe.swallow_then_write", {"steal_alias": "Ali"}).seen == ["Umbrella"]
    assert [f.object for f in rt.call("kg.facts", {"subject": "Latecomer"}).facts] == ["Umbrella"]
    assert_mirrors_equal_a_fresh_load(rt)

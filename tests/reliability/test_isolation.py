"""Namespace isolation (issue 9): a property test over the whole catalog.

Each example writes random data to three namespaces: the SAME sentences, entity names, predicates, idempotency
keys and belief keys in each, so a missing namespace filter would surface (each note also carries its
namespace's marker word, so leaked content is recognisable). Ids come from global sequences, which the test
starts at a distinct base per kind (notes 10 000+, entities 20 000+, facts 30 000+, …), so every integer in
those ranges names exactly one owner. Then it calls random public verbs (recall, walk, explain, facts,
graph_recall, edges, history, centrality, …: whatever the catalog holds, commissive ones too) in a random
namespace, with params drawn from every namespace's ids, names and recall ids, and checks that:

* no result carries another namespace's data: no ``namespace`` field but the caller's, no id owned by another
  namespace (bare or inside 'm:/e:/f:' node ids) unless the caller passed it in (``missing: [id]``), no other
  namespace's marker word or recall id;
* no call changes another namespace's rows (per-namespace checksums of every table with a namespace column).
"""
import os
import re

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rel_support import (HASHING, ISOLATED_ENV, NAMES, PREDICATES, QUERIES, SCOPES, TAGS, default_hints,
                         explain_failure, index_problems, namespace_checksums, params_strategy)
from palimpsest_memory.runtime import Runtime, errors
from palimpsest_memory.runtime.engine import load_catalog

NAMESPACES = ["ns-a", "ns-b", "ns-c"]
MARK = {ns: f"zmark{ns[-1]}q" for ns in NAMESPACES}
BASES = {"memory.note_ids": 10_000, "kg.entity_seq": 20_000, "kg.fact_seq": 30_000, "kg.version_seq": 40_000,
         "kg.edge_seq": 50_000, "brain.event_seq": 60_000}
ID_RANGE = (10_000, 70_000)
CATALOG, _ = load_catalog(env=ISOLATED_ENV)
VERBS = [v.full_name for v in CATALOG.verbs()]
NODE = re.compile(r"\b[emf]:(\d+)\b")
EXAMPLES = int(os.environ.get("PALIMPSEST_ISOLATION_EXAMPLES", "6"))
PROBES = 25  # calls per example
CLOCK = lambda: __import__("datetime").datetime(2026, 3, 9, 12, 0, 0)  # noqa: E731


def fresh_runtime() -> Runtime:
    rt = Runtime.open(":memory:", config=HASHING, env=ISOLATED_ENV, clock=CLOCK)
    for seq, base in BASES.items():
        rt.store.con.execute(f"DROP SEQUENCE {seq}; CREATE SEQUENCE {seq} START {base}")
    return rt


def owners(rt: Runtime) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    """(kind, id) → namespace for every id of every kind, and recall id → namespace. Kinds have their own
    sequences, so one number can be a note of one namespace and an entity of another: the kind is in the key."""
    rt.call("brain.flush_serves", {}, internal=True)  # the brain keeps recent serves in memory (ADR 0010)
    q = rt.store.con.execute
    ids: dict[tuple[str, int], str] = {}
    for kind, sql in (("note", "SELECT id, namespace FROM memory.notes"),
                      ("entity", "SELECT id, namespace FROM kg.entities"),
                      ("fact", "SELECT DISTINCT fact_id, namespace FROM kg.facts"),
                      ("version", "SELECT version_id, namespace FROM kg.facts"),
                      ("edge", "SELECT id, namespace FROM kg.edges"), ("event", "SELECT seq, namespace FROM brain.events")):
        ids.update({(kind, i): ns for i, ns in q(sql).fetchall()})
    return ids, dict(q("SELECT recall_id, namespace FROM brain.serves").fetchall())


def by_number(ids: dict[tuple[str, int], str]) -> dict[int, str]:
    """number → a namespace owning an id with that number: what a bare number in an answer may be an id of."""
    return {i: ns for (_, i), ns in ids.items()}


def _params_values(params, ints: set, strs: set) -> None:
    if isinstance(params, dict):
        for v in params.values():
            _params_values(v, ints, strs)
    elif isinstance(params, list):
        for v in params:
            _params_values(v, ints, strs)
    elif isinstance(params, bool):
        pass
    elif isinstance(params, int):
        ints.add(params)
    elif isinstance(params, str):
        strs.add(params)
        ints.update(int(m) for m in NODE.findall(params))


def leaks(value, ns: str, id_owner: dict, recall_owner: dict, given_ints: set, given_strs: set, path="") -> list:
    out = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "namespace" and isinstance(v, str) and v != ns:
                out.append(f"{path}.namespace = {v!r}")
            out += leaks(v, ns, id_owner, recall_owner, given_ints, given_strs, f"{path}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += leaks(v, ns, id_owner, recall_owner, given_ints, given_strs, f"{path}[{i}]")
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int):
        owner = id_owner.get(value)
        if owner not in (None, ns) and value not in given_ints:
            out.append(f"{path} = {value}, an id of {owner}")
    elif isinstance(value, str) and value not in given_strs:
        for other, mark in MARK.items():
            if other != ns and mark in value:
                out.append(f"{path} holds {other}'s data: {value[:80]!r}")
        if recall_owner.get(value) not in (None, ns):
            out.append(f"{path} = recall id of {recall_owner[value]}")
        for m in NODE.findall(value):
            owner = id_owner.get(int(m))
            if owner not in (None, ns) and int(m) not in given_ints:
                out.append(f"{path} = {value!r} names an id of {owner}")
    return out


def others(checksums: dict, ns: str) -> dict:
    return {k: v for k, v in checksums.items() if k[1] != ns}


@st.composite
def writes(draw):
    """Per namespace: notes (same sentences, same keys, own marker), facts, edges, a belief, a recall."""
    plan = {}
    for ns in NAMESPACES:
        n = draw(st.integers(2, 5))
        # distinct sentences: a text said again is counted on its first note (ADR 0039), and the links need notes
        sentences = draw(st.lists(st.sampled_from(QUERIES), min_size=n, max_size=n, unique=True))
        notes = [{"content": f"{s} {MARK[ns]}", "key": f"k{i}", "scope": draw(st.sampled_from(SCOPES)),
                  "thread": draw(st.sampled_from(["t1", "t2"])), "tags": [draw(st.sampled_from(TAGS))]}
                 for i, s in enumerate(sentences)]
        facts = [{"subject": draw(st.sampled_from(NAMES)), "predicate": draw(st.sampled_from(PREDICATES)),
                  "object": draw(st.sampled_from(NAMES))} for _ in range(draw(st.integers(1, 4)))]
        facts = [f for f in facts if f["subject"] != f["object"]] or [
            {"subject": "Alice", "predicate": "works_at", "object": "Orion"}]
        plan[ns] = {"notes": notes, "facts": facts, "links": draw(st.integers(1, 3)),
                    "query": draw(st.sampled_from(QUERIES))}
    return plan


def apply_writes(rt: Runtime, plan: dict) -> None:
    for ns, p in plan.items():
        ids = rt.call("memory.remember_many", {"notes": p["notes"]}, namespace=ns).ids
        rt.call("kg.assert_facts", {"facts": p["facts"]}, namespace=ns)
        rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project", "aliases": ["Project Orion"]}, namespace=ns)
        links = [{"source_id": ids[i], "target_id": ids[i + 1], "relation": "supports"}
                 for i in range(min(p["links"], len(ids) - 1))]
        rt.call("memory.link_many", {"links": links}, namespace=ns)
        rt.call("kg.link", {"src": f"m:{ids[0]}", "dst": f"m:{ids[-1]}", "relation": "related_to"}, namespace=ns)
        rt.call("memory.upsert_belief", {"fact_key": "orion.db", "content": f"Orion uses DuckDB {MARK[ns]}"},
                namespace=ns)
        rt.call("brain.profile", {"name": "p1"}, namespace=ns)
        rt.call("memory.recall", {"query": p["query"]}, namespace=ns)
        rt.call("memory.centrality", {}, namespace=ns)
        rt.call("kg.centrality", {}, namespace=ns)


def probe_hints(rt: Runtime):
    rt.call("brain.flush_serves", {}, internal=True)  # so the probes draw on every recall id, not just flushed ones
    q = rt.store.con.execute
    return default_hints(
        [r[0] for r in q("SELECT id FROM memory.notes").fetchall()],
        [r[0] for r in q("SELECT recall_id FROM brain.serves").fetchall()],
        entity_ids=[r[0] for r in q("SELECT id FROM kg.entities").fetchall()],
        fact_ids=[r[0] for r in q("SELECT fact_id FROM kg.facts").fetchall()],
        edge_ids=[r[0] for r in q("SELECT id FROM kg.edges").fetchall()],
        texts=QUERIES + NAMES, namespaces=[None])


# no shrink phase: an example is a whole store and 30 calls, and shrinking one costs minutes; a failure still
# prints the drawn plan, verb, namespace and params
@settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck),
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(plan=writes(), data=st.data())
def test_no_verb_returns_or_touches_another_namespaces_data(plan, data):
    rt = fresh_runtime()
    try:
        apply_writes(rt, plan)
        hints = probe_hints(rt)
        sums = namespace_checksums(rt.store.con)
        id_owner, recall_owner = owners(rt)
        strategies: dict = {}
        for _ in range(PROBES):
            verb = data.draw(st.sampled_from(VERBS), label="verb")
            ns = data.draw(st.sampled_from(NAMESPACES), label="namespace")
            spec = rt.catalog.resolve(verb, caller_pack=None, internal=False)
            if verb not in strategies:
                strategies[verb] = params_strategy(spec, hints, invalid_share=0.0)
            _, params = data.draw(strategies[verb], label=f"{verb} params")
            params.pop("namespace", None)  # a params namespace overrides the call's: the call's is the one probed
            try:
                result = rt.call(verb, params, namespace=ns)
            except errors.PalimpsestError:
                result = None
            except Exception as exc:  # only a pinned known issue may escape untyped (test_fuzz checks the rest)
                assert explain_failure(verb, exc), f"{verb} raised {type(exc).__name__}: {exc}"
                result = None
            after = namespace_checksums(rt.store.con)
            assert others(after, ns) == others(sums, ns), f"{verb} in {ns} changed another namespace"
            if after != sums or (result is not None and spec.writes):
                new_owner, recall_owner = owners(rt)
                # owners() flushes the brain's pending serves, of every namespace: the next baseline is after it
                sums = namespace_checksums(rt.store.con)
                # an id that still exists keeps its namespace (a forget may remove ids; none may move)
                assert all(new_owner.get(k, v) == v for k, v in id_owner.items()), f"{verb} moved an id"
                id_owner = new_owner
            if result is None:
                continue
            given_ints, given_strs = set(), set()
            _params_values(params, given_ints, given_strs)
            found = leaks(result.model_dump(), ns, by_number(id_owner), recall_owner, given_ints, given_strs)
            assert not found, f"{verb} in {ns} with {params} leaked: {found[:5]}"
        # kg.link / kg.unlink on 'm:' nodes bypass the memory graph (test_findings.py), so only the note indexes
        assert not index_problems(rt, graph_edges=False)
    finally:
        rt.close()


def test_the_probe_sees_the_other_namespaces(make_pal_runtime):
    """The oracle would catch a leak: the same call in the owner's namespace returns the data it must hide."""
    rt = fresh_runtime()
    try:
        apply_writes(rt, {ns: {"notes": [{"content": f"why did we choose Postgres for Orion {MARK[ns]}", "key": "k0"},
                                         {"content": f"Orion hiring plan {MARK[ns]}", "key": "k1"}],
                               "facts": [{"subject": "Alice", "predicate": "works_at", "object": "Orion"}],
                               "links": 1, "query": "Orion"} for ns in NAMESPACES})
        id_owner, recall_owner = owners(rt)
        res = rt.call("memory.recall", {"query": "why did we choose Postgres for Orion"}, namespace="ns-a")
        numbers = by_number(id_owner)
        assert res.results and not leaks(res.model_dump(), "ns-a", numbers, recall_owner, set(), set())
        assert leaks(res.model_dump(), "ns-b", numbers, recall_owner, set(), set())  # as seen from ns-b: a leak
        # same key, same sentence in three namespaces: three notes, not one replayed
        assert rt.store.con.execute("SELECT count(DISTINCT id) FROM memory.notes WHERE key = 'k0'").fetchone()[0] == 3
        b_note = rt.store.con.execute("SELECT id FROM memory.notes WHERE namespace = 'ns-b' LIMIT 1").fetchone()[0]
        got = rt.call("memory.get", {"ids": [b_note]}, namespace="ns-a")
        assert got.notes == [] and got.missing == [b_note]
    finally:
        rt.close()

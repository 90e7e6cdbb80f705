"""The memory pack's mirrors (index, graph, embedders) on the runtime's seam (ADR 0015, ADR 0012).

A mirror kept up to date by committed changes must equal one loaded afresh from the store; a rolled-back call
changes no mirror; the graph follows every committed kg link or unlink of note edges, whoever made it, through
the declared ``kg.edges_changed`` event, and loads through ``kg.list_edges``.
"""
from __future__ import annotations

import random
from typing import Any

import pytest
from store_support import HASHING

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.testing import open_test_runtime
from index_support import held_index


def fresh_digests(rt: Any) -> dict[str, Any]:
    """Each memory mirror's digest after a fresh ``load`` from the store, beside the live state."""
    out = {}
    for name, mirror in ((n, getattr(rt.pack_state("memory"), n)) for n in ("embedders", "index", "graph")):
        fresh = type(mirror)()
        rt.followers.load("memory", fresh)
        out[name] = fresh.digest()
    return out


def live_digests(rt: Any) -> dict[str, Any]:
    st = rt.pack_state("memory")
    return {"embedders": st.embedders.digest(), "index": st.index.digest(), "graph": st.graph.digest()}


def note(rt: Any, text: str, ns: str = "default", **kw: Any) -> int:
    return rt.call("memory.remember", {"content": text, "namespace": ns, **kw}).note.id


def graph_edges(rt: Any) -> dict[int, tuple]:
    return dict(rt.pack_state("memory").graph.edges)


def test_mirrors_equal_a_fresh_load_after_random_mixed_writes(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    rng = random.Random(13)
    rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"})
    notes: dict[str, list[int]] = {"default": [], "other": []}
    for ns in notes:  # a few notes in each namespace to start from
        notes[ns] += rt.call("memory.remember_many", {"namespace": ns, "notes": [
            {"content": f"note {i} about Orion and topic {i % 3}", "thread": f"t{i % 2}"} for i in range(6)]}).ids
    relations = ["supports", "contradicts", "related_to", "triggered_by", "supersedes"]
    for step in range(120):
        ns = rng.choice(list(notes))
        ids = notes[ns]
        op = rng.randrange(9)
        try:
            if op == 0:
                ids.append(note(rt, f"step {step} mentions Orion", ns, thread=rng.choice(["t0", "t1", None])))
            elif op == 1:
                a, b = rng.sample(ids, 2)
                rt.call("memory.link", {"source_id": a, "target_id": b, "relation": rng.choice(relations),
                                        "weight": rng.choice([0.5, 1.0, 2.0]), "namespace": ns})
            elif op == 2:  # a bare kg link between two notes (not through memory.link), sometimes an update
                a, b = rng.sample(ids, 2)
                rt.call("kg.link", {"src": f"m:{a}", "dst": f"m:{b}", "relation": rng.choice(relations[:4]),
                                    "weight": rng.choice([0.25, 3.0]), "namespace": ns})
            elif op == 3:
                pairs = [rng.sample(ids, 2) for _ in range(3)]
                rt.call("kg.link_many", {"namespace": ns, "links": [
                    {"src": f"m:{a}", "dst": f"m:{b}", "relation": "related_to", "weight": rng.random()}
                    for a, b in pairs]})
            elif op == 4:
                edges = [e for e, v in graph_edges(rt).items() if v[0] == ns]
                if edges:
                    verb = rng.choice(["memory.unlink", "kg.unlink"])
                    rt.call(verb, {"edge_id": rng.choice(edges), "namespace": ns})
            elif op == 5:
                rt.call("memory.archive", {"ids": [rng.choice(ids)], "namespace": ns})
            elif op == 6:
                rt.call("memory.centrality", {"namespace": ns})
            elif op == 7:
                rt.call("memory.consolidate", {"content": f"summary {step}", "source_ids": rng.sample(ids, 2),
                                               "namespace": ns})
            else:
                rt.call("memory.recall", {"query": "Orion topic", "namespace": ns})
        except errors.PalimpsestError:
            pass  # e.g. a supersession conflict or cycle: refused and rolled back, which is part of the mix
    rt.call("memory.reembed", {})
    assert rt.pack_state("memory").graph.edges, "the mix made note edges"
    assert live_digests(rt) == fresh_digests(rt)
    for ns in notes:  # token lists are cached for one batch only (bags re-tokenise a neighbour when they need it)
        assert not rt.pack_state("memory").index.of(ns).expander._tokens


class WriteThenFailParams(Params):
    keep: int


class WriteThenFailResult(Params):
    ok: bool


failing = Pack("failing", version="0.1.0", requires=["memory", "kg"])


@failing.verb("write_then_fail", act=Act.COMMISSIVE)
def write_then_fail(params: WriteThenFailParams, ctx: Context) -> WriteThenFailResult:
    """Every kind of memory write (and a bare kg link between notes), then a failure: all of it rolls back."""
    a = ctx.call("memory.remember", {"content": "doomed note"}).note.id
    b = ctx.call("memory.remember", {"content": "another doomed note"}).note.id
    ctx.call("memory.link", {"source_id": a, "target_id": b, "relation": "supersedes"})
    ctx.call("kg.link", {"src": f"m:{b}", "dst": f"m:{params.keep}", "relation": "supports"})
    ctx.call("memory.archive", {"ids": [params.keep]})
    ctx.call("memory.centrality", {})
    ctx.call("memory.reembed", {})
    raise errors.Conflict("changed my mind")


def test_a_rolled_back_call_changes_no_mirror(make_pal_runtime):
    rt = make_pal_runtime(failing, config=HASHING, discover=True)
    keep = note(rt, "a note that stays")
    other = note(rt, "a second note that stays")
    rt.call("memory.link", {"source_id": keep, "target_id": other, "relation": "supports"})
    before = live_digests(rt)
    with pytest.raises(errors.Conflict):
        rt.call("failing.write_then_fail", {"keep": keep})
    assert live_digests(rt) == before
    assert live_digests(rt) == fresh_digests(rt)


def test_a_bare_kg_link_reaches_the_graph_once_and_an_update_moves_its_weight(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    a, b = note(rt, "Orion uses Postgres"), note(rt, "Postgres is strict")
    first = rt.call("kg.link", {"src": f"m:{a}", "dst": f"m:{b}", "relation": "supports", "weight": 2.0}).edge
    g = rt.pack_state("memory").graph
    assert g.edges == {first.id: ("default", a, b, "supports", 2.0)}
    again = rt.call("memory.link", {"source_id": a, "target_id": b, "relation": "supports", "weight": 0.5})
    assert again.edge.id == first.id and not again.created
    assert g.edges == {first.id: ("default", a, b, "supports", 0.5)}  # the weight moved, no second edge
    assert g.incident("default", a) == [first.id] and g.incident("default", b) == [first.id]  # added once
    rt.call("kg.link_many", {"links": [{"src": f"m:{a}", "dst": f"m:{b}", "relation": "supports", "weight": 4.0}]})
    assert g.edges[first.id][4] == 4.0 and g.incident("default", a) == [first.id]
    rt.call("kg.unlink", {"edge_id": first.id})
    assert g.edges == {} and g.incident("default", a) == []


def test_the_graph_holds_only_note_edges_of_a_note_relation(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    ent = rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"}).entity.id
    a, b = note(rt, "Orion ships today"), note(rt, "another note")  # a mentions Orion: an m: → e: edge
    rt.call("kg.link", {"src": f"m:{a}", "dst": f"m:{b}", "relation": "mentions"})
    rt.call("kg.link", {"src": f"m:{b}", "dst": f"e:{ent}", "relation": "supports"})
    assert rt.pack_state("memory").graph.edges == {}
    assert live_digests(rt) == fresh_digests(rt)


def test_the_graph_reloads_through_kg_list_edges_in_every_namespace(tmp_path):
    path = str(tmp_path / "store.duckdb")
    with open_test_runtime(config={**HASHING, "packs": {**HASHING["packs"], "kg": {"max_query_limit": 2}}},
                           path=path) as rt:
        for ns in ("default", "work"):
            ids = [note(rt, f"{ns} note {i}", ns) for i in range(5)]
            for x, y in zip(ids, ids[1:]):  # more edges than one kg.list_edges page holds
                rt.call("memory.link", {"source_id": x, "target_id": y, "relation": "related_to", "namespace": ns})
        rt.call("memory.centrality", {"namespace": "work"})
        before = rt.pack_state("memory").graph.digest()
    with open_test_runtime(config=HASHING, path=path) as rt:
        rt.hold("default")
        rt.hold("work")  # held in the order the writer's first calls held them
        g = rt.pack_state("memory").graph
        assert g.digest() == before
        assert {v[0] for v in g.edges.values()} == {"default", "work"} and len(g.edges) == 8
        assert g.centrality["work"]


def test_the_index_snapshot_is_written_by_the_mirror_at_close(tmp_path):
    path = str(tmp_path / "store.duckdb")
    cfg = {"packs": {"memory": {"embedder": "hashing", "index_snapshot_min_notes": 1}}}
    with open_test_runtime(config=cfg, path=path) as rt:
        note(rt, "snapshotted at close")
        assert held_index(rt).dirty
    with open_test_runtime(config=cfg, path=path) as rt:
        assert not held_index(rt).dirty  # restored from the snapshot the close wrote
        assert rt.call("memory.recall", {"query": "snapshotted"}).results

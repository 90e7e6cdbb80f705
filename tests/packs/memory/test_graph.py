"""The memory graph layer: memory.link / link_many / unlink / edges, supersession through edges, the semantic walk
(hand-built graph, exact scores), recall's expand_graph step, centrality, namespaces and typed errors (issue 5)."""
import math
import re
from datetime import timedelta

import numpy as np
import pytest

from palimpsest_memory.packs.kg.pack import pack as kg_pack
from palimpsest_memory.packs.memory.mirrors.embedder_registry import EmbedderSpec
from palimpsest_memory.packs.memory.pack import pack as memory_pack
from palimpsest_memory.runtime import Pack, errors, hookimpl
from palimpsest_memory.runtime.testing import open_test_runtime
from store_support import HASHING, T0, snapshot


# -- an embedder whose vectors the test chooses: a note's vector is picked by a key word in its content ----------
def unit(cos: float, angle: float) -> list[float]:
    """A unit vector whose cosine with the query (1, 0, 0) is exactly ``cos``."""
    s = math.sqrt(1 - cos * cos)
    return [cos, s * math.cos(angle), s * math.sin(angle)]


TABLE = {"qtopic": [1.0, 0.0, 0.0],
         "akey": unit(0.95, 0.1), "bkey": unit(0.80, 1.0), "ckey": unit(0.50, 2.0), "dkey": unit(0.90, 3.0),
         "ekey": unit(0.70, 4.0), "fkey": unit(0.75, 5.0), "gkey": unit(0.995, 0.5)}
COS = {k: v[0] for k, v in TABLE.items()}


class TableEmbedder:
    name, dim, multilingual = "table", 3, False

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for r, text in enumerate(texts):
            words = set(re.findall(r"[a-z]+", text.lower()))
            for key, vec in TABLE.items():
                if key in words:
                    out[r] = vec
                    break
        return out


class TableHooks:
    @hookimpl
    def register_embedders(self):
        return [EmbedderSpec("table", TableEmbedder, note="test vectors")]


table_pack = Pack("graphtable", version="0.1.0")
table_pack.add_hooks(TableHooks())


def table_runtime(extra: dict | None = None, **kw):
    memory = {"embedder": "table", **(extra or {})}
    return open_test_runtime(kg_pack, memory_pack, table_pack, config={"packs": {"memory": memory}}, **kw)


def remember(rt, content: str, **kw) -> int:
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def link(rt, src: int, dst: int, relation: str, **kw):
    return rt.call("memory.link", {"source_id": src, "target_id": dst, "relation": relation, **kw})


def recall_ids(rt, query: str, **kw) -> list[int]:
    return [h.note.id for h in rt.call("memory.recall", {"query": query, "limit": 20, **kw}).results]


# -- link / edges / unlink -------------------------------------------------------------------------------------
def test_link_edges_and_unlink_round_trip(rt):
    a, b, c = (remember(rt, t) for t in ("Orion uses Postgres", "Postgres has strict transactions", "Orion ships"))
    first = link(rt, a, b, "supports", weight=2.0)
    assert first.created and first.edge.source_id == a and first.edge.target_id == b and first.edge.weight == 2.0
    again = link(rt, a, b, "supports", weight=0.5)
    assert not again.created and again.edge.id == first.edge.id and again.edge.weight == 0.5
    second = link(rt, c, a, "related_to")
    listed = rt.call("memory.edges", {"memory_id": a}).edges
    assert [(e.id, e.source_id, e.target_id, e.relation) for e in listed] == [
        (first.edge.id, a, b, "supports"), (second.edge.id, c, a, "related_to")]
    assert [e.id for e in rt.call("memory.edges", {"memory_id": a, "direction": "out"}).edges] == [first.edge.id]
    assert [e.id for e in rt.call("memory.edges", {"memory_id": a, "relations": ["related_to"]}).edges] == \
        [second.edge.id]
    # the kg sees the same edge between m: nodes
    kg_edges = rt.call("kg.edges", {"node_id": f"m:{a}", "direction": "out", "relations": ["supports"]}).edges
    assert [(e.src, e.dst) for e in kg_edges] == [(f"m:{a}", f"m:{b}")]
    assert rt.call("memory.unlink", {"edge_id": first.edge.id}).removed == first.edge.id
    assert [e.id for e in rt.call("memory.edges", {"memory_id": a}).edges] == [second.edge.id]
    history = rt.call("memory.edges", {"memory_id": a, "include_removed": True}).edges
    assert [e.id for e in history if e.removed_at is not None] == [first.edge.id]
    with pytest.raises(errors.NotFound):
        rt.call("memory.unlink", {"edge_id": first.edge.id})


def test_link_many_links_in_one_transaction(rt):
    a, b, c = (remember(rt, t) for t in ("alpha note", "beta note", "gamma note"))
    res = rt.call("memory.link_many", {"links": [{"source_id": a, "target_id": b, "relation": "supports"},
                                                 {"source_id": c, "target_id": b, "relation": "supersedes"}]})
    assert res.created == 2 and len(res.edge_ids) == 2 and res.superseded == [b]
    assert {e.id for e in rt.call("memory.edges", {"memory_id": b}).edges} == set(res.edge_ids)


@pytest.mark.parametrize("case", ["self_loop", "unknown_relation", "mentions", "missing_target", "missing_source",
                                  "bad_weight", "extra_field"])
def test_bad_links_are_typed_errors_that_write_nothing(rt, case):
    a, b = remember(rt, "alpha note"), remember(rt, "beta note")
    params = {"source_id": a, "target_id": b, "relation": "supports"}
    expected = errors.InvalidParams
    if case == "self_loop":
        params["target_id"] = a
    elif case == "unknown_relation":
        params["relation"] = "likes"
    elif case == "mentions":  # an entity relation, not a memory relation
        params["relation"] = "mentions"
    elif case == "missing_target":
        params["target_id"], expected = 9999, errors.NotFound
    elif case == "missing_source":
        params["source_id"], expected = 9999, errors.NotFound
    elif case == "bad_weight":
        params["weight"] = -1
    else:
        params["colour"] = "red"
    before = snapshot(rt)
    with pytest.raises(expected) as info:
        rt.call("memory.link", params)
    assert info.value.verb == "memory.link"
    assert snapshot(rt) == before


def test_a_bad_link_in_a_batch_writes_nothing_and_is_never_walked(rt):
    a, b = remember(rt, "alpha note"), remember(rt, "beta note")
    before = snapshot(rt)
    with pytest.raises(errors.NotFound) as info:
        rt.call("memory.link_many", {"links": [{"source_id": a, "target_id": b, "relation": "supports"},
                                               {"source_id": a, "target_id": 777, "relation": "supports"}]})
    assert info.value.details["errors"][0]["loc"] == ["links", 1, "target_id"]
    assert snapshot(rt) == before
    assert rt.pack_state("memory").graph.incident("default", a) == []  # the rolled-back edge is not in the mirror
    assert rt.call("memory.edges", {"memory_id": a}).edges == []


def test_supersedes_link_suppresses_the_old_note_and_unlink_restores_it(rt, clock):
    old = remember(rt, "Orion database is MySQL")
    clock.now = T0 + timedelta(days=1)
    new = remember(rt, "Orion database is Postgres")
    clock.now = T0 + timedelta(days=2)
    res = link(rt, new, old, "supersedes")
    assert res.superseded == old
    note = rt.call("memory.get", {"ids": [old]}).notes[0]
    assert note.superseded_by == new
    assert recall_ids(rt, "Orion database") == [new]
    assert old in recall_ids(rt, "Orion database", as_of=(T0 + timedelta(days=1, hours=1)).isoformat())
    assert old in recall_ids(rt, "Orion database", include_superseded=True)
    assert rt.call("memory.unlink", {"edge_id": res.edge.id}).unsuperseded == old
    assert rt.call("memory.get", {"ids": [old]}).notes[0].superseded_by is None
    assert set(recall_ids(rt, "Orion database")) == {old, new}


def test_supersession_conflicts_are_refused(rt):
    a, b, c = remember(rt, "alpha note"), remember(rt, "beta note"), remember(rt, "gamma note")
    link(rt, b, a, "supersedes")
    before = snapshot(rt)
    with pytest.raises(errors.Conflict):  # a already has a superseding note
        link(rt, c, a, "supersedes")
    with pytest.raises(errors.Conflict):  # a cycle would hide both notes
        link(rt, a, b, "supersedes")
    link(rt, c, b, "supersedes")
    with pytest.raises(errors.Conflict):  # a longer cycle: c → b → a → c
        link(rt, a, c, "supersedes")
    assert snapshot(rt) != before  # (the valid c → b link was written)
    assert link(rt, b, a, "supersedes").created is False  # re-linking the same supersession is fine


def test_memory_edges_are_namespace_isolated(rt):
    a = remember(rt, "alpha note", namespace="ns-a")
    b = remember(rt, "beta note", namespace="ns-a")
    x = remember(rt, "alpha note", namespace="ns-b")
    edge = rt.call("memory.link", {"source_id": a, "target_id": b, "relation": "supports", "namespace": "ns-a"}).edge
    before = snapshot(rt)
    with pytest.raises(errors.NotFound):
        rt.call("memory.link", {"source_id": x, "target_id": a, "relation": "supports"}, namespace="ns-b")
    with pytest.raises(errors.NotFound):
        rt.call("memory.edges", {"memory_id": a}, namespace="ns-b")
    with pytest.raises(errors.NotFound):
        rt.call("memory.unlink", {"edge_id": edge.id}, namespace="ns-b")
    assert snapshot(rt) == before
    assert rt.call("memory.edges", {"memory_id": a}, namespace="ns-a").edges[0].id == edge.id
    walked = rt.call("memory.walk", {"query": "alpha note", "min_similarity": 0.0, "max_depth": 2},
                     namespace="ns-b").results
    assert [h.note.id for h in walked] == [x]


def test_edges_survive_a_reopen(tmp_path):
    path = str(tmp_path / "g.duckdb")
    with open_test_runtime(config=HASHING, path=path) as r:
        a, b = remember(r, "alpha note"), remember(r, "beta note")
        link(r, a, b, "supports")
        r.call("memory.centrality", {})
    with open_test_runtime(config=HASHING, path=path) as r:
        r.hold("default")  # a namespace's mirrors load at its first call (ADR 0016)
        g = r.pack_state("memory").graph
        assert [g.edges[e][1:4] for e in g.incident("default", a)] == [(a, b, "supports")]
        assert g.centrality["default"][b] == 1.0
        hit = r.call("memory.walk", {"query": "alpha note", "seeds": 1, "min_similarity": -1}).results
        assert {h.note.id for h in hit} == {a, b}


# -- the walk on a hand-built graph -----------------------------------------------------------------------------
@pytest.fixture
def built():
    """A → B supports, B → C supports, C → D supports, B → F related_to, A → E contradicts, A → F contradicts.

    Cosines to the query: A .95, B .80, C .50 (below the .65 cut), D .90, E .70, F .75.
    """
    r = table_runtime()
    ids = {k: remember(r, f"note {k}key") for k in "abcdef"}
    for s, d, rel in (("a", "b", "supports"), ("b", "c", "supports"), ("c", "d", "supports"),
                      ("b", "f", "related_to"), ("a", "e", "contradicts"), ("a", "f", "contradicts")):
        link(r, ids[s], ids[d], rel)
    yield r, ids
    r.close()


def test_walk_reaches_what_knn_seeds_miss_and_never_crosses_the_cut(built):
    rt, ids = built
    seeds_only = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 0}).results
    assert [h.note.id for h in seeds_only] == [ids["a"]]
    knn2 = rt.call("memory.walk", {"query": "qtopic", "seeds": 2, "max_depth": 0}).results
    assert {h.note.id for h in knn2} == {ids["a"], ids["d"]}  # B is not among the nearest notes…
    res = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 3, "min_similarity": 0.65})
    got = {h.note.id: h for h in res.results}
    assert ids["b"] in got  # …but the walk reaches it through a supports edge
    assert [(p.source_id, p.target_id, p.relation) for p in got[ids["b"]].path] == [(ids["a"], ids["b"], "supports")]
    assert ids["c"] not in got  # below the cut: not entered…
    assert ids["d"] not in got  # …and not crossed, though D itself is close to the query
    assert all(h.cosine >= 0.65 for h in res.results)
    lower = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 3, "min_similarity": 0.4})
    assert {ids["c"], ids["d"]} <= {h.note.id for h in lower.results}


def test_walk_ranking_follows_the_formula(built):
    rt, ids = built
    cent = {n.note_id: n.score for n in rt.call("memory.centrality", {"top": 100}).top}
    assert cent  # some notes have a positive edge
    res = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 2, "limit": 10})
    f = {"supports": 0.9, "related_to": 0.7, "contradicts": 0.3}  # [packs.memory.graph.relation_factors]
    expected = {
        ids["a"]: (COS["akey"], 1.0, 0, []),
        ids["b"]: (COS["bkey"], f["supports"], 1, [(ids["a"], ids["b"])]),
        # two paths reach F: A -contradicts-> F (0.3) and A -supports-> B -related_to-> F (0.63): the best is kept
        ids["f"]: (COS["fkey"], f["supports"] * f["related_to"], 2, [(ids["a"], ids["b"]), (ids["b"], ids["f"])]),
        ids["e"]: (COS["ekey"], f["contradicts"], 1, [(ids["a"], ids["e"])]),
    }
    assert {h.note.id for h in res.results} == set(expected)
    for h in res.results:
        cos, factor, depth, path = expected[h.note.id]
        c = cent.get(h.note.id, 0.0)
        assert h.cosine == pytest.approx(cos, abs=1e-3)  # the vectors are held in half precision (ADR 0030)
        assert h.edge_factor == pytest.approx(factor)
        assert h.centrality == pytest.approx(c)
        assert h.score == pytest.approx(h.cosine * factor * (1 + c), rel=1e-5)
        assert h.depth == depth and h.seed_id == ids["a"]
        assert [(p.source_id, p.target_id) for p in h.path] == path
    scores = [h.score for h in res.results]
    assert scores == sorted(scores, reverse=True)
    assert [h.note.id for h in res.results] == [ids["a"], ids["b"], ids["f"], ids["e"]]
    assert cent[ids["b"]] > 0 and cent[ids["f"]] > 0  # the (1 + centrality) term is exercised, not just 1


def test_walk_follows_only_the_relations_asked_and_skips_archived_notes(built):
    rt, ids = built
    only = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 2, "relations": ["contradicts"]})
    assert {h.note.id for h in only.results} == {ids["a"], ids["e"], ids["f"]}
    rt.call("memory.archive", {"ids": [ids["b"]]})
    res = rt.call("memory.walk", {"query": "qtopic", "seeds": 1, "max_depth": 3})
    got = {h.note.id: h for h in res.results}
    assert ids["b"] not in got
    assert got[ids["f"]].edge_factor == pytest.approx(0.3)  # B archived: only the contradicts path is left
    rt.call("memory.archive", {"ids": [ids["a"]]})  # an archived seed is never a seed
    assert ids["a"] not in {h.note.id for h in rt.call("memory.walk", {"query": "qtopic", "max_depth": 3}).results}


def test_walk_limits_are_typed_errors(built):
    rt, _ = built
    with pytest.raises(errors.LimitExceeded):
        rt.call("memory.walk", {"query": "qtopic", "max_depth": 99})
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.walk", {"query": "qtopic", "seeds": 0})
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.walk", {"query": "qtopic", "hops": 2})


def test_recall_expand_graph_adds_walked_neighbours():
    # only G (cosine .995) passes the vector leg's cut; B (cosine .80) is reached through G -supports-> B
    # (no inferred episodes: only the walk may add a note here, not neighbour smoothing)
    with table_runtime({"min_cosine": 0.99, "context": {"episode_gap_minutes": 0.0}}) as rt:
        g, b, c = remember(rt, "note gkey"), remember(rt, "note bkey"), remember(rt, "note ckey")
        link(rt, g, b, "supports")
        link(rt, g, c, "supports")  # C is below the walk's cut: never added
        plain = rt.call("memory.recall", {"query": "qtopic", "fusion": "vector_only", "include_breakdown": True})
        assert [h.note.id for h in plain.results] == [g]
        res = rt.call("memory.recall", {"query": "qtopic", "fusion": "vector_only", "include_breakdown": True,
                                        "expand_graph": True})
        by_id = {h.note.id: h for h in res.results}
        assert set(by_id) == {g, b}
        seed_rel = by_id[g].breakdown.relevance
        assert by_id[b].breakdown.context["graph"] == pytest.approx(0.9)
        assert by_id[b].breakdown.relevance == pytest.approx(seed_rel * 0.9)
        rt.call("memory.archive", {"ids": [b]})
        again = rt.call("memory.recall", {"query": "qtopic", "fusion": "vector_only", "expand_graph": True})
        assert [h.note.id for h in again.results] == [g]


# -- centrality ------------------------------------------------------------------------------------------------
def test_hubs_outrank_leaves_and_contradicts_adds_nothing(rt):
    hub = remember(rt, "the hub note")
    leaves = [remember(rt, f"leaf note {i}") for i in range(4)]
    lone = remember(rt, "a contested note")
    for leaf in leaves:
        link(rt, leaf, hub, "supports")
    first = rt.call("memory.centrality", {"top": 100})
    scores = {n.note_id: n.score for n in first.top}
    assert scores[hub] == 1.0
    assert all(scores.get(leaf, 0.0) < scores[hub] for leaf in leaves)
    for leaf in leaves:  # many inbound contradicts edges…
        link(rt, leaf, lone, "contradicts")
    second = {n.note_id: n.score for n in rt.call("memory.centrality", {"top": 100}).top}
    assert lone not in second  # …add no centrality at all
    assert second == pytest.approx(scores)  # nor change anyone else's
    stored = dict(rt.store.con.execute("SELECT note_id, score FROM memory.centrality").fetchall())
    assert stored == pytest.approx(second)


def test_centrality_is_per_namespace(rt):
    a = remember(rt, "alpha note", namespace="one")
    b = remember(rt, "beta note", namespace="one")
    x, y = remember(rt, "x note", namespace="two"), remember(rt, "y note", namespace="two")
    rt.call("memory.link", {"source_id": a, "target_id": b, "relation": "supports"}, namespace="one")
    rt.call("memory.link", {"source_id": x, "target_id": y, "relation": "supports"}, namespace="two")
    one = rt.call("memory.centrality", {}, namespace="one")
    assert {n.note_id for n in one.top} == {a, b}
    two = rt.call("memory.centrality", {}, namespace="two")
    assert {n.note_id for n in two.top} == {x, y}
    rows = rt.store.con.execute("SELECT namespace, note_id FROM memory.centrality ORDER BY 1, 2").fetchall()
    assert rows == [("one", a), ("one", b), ("two", x), ("two", y)]

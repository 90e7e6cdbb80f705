"""Edges, graph recall, PageRank."""
from __future__ import annotations

import numpy as np
import pytest

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.params import Params


def test_link_unlink_edges(kg, clock):
    alice = kg.call("kg.upsert_entity", {"name": "Alice", "kind": "person"}).entity
    first = kg.call("kg.link", {"src": "m:n1", "dst": alice.node_id, "relation": "mentions",
                                "properties": {"span": [0, 5]}})
    assert first.created and first.edge.properties == {"span": [0, 5]}
    again = kg.call("kg.link", {"src": "m:n1", "dst": alice.node_id, "relation": "mentions", "weight": 2})
    assert not again.created and again.edge.id == first.edge.id and again.edge.weight == 2
    kg.call("kg.link", {"src": "m:n2", "dst": "m:n1", "relation": "supports"})
    assert [e.src for e in kg.call("kg.edges", {"node_id": "m:n1", "direction": "in"}).edges] == ["m:n2"]
    assert [e.dst for e in kg.call("kg.edges", {"node_id": "m:n1", "direction": "out"}).edges] == [alice.node_id]
    assert len(kg.call("kg.edges", {"node_id": "m:n1", "relations": ["supports"]}).edges) == 1
    clock.tick()
    assert kg.call("kg.unlink", {"edge_id": first.edge.id}).removed == [first.edge.id]
    assert [e.relation for e in kg.call("kg.edges", {"node_id": "m:n1"}).edges] == ["supports"]
    removed = kg.call("kg.edges", {"node_id": "m:n1", "include_removed": True}).edges
    assert [e.removed_at for e in removed if e.relation == "mentions"] == [clock.now]
    with pytest.raises(errors.NotFound):
        kg.call("kg.unlink", {"edge_id": first.edge.id})
    kg.call("kg.unlink", {"src": "m:n2", "dst": "m:n1", "relation": "supports"})
    assert kg.call("kg.edges", {"node_id": "m:n1"}).edges == []


def test_link_many_and_edge_windows(kg):
    ents = [kg.call("kg.upsert_entity", {"name": n}).entity.node_id for n in ("A", "B")]
    res = kg.call("kg.link_many", {"links": [
        {"src": "m:7", "dst": ents[0], "relation": "mentions"},
        {"src": "m:7", "dst": ents[1], "relation": "mentions", "valid_from": "2020", "valid_to": "2021"},
        {"src": "m:7", "dst": ents[0], "relation": "mentions", "weight": 3}]})
    assert res.created == 3 and res.edge_ids[0] == res.edge_ids[2]
    assert [e.weight for e in kg.call("kg.edges", {"node_id": "m:7"}).edges] == [3.0, 1.0]
    assert len(kg.call("kg.edges", {"node_id": "m:7", "as_of": "2022"}).edges) == 1
    assert kg.call("kg.link_many", {"links": [{"src": "m:7", "dst": ents[1], "relation": "mentions"}]}).updated == 1
    fid = kg.call("kg.assert_fact", {"subject": "A", "predicate": "p", "object": "B"}).fact.fact_id
    kg.call("kg.link", {"src": "m:8", "dst": f"f:{fid}", "relation": "supports"})
    with pytest.raises(errors.NotFound):
        kg.call("kg.link", {"src": "m:8", "dst": "f:999", "relation": "supports"})


def test_graph_recall_bfs_grounding_and_expiry(kg):
    f = lambda s, p, o, **k: kg.call("kg.assert_fact", {"subject": s, "predicate": p, "object": o, **k})
    f("Alice", "works_at", "Meta", valid_from="2020", source_id="n1")
    f("Alice", "works_at", "Google", valid_from="2023-06", source_id="n2")
    f("Google", "located_in", "Mountain View", source_id="n3")
    f("Meta", "located_in", "Menlo Park", source_id="n4")
    f("Alice", "age", "41", literal=True, source_id="n5")
    bob = kg.call("kg.upsert_entity", {"name": "Bob"}).entity
    alice = kg.call("kg.entity", {"name": "Alice"}).entity
    kg.call("kg.link", {"src": "m:n9", "dst": alice.node_id, "relation": "mentions"})
    kg.call("kg.link", {"src": "m:n9", "dst": bob.node_id, "relation": "mentions"})
    res = kg.call("kg.graph_recall", {"text": "What does alice do?", "max_depth": 2})
    names = {e.entity.name: e.depth for e in res.entities}
    assert names == {"Alice": 0, "Google": 1, "Mountain View": 2, "Bob": 2}  # Meta expired: not traversed
    assert set(res.grounding) == {"n2", "n3", "n5", "n9"}
    mv_id = kg.call("kg.entity", {"name": "Mountain View"}).entity.node_id
    mv = next(p for p in res.paths if p.node_id == mv_id)
    assert [h.via for h in mv.hops] == ["fact:works_at", "fact:located_in"]
    old = kg.call("kg.graph_recall", {"entities": ["Alice"], "as_of": "2021", "max_depth": 2})
    assert {e.entity.name for e in old.entities} == {"Alice", "Meta", "Menlo Park", "Bob"}
    every = kg.call("kg.graph_recall", {"entities": ["alice"], "include_superseded": True, "max_depth": 1})
    assert {e.entity.name for e in every.entities} == {"Alice", "Meta", "Google"}
    only_edges = kg.call("kg.graph_recall", {"entities": ["Alice"], "predicates": ["none"], "max_depth": 2})
    assert {e.entity.name for e in only_edges.entities} == {"Alice", "Bob"}
    small = kg.call("kg.graph_recall", {"entities": ["Alice"], "max_nodes": 2, "max_depth": 2})
    assert len(small.nodes) == 2 and small.truncated
    with pytest.raises(errors.NotFound):
        kg.call("kg.graph_recall", {"entities": ["Nobody"]})


def reference_pagerank(edges, d=0.85, iters=15):
    nodes = sorted({x for e in edges for x in e[:2]})
    ix = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    m = np.zeros((n, n))
    for s, t, w in edges:
        m[ix[s], ix[t]] += w
    r = np.full(n, 1 / n)
    for _ in range(iters):
        new = np.full(n, (1 - d) / n)
        for i in range(n):
            out = m[i].sum()
            if out == 0:
                new += d * r[i] / n
            else:
                new += d * r[i] * m[i] / out
        r = new
    return dict(zip(nodes, r / r.max()))


def test_centrality_is_pagerank_over_positive_edges_and_is_stored(kg):
    links = [("m:1", "m:2", 1.0), ("m:2", "m:3", 2.0), ("m:3", "m:1", 1.0), ("m:4", "m:3", 1.0), ("m:1", "m:5", 0.5)]
    kg.call("kg.link_many", {"links": [{"src": s, "dst": d, "relation": "supports", "weight": w}
                                       for s, d, w in links]})
    kg.call("kg.link", {"src": "m:5", "dst": "m:1", "relation": "contradicts"})
    res = kg.call("kg.centrality", {"top": 10})
    ref = reference_pagerank(links)
    assert res.nodes == 5 and res.edges == 5 and res.scope == "default"
    assert res.top[0].score == 1.0
    for node in res.top:
        assert node.score == pytest.approx(ref[node.node_id], rel=1e-9)
    assert sum(n.raw_score for n in res.top) == pytest.approx(1.0)
    stored = kg.call("kg.centrality_scores", {"node_ids": ["m:1", "m:3", "m:99"]}).scores
    assert stored == {"m:1": pytest.approx(ref["m:1"]), "m:3": pytest.approx(ref["m:3"])}


def test_centrality_filters_and_scopes(kg):
    kg.call("kg.assert_fact", {"subject": "A", "predicate": "knows", "object": "B"})
    a = kg.call("kg.entity", {"name": "A"}).entity.node_id
    kg.call("kg.link", {"src": "m:1", "dst": a, "relation": "mentions"})
    kg.call("kg.link", {"src": "m:1", "dst": "m:2", "relation": "related_to"})
    notes = kg.call("kg.centrality", {"node_types": ["m"]})
    assert notes.scope == "types=m" and {n.node_id for n in notes.top} == {"m:1", "m:2"}
    ents = kg.call("kg.centrality", {"relations": ["mentions"]})
    assert {n.node_id for n in ents.top} == {"m:1", a, "e:2"}
    assert next(n for n in ents.top if n.node_id == a).name == "A"
    assert kg.call("kg.centrality_scores", {"node_ids": ["m:2"], "scope": "types=m"}).scores["m:2"] == 1.0
    assert kg.call("kg.centrality_scores", {"node_ids": ["m:2"]}).scores == {}


def test_list_edges_pages_by_id_filters_by_node_kind_and_skips_removed(kg):
    ids = [kg.call("kg.link", {"src": f"m:{i}", "dst": f"m:{i + 1}", "relation": "supports"}).edge.id
           for i in range(5)]
    ent = kg.call("kg.upsert_entity", {"name": "Nine", "kind": "thing"}).entity
    kg.call("kg.link", {"src": "m:1", "dst": ent.node_id, "relation": "mentions"})
    kg.call("kg.link", {"src": "m:7", "dst": "m:8", "relation": "supports"}, namespace="other")
    kg.call("kg.unlink", {"edge_id": ids[2]})
    seen, after = [], 0
    while after is not None:
        page = kg.call("kg.list_edges", {"node_prefix": "m:", "after_id": after, "limit": 2})
        assert len(page.edges) <= 2
        seen += [e.id for e in page.edges]
        after = page.next_after_id
    assert seen == [ids[0], ids[1], ids[3], ids[4]]
    assert [e.relation for e in kg.call("kg.list_edges", {"relations": ["mentions"]}).edges] == ["mentions"]
    assert [e.src for e in kg.call("kg.list_edges", {}, namespace="other").edges] == ["m:7"]


class Empty(Params):
    pass


def test_link_and_unlink_publish_edges_changed_only_when_committed(make_pal_runtime):
    watcher = Pack("watcher", version="1.0", requires=["kg"])
    got: list = []

    @watcher.subscribe("kg.edges_changed")
    def on_edges(event, ctx: Context) -> None:
        got.append((ctx.namespace, event))

    @watcher.verb("link_then_fail", act=Act.COMMISSIVE)
    def link_then_fail(params: Empty, ctx: Context) -> Empty:
        """Link through kg, then fail: the event must never be delivered."""
        ctx.call("kg.link", {"src": "m:1", "dst": "m:2", "relation": "supports"})
        raise ValueError("boom")

    import palimpsest_memory.packs.kg.pack as kg_pack
    rt = make_pal_runtime(kg_pack, watcher)
    eid = rt.call("kg.link", {"src": "m:1", "dst": "m:2", "relation": "supports", "weight": 2}).edge.id
    assert [(ns, [(e.edge_id, e.src, e.dst, e.relation, e.weight) for e in ev.linked]) for ns, ev in got] == [
        ("default", [(eid, "m:1", "m:2", "supports", 2.0)])]
    with pytest.raises(errors.InternalError):
        rt.call("watcher.link_then_fail", {}, namespace="x")
    assert len(got) == 1
    rt.call("kg.unlink", {"edge_id": eid})
    assert got[-1][1].removed == (eid,) and len(got) == 2

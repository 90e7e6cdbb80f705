"""kg.neighbourhood (ADR 0042), over a generated conversation import, on both backends: capped at N by rank,
hubs folded, the relation filter, defaults from the pack's defaults.toml, what was left out, bad params refused."""
from __future__ import annotations

import pytest
from conversation_graph import BOTH_EVERY, TURNS, fill_graph
from store_support import HASHING

from palimpsest_memory.runtime import errors


@pytest.fixture
def chat(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    return rt, fill_graph(rt)


def _key(n) -> tuple:
    return (-n.score, -n.degree, n.id[0], int(n.id[2:]))


def test_default_limit_and_hub_bound_come_from_the_settings(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {**HASHING["packs"], "kg": {"graph_view_nodes": 7,
                                                                        "graph_view_hub_degree": 3}}})
    data = fill_graph(rt)
    res = rt.call("kg.neighbourhood", {"nodes": [data["entities"]["Ada"]]})
    assert (res.limit, res.hub_degree, res.depth) == (7, 3, 1) and len(res.nodes) == 7
    plain = make_pal_runtime(config=HASHING)
    fill_graph(plain)
    got = plain.call("kg.neighbourhood", {"nodes": [data["entities"]["Ada"]]})
    assert (got.limit, got.hub_degree) == (50, 25)  # packs/kg/defaults.toml


def test_capped_at_n_by_rank_and_show_more_keeps_the_first(chat):
    rt, data = chat
    ada = data["entities"]["Ada"]
    local = rt.call("kg.neighbourhood", {"nodes": [ada], "limit": 10})
    assert local.ranked_by == "local_pagerank"
    rt.call("kg.centrality", {})  # stored PageRank: the rank the view uses from now on
    full = rt.call("kg.neighbourhood", {"nodes": [ada], "limit": 1000})
    ada_degree = TURNS // 2 + TURNS // 2 // BOTH_EVERY + 1 + 1  # her turns, Bo's turns naming her, a fact, scope
    assert full.ranked_by == "pagerank" and full.nodes[0].id == ada and full.nodes[0].degree >= ada_degree - 2
    assert full.reached == len(full.nodes) and full.omitted_nodes == 0
    ten = rt.call("kg.neighbourhood", {"nodes": [ada], "limit": 10})
    assert [n.id for n in ten.nodes] == [n.id for n in full.nodes[:10]]  # "show more" adds, never reshuffles
    assert ten.omitted_nodes == full.reached - 10 and ten.reached == full.reached
    # depth 1 from one start: the nine shown are the best nine of every neighbour, by score, then degree, then id
    rest = sorted(full.nodes[1:], key=_key)
    assert [n.id for n in ten.nodes[1:]] == [n.id for n in rest[:9]]
    stored = rt.call("kg.centrality_scores", {"node_ids": [n.id for n in ten.nodes]}).scores
    assert all(abs(n.score - stored.get(n.id, 0.0)) < 1e-9 for n in ten.nodes)
    assert min(n.score for n in ten.nodes[1:]) >= max(n.score for n in rest[9:])
    # notes naming both speakers or linked to others (degree >= 2) rank above those naming one, at equal PageRank
    notes = [n for n in ten.nodes if n.id.startswith("m:")]
    assert notes and all(n.degree >= 2 for n in notes)
    # the edges drawn are those between nodes shown; the rest of the shown nodes' edges are counted
    shown = {n.id for n in ten.nodes}
    assert ten.edges and all(e.src in shown and e.dst in shown for e in ten.edges)
    assert ten.omitted_edges == sum(n.degree for n in ten.nodes) - 2 * len(ten.edges) > 0


def test_hubs_are_folded_unless_opened(chat):
    rt, data = chat
    both = data["notes"][BOTH_EVERY]  # a turn of Bo's that names Ada too
    res = rt.call("kg.neighbourhood", {"nodes": [both]})
    by = {n.id: n for n in res.nodes}
    ada, bo = data["entities"]["Ada"], data["entities"]["Bo"]
    assert set(by) == {both, ada, bo}
    for hub in (ada, bo):
        assert by[hub].folded and by[hub].degree > res.hub_degree and by[hub].hidden == by[hub].degree - 1
    assert not by[both].folded and by[both].hidden == 0
    assert res.omitted_edges == by[ada].hidden + by[bo].hidden and res.omitted_nodes == 0
    # depth 2 does not pass through a folded hub: still the same three nodes
    assert {n.id for n in rt.call("kg.neighbourhood", {"nodes": [both], "depth": 2}).nodes} == set(by)
    opened = rt.call("kg.neighbourhood", {"nodes": [both, ada], "limit": 1000})
    assert not {n.id: n for n in opened.nodes}[ada].folded and len(opened.nodes) > 40
    assert {n.id: n for n in opened.nodes}[bo].folded  # reached through Ada's notes, still a hub
    # a higher bound: no hub, nothing folded
    wide = rt.call("kg.neighbourhood", {"nodes": [both], "hub_degree": 1000})
    assert not any(n.folded for n in wide.nodes) and wide.reached == 3


def test_relation_filter(chat):
    rt, data = chat
    ada, cy = data["entities"]["Ada"], data["entities"]["Cy"]
    every = rt.call("kg.neighbourhood", {"nodes": [cy], "depth": 2, "hub_degree": 1000, "limit": 1000})
    assert {e.relation for e in every.edges} >= {"fact:knows", "mentions"}
    assert every.relations["fact:knows"] == 2 and every.relations["supports"] == 2
    assert every.relations["mentions"] >= TURNS
    knows = rt.call("kg.neighbourhood", {"nodes": [cy], "depth": 2, "relations": ["fact:knows"]})
    assert {e.relation for e in knows.edges} == {"fact:knows"}
    assert {n.id for n in knows.nodes} == {cy, ada, data["entities"]["Dee"]}
    assert {n.id: n.degree for n in knows.nodes}[ada] == 1  # the degree of the relations asked
    assert knows.relations == every.relations  # what a filter can choose from does not shrink with the filter
    first = data["notes"][0]
    sup = rt.call("kg.neighbourhood", {"nodes": [first], "relations": ["supports"]})
    assert {n.id for n in sup.nodes} == {first, data["notes"][2], data["notes"][4]}
    assert [e.relation for e in sup.edges] == ["supports", "supports"]


@pytest.mark.parametrize("params, error, words", [
    ({"limit": 0}, errors.InvalidParams, "limit"),
    ({"limit": 1001}, errors.LimitExceeded, "limit is at most 1000"),
    ({"depth": 4}, errors.LimitExceeded, "depth is at most 3"),
    ({"depth": -1}, errors.InvalidParams, "depth"),
    ({"hub_degree": 0}, errors.InvalidParams, "hub_degree"),
    ({"relations": ["mentions", "likes"]}, errors.InvalidParams, "unknown relation 'likes'"),
    ({"relations": ["fact:"]}, errors.InvalidParams, "unknown relation 'fact:'"),
    ({"nodes": []}, errors.InvalidParams, "nodes"),
    ({"nodes": ["x:1"]}, errors.InvalidParams, "nodes"),
    ({"nodes": ["e:999999"]}, errors.NotFound, "node e:999999 does not exist"),
    ({"limit": 1, "nodes": ["e:1", "e:2"]}, errors.LimitExceeded, "more than the limit"),
    ({"colour": "red"}, errors.InvalidParams, "colour"),
])
def test_bad_params_are_refused(chat, params, error, words):
    rt, data = chat
    with pytest.raises(error) as got:
        rt.call("kg.neighbourhood", {"nodes": [data["entities"]["Ada"]], **params})
    assert words in str(got.value)
    if error is errors.InvalidParams:
        assert not isinstance(got.value, errors.LimitExceeded)

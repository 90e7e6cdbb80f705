"""PageRank on a small graph solved by hand, with zero-weight edges that must not count (issue 22, item 3).

The graph (weights in brackets)::

    1 → 2 [1]    1 → 3 [3]    3 → 1 [1]        positive: nodes 1, 2, 3; node 2 is dangling
    2 → 3 [0]    4 → 1 [0]                      zero weight: neither an edge nor (for 4) a node

With damping d = 17/20 and n = 3 the stationary ranks solve (teleport t = (d·r2 + 1 − d) / 3, since node 2's rank
is spread evenly)::

    r1 = d·r3 + t      r2 = d·r1/4 + t      r3 = d·3r1/4 + t      r1 + r2 + r3 = 1

whose solution is r = (1480, 681, 1310) / 3471; normalised to the top node: 1, 681/1480, 131/148. Enough
iterations are configured for the power iteration to reach it to machine precision. Had the zero-weight edges
counted, node 4 would be a fourth (dangling) node and every rank would differ.
"""
from fractions import Fraction

import pytest

from palimpsest_memory.packs.kg import pack as kg_pack_module
from store_support import HASHING

D = Fraction(17, 20)
RAW = {1: Fraction(1480, 3471), 2: Fraction(681, 3471), 3: Fraction(1310, 3471)}
CONVERGED = {"pagerank_iterations": 500, "pagerank_damping": 0.85}
POSITIVE = [(1, 2, 1.0), (1, 3, 3.0), (3, 1, 1.0)]
ZERO = [(2, 3, 0.0), (4, 1, 0.0)]


def test_the_hand_solution_solves_the_equations():
    r1, r2, r3 = RAW[1], RAW[2], RAW[3]
    t = (D * r2 + 1 - D) / 3
    assert (r1, r2, r3) == (D * r3 + t, D * r1 / 4 + t, D * 3 * r1 / 4 + t)
    assert r1 + r2 + r3 == 1


def test_kg_centrality_gives_the_hand_computed_ranks_and_ignores_zero_weight_edges(make_pal_runtime):
    rt = make_pal_runtime(kg_pack_module, config={"packs": {"kg": CONVERGED}})
    rt.call("kg.link_many", {"links": [{"src": f"m:{s}", "dst": f"m:{t}", "relation": "supports", "weight": w}
                                       for s, t, w in POSITIVE + ZERO]})
    res = rt.call("kg.centrality", {"top": 10})
    assert (res.nodes, res.edges) == (3, 3)
    assert [n.node_id for n in res.top] == ["m:1", "m:3", "m:2"]
    for n in res.top:
        i = int(n.node_id[2:])
        assert n.raw_score == pytest.approx(float(RAW[i]), rel=1e-12, abs=0)
        assert n.score == pytest.approx(float(RAW[i] / RAW[1]), rel=1e-12, abs=0)
    assert [n.score for n in res.top][0] == 1.0
    stored = rt.call("kg.centrality_scores", {"node_ids": ["m:1", "m:2", "m:3", "m:4"]}).scores
    assert stored == {"m:1": 1.0, "m:2": pytest.approx(681 / 1480, rel=1e-12),
                      "m:3": pytest.approx(131 / 148, rel=1e-12)}


def test_memory_centrality_gives_the_same_ranks_for_notes(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {**HASHING["packs"], "kg": CONVERGED}})
    note = {i: rt.call("memory.remember", {"content": f"note number {i} about the harbour"}).note.id
            for i in (1, 2, 3, 4)}
    rt.call("memory.link_many", {"links": [
        {"source_id": note[s], "target_id": note[t], "relation": "supports", "weight": w}
        for s, t, w in POSITIVE + ZERO]})
    res = rt.call("memory.centrality", {"top": 10})
    assert (res.notes, res.edges) == (3, 3)
    assert [n.note_id for n in res.top] == [note[1], note[3], note[2]]
    expected = {note[i]: float(RAW[i] / RAW[1]) for i in (1, 2, 3)}
    assert {n.note_id: n.score for n in res.top} == pytest.approx(expected, rel=1e-12)

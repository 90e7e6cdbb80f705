import pytest

from palimpsest_memory.packs.memory.ranking.fusion import minmax, ranked, rrf, union, weighted


TEXT = [(1, 10.0), (2, 5.0), (3, 0.0)]
VEC = [(3, 0.9), (4, 0.5)]


def test_minmax():
    assert minmax(TEXT) == {1: 1.0, 2: 0.5, 3: 0.0}
    assert minmax([(7, 3.0)]) == {7: 1.0}
    assert minmax({}) == {}


def test_weighted_is_sum_of_weighted_minmax():
    f = weighted({"text": TEXT, "vector": VEC}, {"text": 0.7, "vector": 0.3})
    assert f.scores[1] == pytest.approx(0.7)
    assert f.scores[3] == pytest.approx(0.3)  # text min (0) + vector max (1)*0.3
    assert f.scores[4] == pytest.approx(0.0)
    assert f.per_leg["text"][4] == 0.0 and f.per_leg["vector"][3] == 1.0
    assert [i for i, _ in ranked(f.scores)][:2] == [1, 2]


def test_rrf_ranks():
    f = rrf({"text": TEXT, "vector": VEC}, k=60)
    assert f.scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert f.scores[1] == pytest.approx(1 / 61)
    assert ranked(f.scores, 1)[0][0] == 3  # found by both legs


def test_union_takes_max():
    f = union({"text": TEXT, "vector": VEC})
    assert f.scores == {1: 1.0, 2: 0.5, 3: 1.0, 4: 0.0}


def test_mapping_legs_and_missing_weight():
    f = weighted({"text": {5: 2.0, 6: 1.0}, "vector": {6: 0.8}}, {"text": 1.0})
    assert f.scores == {5: 1.0, 6: 0.0}

"""bench/locomo_coverage.py: the coverage mechanisms issue 19 measured (and did not ship, ADR 0008) do what
their rows in the ADR's table say, on small constructed indexes."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.ranking.context_scores import PoolScores
from palimpsest_memory.packs.memory.engine.text import tokenize

_spec = importlib.util.spec_from_file_location(
    "locomo_coverage", Path(__file__).resolve().parents[3] / "bench" / "locomo_coverage.py")
cov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cov)


def stem(word: str) -> str:
    (t,) = tokenize(word)
    return t


@pytest.fixture()
def index() -> BM25Index:
    camp, lake, pottery, filler = stem("camping"), stem("lake"), stem("pottery"), stem("weather")
    idx = BM25Index()
    idx.add_weighted([1, 2, 3, 4, 5], [
        {camp: 1.0, lake: 1.0},  # says camping and lake itself
        {camp: 0.5, filler: 1.0},  # camping only as a neighbour's word (expansion weight)
        {pottery: 1.0},
        {camp: 1.0, filler: 1.0},
        {filler: 1.0},
    ])
    return idx


def test_query_term_matrix_counts_own_words_only(index):
    terms, idf, covers = cov.query_term_matrix(index, "camping by the lake, or pottery? unicorns", [2, 1, 99, 3])
    assert terms == [stem("camping"), stem("lake"), stem("pottery")]  # "unicorns" is not in the index
    assert idf.shape == (3,) and (idf > 0).all()
    assert covers.tolist() == [[False, True, False, False],  # note 2 holds "camp" only at 0.5; 99 is unknown
                               [False, True, False, False],
                               [False, False, False, True]]


def test_aspect_coverage_lifts_the_note_that_says_what_the_top_does_not():
    ids = np.array([10, 11, 12])
    scores = np.array([1.0, 0.9, 0.8])  # 10 and 11 say terms a, b; 12 says c only
    covers = np.array([[True, True, False], [True, True, False], [False, False, True]])
    idf = np.ones(3)
    out = cov.aspect_coverage(scores, ids, idf, covers, depth=10)
    assert list(ids[np.lexsort((ids, -out))]) == [10, 12, 11]
    assert out[2] == pytest.approx(0.8 * (1 + 1 / 3))  # ν = the unanswered third of the query
    # nothing to gain when the top note says every term: the order is the score order
    same = cov.aspect_coverage(scores, ids, idf, np.array([[True, True, True]] * 3), depth=10)
    assert list(ids[np.lexsort((ids, -same))]) == [10, 11, 12]


def test_residual_is_the_part_of_the_query_the_top_notes_do_not_say(index):
    words, u = cov.residual(index, "camping by the lake, or pottery?", [1])
    _, idf, _ = cov.query_term_matrix(index, "camping by the lake, or pottery?", [1])
    assert words == "pottery" and u == pytest.approx(idf[2] / idf.sum())
    assert cov.residual(index, "camping lake", [1]) == ("", 0.0)  # all said
    assert cov.residual(index, "pottery", [1]) == ("", 0.0)  # none said: a second round would repeat the first


def test_lift_share_keeps_a_threads_best_note_whole():
    pool = PoolScores(ids=np.array([1, 2, 3, 4]), scores=np.array([2.0, 1.8, 1.6, 1.0]),
                      base=np.array([1.5, 1.3, 1.1, 0.5]), neighbour=np.zeros(4),
                      thread=np.array([1.0, 1.0, 1.0, 1.0]), information=None)
    code = np.array([0, 7, 7, 7, 8])  # notes 1-3 in thread 7, note 4 in thread 8
    out = cov.lift_share(pool, code, beta=0.5)
    assert out.tolist() == pytest.approx([2.0, 1.8 - 0.5 / 2, 1.6 - 0.5 * 2 / 3, 1.0])

"""The information prior (issue 19, ADR 0008): after the context signals, each pooled note's score is multiplied
by ln(e + I), I = Σ idf over the distinct words the note says itself. A content-free turn (a greeting, "thanks!")
that thread expansion and neighbour smoothing lifted must give way to the turn that answers."""
from __future__ import annotations

import math
import random
from datetime import timedelta

import numpy as np
from store_support import HASHING, T0, Clock

from palimpsest_memory.packs.memory.ranking import adjusters
from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.ranking.context_scores import PoolScores
from palimpsest_memory.runtime.testing import open_test_runtime


def _idf(n: int, df: int) -> float:
    return math.log1p((n - df + 0.5) / (df + 0.5))


def test_own_information_counts_only_a_notes_own_words():
    idx = BM25Index()
    # note 1 says "kayak pier"; "harbour" is only lent to it by a neighbour at 0.5; note 2 says "harbour" itself
    idx.add_weighted([1, 2, 3], [{"kayak": 1.0, "pier": 2.0, "harbour": 0.5}, {"harbour": 1.0},
                                 {"kayak": 1.0, "harbour": 0.5, "dock": 1.0}])
    got = idx.own_information([1, 2, 3, 99])
    n = 3
    assert got[0] == np.float64(_idf(n, 2) + _idf(n, 1))  # kayak (df 2) + pier (df 1); not harbour
    assert got[1] == np.float64(_idf(n, 3))
    assert got[2] == np.float64(_idf(n, 2) + _idf(n, 1))  # kayak + dock
    assert got[3] == 0.0  # an unknown id says nothing
    assert idx.own_information([]).size == 0


def test_information_prior_multiplies_by_log_of_information():
    # a note with no indexed word of its own (I = 0, e.g. "hello!" is all stop words) keeps its score: factor 1
    # note 4 joined the pool only as a thread neighbour (base 0: no leg matched it): factor 1 whatever it says
    pool = PoolScores(ids=np.array([1, 2, 3, 4]), scores=np.array([1.0, 0.9, 0.5, 0.45]),
                      base=np.array([0.6, 0.5, 0.5, 0.0]), neighbour=np.zeros(4), thread=np.zeros(4))
    got = adjusters.information_prior(pool, np.array([0.5, 20.0, 0.0, 50.0]))
    assert np.allclose(got.information, [math.log(math.e + 0.5), math.log(math.e + 20.0), 1.0, 1.0])
    assert np.allclose(got.scores, [1.0 * math.log(math.e + 0.5), 0.9 * math.log(math.e + 20.0), 0.5, 0.45])
    # the greeting-like note 1 had the best score, the informative note 2 now ranks first
    assert got.ids[np.argmax(got.scores)] == 2
    assert pool.information is None and np.allclose(pool.scores, [1.0, 0.9, 0.5, 0.45])  # the input is not changed


def _runtime(prior: bool):
    memory = dict(HASHING["packs"]["memory"])
    memory["context"] = {"information_prior": prior}
    return open_test_runtime(config={"packs": {"memory": memory}}, clock=Clock(T0))


def _recall_order(prior: bool):
    rt = _runtime(prior)
    try:
        ids = {}
        for j, (name, text) in enumerate([
                ("greeting", "Anna: Hey Ben! Great to see you, Ben!"),
                ("answer", "Ben: We adopted a beagle puppy called Rufus from the shelter near Lake Tahoe"),
                ("thanks", "Anna: Aww, thanks Ben!"),
                ("other", "Anna: My sister started a pottery course at the community college downtown")]):
            ids[name] = rt.call("memory.remember", {"content": text, "scope": "chat", "thread": "s1",
                                                    "occurred_at": (T0 + timedelta(minutes=j)).isoformat()}).note.id
        res = rt.call("memory.recall", {"query": "What is the name of Ben's dog?", "include_breakdown": True,
                                        "fusion": "keyword_only"})
        return ids, res.results
    finally:
        rt.close()


def test_a_content_free_turn_ranks_below_the_answering_turn():
    ids, hits = _recall_order(prior=True)
    order = [h.note.id for h in hits]
    assert order.index(ids["answer"]) < order.index(ids["greeting"])
    assert order.index(ids["answer"]) < order.index(ids["thanks"])
    info = {h.note.id: h.breakdown.context["information"] for h in hits}
    assert info[ids["answer"]] > info[ids["greeting"]] > 0
    # the breakdown's score is still what the results are ordered by
    assert [h.breakdown.score for h in hits] == sorted((h.breakdown.score for h in hits), reverse=True)


def test_without_the_prior_the_greeting_crowds_the_answer():
    """The same store with the prior off: the short greeting, which names Ben twice and holds its neighbour's
    words by expansion, outranks the answer — the failure the prior fixes (so the test above can fail)."""
    ids, hits = _recall_order(prior=False)
    order = [h.note.id for h in hits]
    assert order.index(ids["greeting"]) < order.index(ids["answer"])
    assert all("information" not in h.breakdown.context for h in hits)


def test_own_information_is_the_same_for_restored_extended_and_removed_rows():
    """A restored index keeps its rows in flat arrays, rows added since as small arrays: the vectorised sum
    equals a row-by-row reference over both kinds, and a removed id says nothing."""
    rng = random.Random(3)

    def bag():
        return {f"t{rng.randrange(50)}": rng.choice([0.5, 1.0, 1.5, 2.0]) for _ in range(rng.randrange(1, 12))}

    built = BM25Index()
    built.add_weighted(list(range(200)), [bag() for _ in range(200)])
    idx = BM25Index()
    idx.restore(built.snapshot())
    idx.add_weighted(list(range(200, 260)), [bag() for _ in range(60)])
    idx.remove([5, 210])
    ids = list(range(0, 270, 3)) + [5, 210]
    n = len(idx)
    ref = []
    for i in ids:
        row = idx.row_of(i)
        terms = [] if row is None else zip(*(a.tolist() for a in idx.terms(row)))
        ref.append(sum(_idf(n, idx.postings.df[t]) for t, w in terms if w >= 1.0))
    got = idx.own_information(np.array(ids))
    assert np.allclose(got, ref) and got[-2:].tolist() == [0.0, 0.0]

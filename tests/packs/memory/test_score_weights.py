"""The score divides by the sum of the weights, whatever they sum to (issue 22, item 2).

Every other scoring test uses weights that sum to 1, where ``… / Σw`` and ``…`` are the same number. Here the
weights sum to 2.7, 4 and 0.3: each score must stay in [0, 1], equal the ADR 0008 formula evaluated from its
breakdown, and, on notes built so every component is known, equal a literal computed by hand.
"""
import math
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ADR = Path(__file__).resolve().parents[3] / "adr" / "0008-memory-recall-pipeline.md"
NOW = datetime(2026, 3, 2, 12, 0, 0)
HALF_LIFE = 30.0  # recency_half_life_days, set explicitly below


def config(weights: dict, **memory: object) -> dict:
    return {"packs": {"memory": {"embedder": "hashing", "recency_half_life_days": HALF_LIFE,
                                 "score_weights": weights, **memory}}}


def adr_score(hit) -> float:
    """The ADR's ```formula block, evaluated for one hit (salience and decay from the note, the rest from the
    breakdown)."""
    block = re.search(r"```formula\n(.*?)```", ADR.read_text(encoding="utf-8"), re.S)
    assert block, "ADR 0008 has no ```formula block"
    b = hit.breakdown
    env = {"salience": hit.note.salience, "decay_factor": hit.note.decay_factor, "age_days": b.age_days,
           "half_life_days": HALF_LIFE, "relevance": b.relevance, "w_rel": b.weights["relevance"],
           "w_sal": b.weights["salience"], "w_temp": b.weights["temporal"]}
    for line in filter(str.strip, block.group(1).splitlines()):
        name, expr = (part.strip() for part in line.split("=", 1))
        env[name] = eval(expr, {"__builtins__": {}, "exp": math.exp}, dict(env))  # noqa: S307 (our own ADR)
    return env["score"]


def recall(rt, query: str, **kw):
    return rt.call("memory.recall", {"query": query, "now": NOW.isoformat(), "include_breakdown": True,
                                     "limit": 50, **kw}).results


@pytest.mark.parametrize("weights", [
    {"relevance": 0.9, "salience": 0.9, "temporal": 0.9},
    {"relevance": 2.0, "salience": 1.0, "temporal": 1.0},
    {"relevance": 0.1, "salience": 0.1, "temporal": 0.1},
    {"relevance": 3.0, "salience": 0.0, "temporal": 0.5},
])
@pytest.mark.parametrize("fusion", ["rrf", "weighted", "keyword_only"])
def test_scores_stay_in_unit_range_and_follow_the_adr_when_weights_do_not_sum_to_one(make_pal_runtime, weights,
                                                                                    fusion):
    rt = make_pal_runtime(config=config(weights), clock=lambda: NOW)
    for n, (content, days, sal) in enumerate([
            ("Orion Postgres migration plan", 0, 1.0), ("Postgres migration done for Orion", 0, 0.9),
            ("Orion migration retro", 2, 0.95), ("Postgres tuning for Orion", 40, 0.3),
            ("Orion kickoff", 400, 0.6)]):
        rt.call("memory.remember", {"content": content, "salience": sal, "decay_factor": 0.0,
                                    "occurred_at": (NOW - timedelta(days=days)).isoformat()})
    hits = recall(rt, "Orion Postgres migration", fusion=fusion)
    assert len(hits) >= 3
    for hit in hits:
        assert hit.breakdown.weights == weights
        assert 0.0 <= hit.score <= 1.0
        assert hit.score == pytest.approx(adr_score(hit), abs=1e-9)
    assert hits[0].score > 0.9  # relevance, salience and recency all near 1: the score is near 1, not near Σw


@pytest.mark.parametrize("weights,salience,age_days,expected", [
    # one note: relevance is 1 (the best candidate); decay 0: effective salience = salience
    ({"relevance": 0.9, "salience": 0.9, "temporal": 0.9}, 0.5, 0, (0.9 + 0.45 + 0.9) / 2.7),  # 0.8333…
    ({"relevance": 2.0, "salience": 1.0, "temporal": 1.0}, 0.4, 30, (2.0 + 0.4 + 0.5) / 4.0),  # 0.725
    ({"relevance": 0.1, "salience": 0.1, "temporal": 0.1}, 1.0, 60, (0.1 + 0.1 + 0.025) / 0.3),  # 0.75
    ({"relevance": 0.9, "salience": 0.9, "temporal": 0.9}, 1.0, 0, 1.0),
])
def test_a_lone_note_scores_the_hand_computed_value(make_pal_runtime, weights, salience, age_days, expected):
    rt = make_pal_runtime(config=config(weights), clock=lambda: NOW)
    rt.call("memory.remember", {"content": "Orion moves to Postgres", "salience": salience, "decay_factor": 0.0,
                                "occurred_at": (NOW - timedelta(days=age_days)).isoformat()})
    (hit,) = recall(rt, "Orion Postgres")
    assert hit.breakdown.relevance == 1.0
    assert hit.score == pytest.approx(expected, abs=1e-12)
    assert hit.breakdown.score == pytest.approx(expected, abs=1e-12)


def test_all_zero_weights_score_zero_rather_than_dividing_by_zero(make_pal_runtime):
    rt = make_pal_runtime(config=config({"relevance": 0.0, "salience": 0.0, "temporal": 0.0}), clock=lambda: NOW)
    rt.call("memory.remember", {"content": "Orion moves to Postgres", "occurred_at": NOW.isoformat()})
    (hit,) = recall(rt, "Orion Postgres")
    assert hit.score == 0.0


@pytest.mark.parametrize("rerank,expected", [
    # relevance 1, salience 0.5, recency 1, text_match 1, vector_match 1 for a lone note at age 0
    ({"relevance": 1.0, "salience": 2.0, "temporal": 0.0, "text_match": 0.0, "vector_match": 0.0},
     (1.0 + 2.0 * 0.5) / 3.0),
    ({"relevance": 0.0, "salience": 0.9, "temporal": 0.9, "text_match": 0.9, "vector_match": 0.0},
     (0.45 + 0.9 + 0.9) / 2.7),
])
def test_rerank_divides_by_the_sum_of_its_weights(make_pal_runtime, rerank, expected):
    rt = make_pal_runtime(config=config({"relevance": 0.7, "salience": 0.2, "temporal": 0.1}, rerank=rerank),
                          clock=lambda: NOW)
    rt.call("memory.remember", {"content": "Orion moves to Postgres", "salience": 0.5, "decay_factor": 0.0,
                                "occurred_at": NOW.isoformat()})
    (hit,) = recall(rt, "Orion Postgres")
    assert hit.breakdown.formula == "rerank"
    assert (hit.breakdown.text_match, hit.breakdown.vector_match) == (1.0, 1.0)
    assert 0.0 <= hit.score <= 1.0
    assert hit.score == pytest.approx(expected, abs=1e-12)

"""The recall score is the ADR 0008 formula, the breakdown is exactly what was ranked, and the weights (config
and runtime tunables) really change the ranking; the rerank stage and near-duplicate demotion."""
import math
import re
import tomllib
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.testing import open_test_runtime

ROOT = Path(__file__).resolve().parents[3]
ADR = ROOT / "adr" / "0008-memory-recall-pipeline.md"
DEFAULTS = tomllib.loads((ROOT / "packs" / "memory" / "defaults.toml").read_text(encoding="utf-8"))
HALF_LIFE = DEFAULTS["recency_half_life_days"]
NOW = datetime(2026, 3, 2, 12, 0, 0)
RERANK_FEATURES = {"relevance": "relevance", "salience": "effective_salience", "temporal": "recency",
                   "text_match": "text_match", "vector_match": "vector_match"}


def memory_config(embedder: str = "hashing", **memory: object) -> dict:
    return {"packs": {"memory": {"embedder": embedder, **memory}}}


def adr_formula() -> list[tuple[str, str]]:
    """The ```formula block of ADR 0008: ``name = expression`` lines, in order."""
    block = re.search(r"```formula\n(.*?)```", ADR.read_text(encoding="utf-8"), re.S)
    assert block, "ADR 0008 has no ```formula block"
    lines = [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]
    out = [tuple(part.strip() for part in ln.split("=", 1)) for ln in lines]
    assert [name for name, _ in out] == ["effective_salience", "recency", "score"]
    return out


FORMULA = adr_formula()


def evaluate_formula(hit) -> dict[str, float]:
    """Evaluate the ADR lines for one result: salience and decay from the note, the rest from the breakdown."""
    b = hit.breakdown
    env = {"salience": hit.note.salience, "decay_factor": hit.note.decay_factor, "age_days": b.age_days,
           "half_life_days": HALF_LIFE, "relevance": b.relevance, "w_rel": b.weights["relevance"],
           "w_sal": b.weights["salience"], "w_temp": b.weights["temporal"]}
    for name, expr in FORMULA:
        env[name] = eval(expr, {"__builtins__": {}, "exp": math.exp}, dict(env))  # noqa: S307 (our own ADR)
    return env


def remember(rt, content: str, **kw) -> int:
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def recall(rt, query: str, **kw):
    return rt.call("memory.recall", {"query": query, "now": NOW.isoformat(), "include_breakdown": True, **kw})


def seed(rt) -> None:
    """Notes that match "Orion Postgres migration" to different degrees, with different ages and saliences."""
    notes = [
        ("Orion Postgres migration plan, step one", 0, "episodic", None),
        ("Postgres migration finished for Orion", 3, "semantic", 0.9),
        ("Orion retro: the migration took too long", 40, "episodic", 0.1),
        ("Postgres tuning notes", 120, "semantic", None),
        ("Orion kickoff in the harbour office", 400, "episodic", 0.6),
        ("We decided Postgres over MySQL for Orion", 10, "semantic", 0.8),
    ]
    for content, days, mtype, sal in notes:
        kw = {"occurred_at": (NOW - timedelta(days=days, hours=days % 5)).isoformat(), "memory_type": mtype}
        if sal is not None:
            kw["salience"] = sal
        remember(rt, content, **kw)


# -- the formula ------------------------------------------------------------------------------------------
def test_the_adr_formula_block_matches_the_documented_default_weights():
    w = DEFAULTS["score_weights"]
    assert (w["relevance"], w["salience"], w["temporal"]) == (0.70, 0.20, 0.10)
    assert HALF_LIFE == 30.0
    assert all(v == 0 for v in DEFAULTS["rerank"].values())  # the default ranking is the formula, not rerank


@pytest.mark.parametrize("embedder,fusion", [
    ("hashing", "rrf"), ("hashing", "weighted"), ("hashing", "union"), ("hashing", "vector_only"),
    ("hashing", "keyword_only"), ("wordllama", "weighted"),
])
def test_every_result_scores_exactly_the_adr_formula(make_pal_runtime, embedder, fusion):
    rt = make_pal_runtime(config=memory_config(embedder), clock=lambda: NOW)
    seed(rt)
    hits = recall(rt, "Orion Postgres migration", fusion=fusion, limit=50).results
    assert len(hits) >= 3
    for hit in hits:
        b = hit.breakdown
        assert b.formula == "score"
        assert b.weights == DEFAULTS["score_weights"]
        assert "near_duplicate" not in b.context
        env = evaluate_formula(hit)
        assert env["effective_salience"] == pytest.approx(b.effective_salience, abs=1e-9)
        assert env["recency"] == pytest.approx(b.recency, abs=1e-9)
        assert env["score"] == pytest.approx(b.score, abs=1e-9)
        assert env["score"] == pytest.approx(hit.score, abs=1e-9)
        assert 0.0 <= hit.score <= 1.0 and 0.0 <= b.relevance <= 1.0
        expected_age = (NOW - hit.note.occurred_at).total_seconds() / 86400
        assert b.age_days == pytest.approx(expected_age, abs=1e-6)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for a, b in zip(hits, hits[1:]):
        if a.score == b.score:
            assert a.note.id < b.note.id


def test_ages_are_never_negative(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    remember(rt, "Orion launch is planned", occurred_at=(NOW + timedelta(days=5)).isoformat())
    hit = recall(rt, "Orion launch").results[0]
    assert hit.breakdown.age_days == 0.0 and hit.breakdown.recency == 1.0
    assert evaluate_formula(hit)["score"] == pytest.approx(hit.score, abs=1e-9)


def test_now_defaults_to_the_runtime_clock(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    remember(rt, "Orion launch", occurred_at=(NOW - timedelta(days=15)).isoformat())
    hit = rt.call("memory.recall", {"query": "Orion launch", "include_breakdown": True}).results[0]
    assert hit.breakdown.age_days == pytest.approx(15.0)
    assert hit.breakdown.recency == pytest.approx(0.5 ** 0.5)


def test_breakdown_is_only_returned_on_request(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    seed(rt)
    assert all(h.breakdown is None for h in rt.call("memory.recall", {"query": "Orion"}).results)


# -- the weights change the ranking -----------------------------------------------------------------------
RECENCY_HEAVY = {"relevance": 0.05, "salience": 0.5, "temporal": 0.45}


def pair(rt) -> tuple[int, int]:
    """``relevant``: matches the query best but is old and unimportant; ``fresh``: a weak match, recent, salient."""
    relevant = remember(rt, "Orion Postgres migration: the Orion Postgres migration runbook", salience=0.05,
                        occurred_at=(NOW - timedelta(days=300)).isoformat())
    fresh = remember(rt, "Postgres was mentioned in passing", salience=0.95,
                     occurred_at=(NOW - timedelta(hours=1)).isoformat())
    return relevant, fresh


def order(rt, namespace: str | None = None) -> list[int]:
    kw = {"namespace": namespace} if namespace else {}
    return [h.note.id for h in recall(rt, "Orion Postgres migration", **kw).results]


def test_config_weights_flip_the_ranking(make_pal_runtime):
    default = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    relevant, fresh = pair(default)
    assert order(default) == [relevant, fresh]
    tuned = make_pal_runtime(config=memory_config(score_weights=RECENCY_HEAVY), clock=lambda: NOW)
    assert pair(tuned) == (relevant, fresh)
    assert order(tuned) == [fresh, relevant]
    hit = recall(tuned, "Orion Postgres migration").results[0]
    assert hit.breakdown.weights == RECENCY_HEAVY
    assert evaluate_formula(hit)["score"] == pytest.approx(hit.score, abs=1e-9)


class Weights(BaseModel):
    model_config = ConfigDict(extra="forbid")
    relevance: float
    salience: float
    temporal: float


class Done(BaseModel):
    ok: bool = Field(True)


def brain_pack() -> Pack:
    """A stand-in for the brain: it sets the memory pack's score weights through the runtime's tunables."""
    p = Pack("tiny_brain", version="0.0.1", requires=["memory"])

    @p.verb("tune", act=Act.COMMISSIVE)
    def tune(params: Weights, ctx: Context) -> Done:
        """Set the three memory score weights for this namespace."""
        ctx.set_tunable("memory::relevance_weight", params.relevance)
        ctx.set_tunable("memory::salience_weight", params.salience)
        ctx.set_tunable("memory::temporal_weight", params.temporal)
        return Done()

    return p


def test_tunables_set_by_another_pack_flip_the_ranking(tmp_path):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(brain_pack(), discover=True, config=memory_config(), path=db,
                           clock=lambda: NOW) as rt:
        relevant, fresh = pair(rt)
        rt.call("memory.remember", {"content": "Orion Postgres migration: the Orion Postgres migration runbook",
                                    "namespace": "other"})
        assert order(rt) == [relevant, fresh]
        rt.call("tiny_brain.tune", RECENCY_HEAVY)
        assert order(rt) == [fresh, relevant]
        hit = recall(rt, "Orion Postgres migration").results[0]
        assert hit.breakdown.weights == RECENCY_HEAVY
        assert evaluate_formula(hit)["score"] == pytest.approx(hit.score, abs=1e-9)
        # tunables are per namespace
        other = recall(rt, "Orion Postgres migration", namespace="other").results[0]
        assert other.breakdown.weights == DEFAULTS["score_weights"]
    with open_test_runtime(brain_pack(), discover=True, config=memory_config(), path=db,
                           clock=lambda: NOW) as rt:
        assert order(rt) == [fresh, relevant]  # the weights persist across a reopen


def test_a_failed_tuning_call_changes_nothing(make_pal_runtime):
    rt = make_pal_runtime(brain_pack(), discover=True, config=memory_config(), clock=lambda: NOW)
    relevant, fresh = pair(rt)
    with pytest.raises(errors.InvalidParams):
        rt.call("tiny_brain.tune", {"relevance": 0.05, "salience": 0.5, "temporal": 1.5})  # out of range
    assert order(rt) == [relevant, fresh]
    assert recall(rt, "Orion").results[0].breakdown.weights == DEFAULTS["score_weights"]


# -- rerank -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("weights", [
    {"relevance": 0.0, "salience": 1.0, "temporal": 0.0, "text_match": 0.0, "vector_match": 0.0},
    {"relevance": 0.2, "salience": 0.1, "temporal": 0.3, "text_match": 0.25, "vector_match": 0.15},
])
def test_rerank_turns_on_with_nonzero_weights(make_pal_runtime, weights):
    rt = make_pal_runtime(config=memory_config(rerank=weights), clock=lambda: NOW)
    seed(rt)
    hits = recall(rt, "Orion Postgres migration", limit=50).results
    assert len(hits) >= 3
    total = sum(weights.values())
    for hit in hits:
        b = hit.breakdown
        assert b.formula == "rerank"
        assert b.weights == weights
        expected = sum(w * getattr(b, RERANK_FEATURES[k]) for k, w in weights.items()) / total
        assert b.score == pytest.approx(expected, abs=1e-9)
        assert hit.score == pytest.approx(expected, abs=1e-9)
        # its inputs are still the formula's
        env = evaluate_formula(hit)
        assert b.effective_salience == pytest.approx(env["effective_salience"], abs=1e-9)
        assert b.recency == pytest.approx(env["recency"], abs=1e-9)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    if weights["salience"] == 1.0:  # ranked by effective salience alone
        eff = [h.breakdown.effective_salience for h in hits]
        assert eff == sorted(eff, reverse=True)


def test_rerank_subhandler_alone(make_pal_runtime):
    weights = {"relevance": 1.0, "salience": 0.0, "temporal": 0.0, "text_match": 0.0, "vector_match": 3.0}
    rt = make_pal_runtime(config=memory_config(rerank=weights), clock=lambda: NOW)
    columns = {"formula": "score", "weights": {"relevance": 1.0}, "ids": [1, 2], "score": [0.9, 0.1],
               "relevance": [0.2, 0.2], "effective_salience": [0.9, 0.9], "recency": [0.5, 0.5],
               "text_match": [0.0, 0.0], "vector_match": [0.0, 1.0], "age_days": [1.0, 1.0]}
    res = rt.call("memory.recall_rerank", {"results": columns}, internal=True).results
    assert res.ids == [2, 1]
    assert res.score == pytest.approx([(0.2 + 3.0) / 4.0, 0.2 / 4.0])
    assert res.formula == "rerank" and res.weights == weights
    assert [res.breakdown(j).score for j in range(2)] == res.score


# -- near-duplicate demotion ------------------------------------------------------------------------------
def test_near_duplicates_are_demoted_and_the_breakdown_says_so(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    prefix = "Orion Postgres migration status report, week 12: everything on track, nothing more to add here at all. "
    assert len(prefix) >= DEFAULTS["near_duplicate_prefix"]
    first = remember(rt, prefix + "Signed, Ada.", salience=0.9)
    second = remember(rt, prefix + "Signed, Bob.", salience=0.8)
    third = remember(rt, "Orion Postgres migration blocked by a lock", salience=0.1,
                     occurred_at=(NOW - timedelta(days=60)).isoformat())
    hits = {h.note.id: h for h in recall(rt, "Orion Postgres migration", limit=50).results}
    assert set(hits) == {first, second, third}
    penalty = DEFAULTS["near_duplicate_penalty"]
    assert hits[first].breakdown.context.get("near_duplicate", 0.0) == 0.0
    assert hits[third].breakdown.context.get("near_duplicate", 0.0) == 0.0
    dup = hits[second]
    assert dup.breakdown.context["near_duplicate"] == penalty
    undemoted = evaluate_formula(dup)["score"]
    assert dup.score == pytest.approx(undemoted * (1 - penalty), abs=1e-9)
    assert dup.breakdown.score == dup.score
    ranked = [h.note.id for h in recall(rt, "Orion Postgres migration", limit=50).results]
    assert ranked.index(second) > ranked.index(first)
    scores = [h.score for h in recall(rt, "Orion Postgres migration", limit=50).results]
    assert scores == sorted(scores, reverse=True)


def test_near_duplicate_demotion_can_be_switched_off(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(near_duplicate_penalty=0.0), clock=lambda: NOW)
    prefix = "x" * 120
    remember(rt, prefix + " Orion Ada")
    remember(rt, prefix + " Orion Bob")
    for hit in recall(rt, "Orion").results:
        assert "near_duplicate" not in hit.breakdown.context
        assert evaluate_formula(hit)["score"] == pytest.approx(hit.score, abs=1e-9)


def test_an_aware_now_is_taken_as_utc(make_pal_runtime):
    rt = make_pal_runtime(config=memory_config(), clock=lambda: NOW)
    remember(rt, "Orion launch", occurred_at=(NOW - timedelta(days=2)).isoformat())
    naive = recall(rt, "Orion launch").results[0].breakdown
    aware = rt.call("memory.recall", {"query": "Orion launch", "include_breakdown": True,
                                      "now": "2026-03-02T14:00:00+02:00"}).results[0].breakdown  # = NOW in UTC
    assert aware.age_days == pytest.approx(naive.age_days) == pytest.approx(2.0)

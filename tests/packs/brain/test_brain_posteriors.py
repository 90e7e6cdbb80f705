"""The brain's arithmetic: the credit formula, the capped update (posteriors never saturate and keep adapting),
replay, sampling; and the settings contract (issue 6)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from brain_helpers import HASHING, NOW, Clock, pair, recall
from packs.brain import posteriors as post
from runtime import errors
from runtime.testing import open_test_runtime

CAP, FLOOR = 40.0, 1.0
PRIOR = {"relevance": (7.0, 3.0), "salience": (2.0, 8.0), "temporal": (1.0, 9.0)}


def test_credit_is_the_clipped_z_score_within_the_recall():
    feats = {"relevance": [1.0, 0.5, 0.0], "effective_salience": [0.2, 0.2, 0.2], "recency": [0.0, 0.1, 0.9]}
    g = post.credit(feats, 1)
    sd = math.sqrt(((1.0 - 0.5) ** 2 + 0 + 0.5 ** 2) / 3)
    assert g["relevance"] == pytest.approx(0.0)
    assert g["salience"] == 0.0  # flat: no credit either way
    assert g["temporal"] == pytest.approx((0.1 - 1.0 / 3) / math.sqrt(((0 - 1 / 3) ** 2 + (0.1 - 1 / 3) ** 2
                                                                           + (0.9 - 1 / 3) ** 2) / 3))
    assert post.credit(feats, 0)["relevance"] == pytest.approx(min(1.0, 0.5 / sd))
    assert post.credit(feats, 2)["temporal"] == 1.0  # clipped
    assert post.credit({k: [v[0]] for k, v in feats.items()}, 0) == {c: 0.0 for c in post.COMPONENTS}


def test_relative_credit_subtracts_the_notes_mean_standing():
    feats = {"relevance": [1.0, 0.0], "effective_salience": [0.3, 0.3], "recency": [0.2, 0.8]}
    # z = (1, flat, -1): the flat component is left out of the mean and gets nothing
    assert post.credit(feats, 0, relative=True) == pytest.approx({"relevance": 1.0, "salience": 0.0, "temporal": -1.0})
    feats["effective_salience"] = [0.9, 0.1]
    # z = (1, 1, -1), mean 1/3
    assert post.credit(feats, 0, relative=True) == pytest.approx({"relevance": 2 / 3, "salience": 2 / 3,
                                                                  "temporal": -1.0})
    # a note that stands out in everything gets no relative credit: scaling all weights changes no ranking
    all_up = {"relevance": [1.0, 0.0], "effective_salience": [1.0, 0.0], "recency": [1.0, 0.0]}
    assert post.credit(all_up, 0, relative=True) == {c: 0.0 for c in post.COMPONENTS}


def test_deltas_credit_and_debit_by_signal():
    g = {"relevance": 0.5, "salience": -1.0, "temporal": 0.0}
    assert post.deltas(g, "useful", 2.0) == {"relevance": (1.0, 0.0), "salience": (0.0, 2.0), "temporal": (0.0, 0.0)}
    assert post.deltas(g, "not_useful", 2.0) == {"relevance": (0.0, 1.0), "salience": (2.0, 0.0),
                                                 "temporal": (0.0, 0.0)}
    assert post.deltas(g, "correction", 1.0) == post.deltas(g, "not_useful", 1.0)


def test_the_cap_rescales_and_keeps_the_mean():
    s = post.apply({"relevance": (30.0, 9.0), "salience": PRIOR["salience"], "temporal": PRIOR["temporal"]},
                   {"relevance": (3.0, 0.0), "salience": (0.0, 0.0), "temporal": (0.0, 0.0)}, CAP, FLOOR)
    a, b = s["relevance"]
    assert a + b == pytest.approx(CAP) and a / (a + b) == pytest.approx(33 / 42)
    assert s["salience"] == PRIOR["salience"]


EVENT = st.tuples(st.sampled_from(["useful", "not_useful", "correction"]), st.floats(0.1, 2.0),
                  st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, min_size=1, max_size=1500))
def test_posteriors_never_saturate(events):
    state = dict(PRIOR)
    lo, hi = FLOOR / CAP, 1 - FLOOR / CAP
    for signal, w, g in events:
        state = post.apply(state, post.deltas(dict(zip(post.COMPONENTS, g)), signal, w), CAP, FLOOR)
        assert post.is_finite_state(state)
        for a, b in state.values():
            assert a >= FLOOR - 1e-12 and b >= FLOOR - 1e-12 and a + b <= CAP + 1e-9
            assert lo - 1e-12 <= a / (a + b) <= hi + 1e-12


@settings(max_examples=20, deadline=None)
@given(st.integers(200, 3000), st.sampled_from(list(post.COMPONENTS)))
def test_a_changed_preference_is_learnt_back_in_a_bounded_number_of_events(n, component):
    """However long a preference held, 30 explicit events the other way bring the mean back below 0.5."""
    push = {c: (1.0 if c == component else 0.0) for c in post.COMPONENTS}
    state = dict(PRIOR)
    for _ in range(n):
        state = post.apply(state, post.deltas(push, "useful", 1.5), CAP, FLOOR)
    assert post.mean(state)[component] == pytest.approx(1 - FLOOR / CAP)
    for _ in range(30):
        state = post.apply(state, post.deltas(push, "not_useful", 1.5), CAP, FLOOR)
    assert post.mean(state)[component] < 0.5


def test_replay_and_sample_are_deterministic():
    prior = {c: {"alpha": a, "beta": b} for c, (a, b) in PRIOR.items()}
    d = post.deltas({"relevance": 1.0, "salience": -0.5, "temporal": 0.2}, "useful", 1.5)
    log = [("init", {"prior": prior}), ("feedback", {"delta": d, "cap": CAP, "floor": FLOOR})]
    state, n = post.replay(log)
    assert n == 1 and state == post.apply(dict(PRIOR), d, CAP, FLOOR)
    assert post.replay(log + [("reset", {"prior": prior})]) == (dict(PRIOR), 0)
    assert post.sample(state, "x") == post.sample(state, "x") != post.sample(state, "y")
    with pytest.raises(ValueError):
        post.replay([("feedback", {"delta": d, "cap": CAP, "floor": FLOOR})])


def test_many_feedback_events_through_the_runtime_stay_inside_the_bounds(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rid = recall(rt).recall_id
    for signal in ["useful"] * 150 + ["not_useful"] * 40:
        res = rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": signal})
        for p in res.state.posteriors.values():
            assert p.alpha + p.beta <= CAP + 1e-9 and FLOOR / CAP - 1e-12 <= p.mean <= 1 - FLOOR / CAP + 1e-12
    m = {c: p.mean for c, p in res.state.posteriors.items()}
    assert m["temporal"] < 0.5 and m["relevance"] > 0.5  # the switch was learnt back
    assert rt.call("brain.replay").matches


@pytest.mark.parametrize("bad", [
    {"ess_cap": 1.5},
    {"weights": {"explicit": 0.4}},  # explicit must weigh more than implicit
    {"priors": {"relevance": {"alpha": 70.0, "beta": 30.0}}},  # beyond the cap
    {"unknown_key": 1},
])
def test_bad_brain_settings_are_a_config_error(bad):
    with pytest.raises(errors.ConfigError):
        open_test_runtime(config={**HASHING, "packs": {**HASHING["packs"], "brain": bad}})

"""The brain's arithmetic: the credit formula, the capped update (posteriors never saturate and keep adapting),
replay, sampling; and the settings contract (issue 6)."""
import math

import pytest
from hypothesis import given, settings, strategies as st

from brain_helpers import HASHING, NOW, Clock, pair, recall
from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime

CAP, FLOOR = 40.0, 1.0
PRIOR = {"relevance": (7.0, 3.0), "salience": (2.0, 8.0), "temporal": (1.0, 9.0)}


W = {"relevance": 0.7, "salience": 0.2, "temporal": 0.1}
FEATS = {"relevance": [1.0, 0.5, 0.0], "effective_salience": [0.2, 0.8, 0.2], "recency": [0.0, 0.1, 0.9]}


def lead(feats: dict, j: int, w: dict) -> float:
    """The note's score minus the recall's average score, with the memory score formula Σ w x / Σ w."""
    cols = [feats[post.FEATURE_OF[c]] for c in post.COMPONENTS]
    scores = [sum(w[c] * col[i] for c, col in zip(post.COMPONENTS, cols)) / sum(w.values())
              for i in range(len(cols[0]))]
    return scores[j] - sum(scores) / len(scores)


def test_absolute_credit_is_the_clipped_z_score_within_the_recall():
    feats = {"relevance": [1.0, 0.5, 0.0], "effective_salience": [0.2, 0.2, 0.2], "recency": [0.0, 0.1, 0.9]}
    g = post.credit(feats, 1, relative=False)
    sd = math.sqrt(((1.0 - 0.5) ** 2 + 0 + 0.5 ** 2) / 3)
    assert g["relevance"] == pytest.approx(0.0)
    assert g["salience"] == 0.0  # flat: no credit either way
    assert g["temporal"] == pytest.approx((0.1 - 1.0 / 3) / math.sqrt(((0 - 1 / 3) ** 2 + (0.1 - 1 / 3) ** 2
                                                                           + (0.9 - 1 / 3) ** 2) / 3))
    assert post.credit(feats, 0, relative=False)["relevance"] == pytest.approx(min(1.0, 0.5 / sd))
    assert post.credit(feats, 2, relative=False)["temporal"] == 1.0  # clipped
    assert post.credit({k: [v[0]] for k, v in feats.items()}, 0, relative=False) == {c: 0.0 for c in post.COMPONENTS}


@pytest.mark.parametrize("j", [0, 1, 2])
def test_relative_credit_is_the_derivative_of_the_notes_lead_in_the_score(j):
    g = post.credit(FEATS, j, W)
    eps = 1e-6
    grad = {c: (lead(FEATS, j, {**W, c: W[c] + eps}) - lead(FEATS, j, {**W, c: W[c] - eps})) / (2 * eps)
            for c in post.COMPONENTS}
    top = max(abs(v) for v in grad.values())
    assert g == pytest.approx({c: v / top for c, v in grad.items()}, abs=1e-6)  # same direction, largest ±1
    assert max(abs(v) for v in g.values()) == pytest.approx(1.0)
    assert sum(W[c] * g[c] for c in post.COMPONENTS) == pytest.approx(0.0, abs=1e-12)  # nothing along scaling


def test_relative_credit_edge_cases():
    # a note that leads by the same amount in everything: no weight change would move it, no credit
    all_up = {"relevance": [1.0, 0.0], "effective_salience": [1.0, 0.0], "recency": [1.0, 0.0]}
    assert post.credit(all_up, 0, W) == {c: 0.0 for c in post.COMPONENTS}
    assert post.credit({k: [v[0]] for k, v in FEATS.items()}, 0, W) == {c: 0.0 for c in post.COMPONENTS}
    # no recorded weights: every component counts alike
    assert post.credit(FEATS, 1, {}) == post.credit(FEATS, 1, {c: 1.0 for c in post.COMPONENTS})
    # a flat component is credited as the note's lead in the score is not: raising it dilutes that lead
    flat = {**FEATS, "effective_salience": [0.3, 0.3, 0.3]}
    assert post.credit(flat, 0, W)["salience"] < 0 < post.credit(flat, 2, W)["salience"]


def test_deltas_are_a_pseudo_observation_around_the_mean():
    g = {"relevance": 0.5, "salience": -1.0, "temporal": 0.0}
    d = post.deltas(g, "useful", 2.0, PRIOR)
    mu = {c: a / (a + b) for c, (a, b) in PRIOR.items()}
    for c in post.COMPONENTS:
        y = mu[c] + mu[c] * (1 - mu[c]) * g[c]
        assert d[c] == pytest.approx((2.0 * y, 2.0 * (1 - y)))
    assert d["temporal"] == pytest.approx((0.2, 1.8))  # no credit: an observation at the mean, which stays
    assert post.deltas(g, "not_useful", 2.0, PRIOR)["salience"] == pytest.approx((2 * (0.2 + 0.16), 2 * 0.64))
    assert post.deltas(g, "correction", 1.0, PRIOR) == post.deltas(g, "not_useful", 1.0, PRIOR)


@given(st.floats(0.001, 0.999), st.floats(-1.0, 1.0), st.floats(0.1, 2.0), st.floats(2.0, 40.0))
def test_one_event_moves_the_mean_by_w_mu_one_minus_mu_v_over_n_plus_w(mu, v, w, n):
    state = {c: (mu * n, (1 - mu) * n) for c in post.COMPONENTS}
    d = post.deltas({c: v for c in post.COMPONENTS}, "useful", w, state)
    a, b = d["salience"]
    assert a >= 0 and b >= 0  # y stays in [0, 1]: credit and debit are both pseudo-counts
    after = (mu * n + a) / (n + w)
    assert after - mu == pytest.approx(w * mu * (1 - mu) * v / (n + w), abs=1e-12)


def test_the_cap_rescales_and_keeps_the_mean():
    s = post.apply({"relevance": (30.0, 9.0), "salience": PRIOR["salience"], "temporal": PRIOR["temporal"]},
                   {"relevance": (3.0, 0.0), "salience": (0.0, 0.0), "temporal": (0.0, 0.0)}, CAP, FLOOR)
    a, b = s["relevance"]
    assert a + b == pytest.approx(CAP) and a / (a + b) == pytest.approx(33 / 42)
    assert s["salience"] == PRIOR["salience"]


def stream(credits, signal="useful", w=1.5, start=PRIOR):
    state = dict(start)
    for v in credits:
        state = post.apply(state, post.deltas({c: v for c in post.COMPONENTS}, signal, w, state), CAP, FLOOR)
    return state


def share_rule(credits, w=1.5, start=PRIOR):
    """The first version's update (α += w·v⁺, β += w·v⁻), kept here to show what the test tells apart."""
    state = dict(start)
    for v in credits:
        state = post.apply(state, {c: (w * max(v, 0.0), w * max(-v, 0.0)) for c in post.COMPONENTS}, CAP, FLOOR)
    return state


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2 ** 32 - 1))
def test_a_component_with_a_net_debit_falls_to_the_floor_and_noise_does_not_pull_it_to_one_half(seed):
    """The phase-1 failure of the first version: a mean settled at the component's share of credit, so one
    with a net debit stayed well above 0 and one credited as often as debited went to 0.5. Now the mean follows
    the net credit; pure noise only drifts it slowly (second order in w / (n + w)) towards the nearer bound."""
    import random
    rng = random.Random(seed)
    debit = [1.0 if rng.random() < 0.4 else -1.0 for _ in range(1500)]  # net −0.2, as noisy as it gets
    assert post.mean(stream(debit))["salience"] < 0.05
    # the share rule stays at its share of credit: 0.395 with sigma 0.068 over 400 seeds (the cap keeps ~27 events'
    # worth of evidence); 0.1 is 4.3 sigma below it and still twice the 0.05 the net-credit rule falls under (a bound
    # of 0.2 was 2.9 sigma: seed 6668544 gave 0.1998, about one run in fifty)
    assert post.mean(share_rule(debit))["salience"] > 0.1
    noise = [1.0, -1.0] * 750
    assert 0.1 < post.mean(stream(noise))["salience"] < 0.2  # from 0.2
    assert post.mean(share_rule(noise))["salience"] == pytest.approx(0.5, abs=0.03)


EVENT = st.tuples(st.sampled_from(["useful", "not_useful", "correction"]), st.floats(0.1, 2.0),
                  st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3))


@settings(max_examples=60, deadline=None)
@given(st.lists(EVENT, min_size=1, max_size=1500))
def test_posteriors_never_saturate(events):
    state = dict(PRIOR)
    lo, hi = FLOOR / CAP, 1 - FLOOR / CAP
    for signal, w, g in events:
        state = post.apply(state, post.deltas(dict(zip(post.COMPONENTS, g)), signal, w, state), CAP, FLOOR)
        assert all(math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0 for a, b in state.values())
        for a, b in state.values():
            assert a >= FLOOR - 1e-12 and b >= FLOOR - 1e-12 and a + b <= CAP + 1e-9
            assert lo - 1e-12 <= a / (a + b) <= hi + 1e-12


@settings(max_examples=10, deadline=None)
@given(st.integers(200, 3000))
def test_a_changed_preference_is_learnt_back_in_a_bounded_number_of_events(n):
    """However long a preference held, 103 explicit events of full credit the other way (ADR 0010) bring the mean
    back below 0.5: the cap bounds the log-odds at logit(39/40) and every event moves them by 1.5 / 41.5."""
    held = stream([1.0] * n)
    assert post.mean(held)["temporal"] == pytest.approx(1 - FLOOR / CAP, abs=1e-3)
    assert post.mean(stream([1.0] * 102, "not_useful", start=held))["temporal"] > 0.5
    assert post.mean(stream([1.0] * 103, "not_useful", start=held))["temporal"] < 0.5


def test_replay_and_sample_are_deterministic():
    prior = {c: {"alpha": a, "beta": b} for c, (a, b) in PRIOR.items()}
    d = post.deltas({"relevance": 1.0, "salience": -0.5, "temporal": 0.2}, "useful", 1.5, PRIOR)
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
    for signal in ["useful"] * 200 + ["not_useful"] * 200:
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

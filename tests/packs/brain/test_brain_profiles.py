"""brain.profile / brain.state / brain.reset / brain.replay: profiles isolate, a reset is logged, the event log
replays to the stored state, and without the brain recall keeps the configured defaults (issue 6)."""
import json
import random

import pytest

from brain_helpers import DEFAULT_WEIGHTS, HASHING, NOW, Clock, means, order, pair, recall, weights_used
from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.runtime import errors

PRIOR = {"relevance": (7.0, 3.0), "salience": (2.0, 8.0), "temporal": (1.0, 9.0)}


def useful_fresh(rt, relevant, fresh, n=1, **kw):
    for _ in range(n):
        rid = recall(rt).recall_id
        rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful", **kw})
        rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "not_useful", **kw})


def test_profiles_isolate_and_binding_the_namespace_switches_recall_weights(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    pair(rt, namespace="team")
    made = rt.call("brain.profile", {"name": "alice", "actor": "alice"})
    # bound to an actor: not the namespace's profile, but its (prior) weights are now set for alice
    assert made.created and made.bound_to == "alice" and not made.state.active
    assert made.projected == pytest.approx(DEFAULT_WEIGHTS)
    assert means(made.state) == pytest.approx(DEFAULT_WEIGHTS)
    useful_fresh(rt, relevant, fresh, 15, actor="alice")
    alice = rt.call("brain.state", {"actor": "alice"}).state
    assert alice.profile == "alice" and alice.feedback_events == 30
    assert means(alice)["temporal"] > 0.3
    # alice's feedback did not touch the namespace's profile, nor the weights recall uses for anyone else
    default = rt.call("brain.state").state
    assert default.profile == "default" and means(default) == pytest.approx(DEFAULT_WEIGHTS)
    assert weights_used(rt) == DEFAULT_WEIGHTS and order(rt) == [relevant, fresh]
    assert weights_used(rt, actor="bob") == DEFAULT_WEIGHTS
    # bob has no binding: he falls back to the namespace's profile
    bob = rt.call("brain.state", {"actor": "bob"}).state
    assert bob.profile == "default"
    # binding alice's profile to the namespace makes recall rank with her weights…
    bound = rt.call("brain.profile", {"name": "alice"})
    assert not bound.created and bound.bound_to == "*" and bound.state.active
    assert weights_used(rt) == pytest.approx(means(alice), abs=1e-12)
    assert order(rt) == [fresh, relevant]
    assert rt.call("brain.state").bindings == {"*": "alice", "alice": "alice"}
    # …in this namespace only
    assert weights_used(rt, namespace="team") == DEFAULT_WEIGHTS
    with pytest.raises(errors.NotFound):
        rt.call("brain.state", {"profile": "alice", "namespace": "team"})
    # switching back to the default profile restores its (untouched) weights
    rt.call("brain.profile", {"name": "default"})
    assert weights_used(rt) == pytest.approx(DEFAULT_WEIGHTS)


def test_create_without_binding_and_bad_profile_params(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    res = rt.call("brain.profile", {"name": "draft", "bind": False})
    assert res.created and res.bound_to is None
    assert rt.call("brain.state", {"profile": "draft"}).state.profile == "draft"
    assert rt.call("brain.state").bindings == {}
    for bad in ({"name": ""}, {"name": "has space"}, {"name": "x", "actor": "a b"}, {"name": "x", "colour": 1}):
        with pytest.raises(errors.InvalidParams):
            rt.call("brain.profile", bad)


def test_reset_returns_to_the_prior_keeps_the_log_and_restores_default_weights(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    useful_fresh(rt, relevant, fresh, 5)
    assert weights_used(rt) != DEFAULT_WEIGHTS
    res = rt.call("brain.reset")
    assert res.state.feedback_events == 0
    assert {c: (p.alpha, p.beta) for c, p in res.state.posteriors.items()} == PRIOR
    assert weights_used(rt) == pytest.approx(DEFAULT_WEIGHTS)
    assert order(rt) == [relevant, fresh]
    kinds = [e.kind for e in rt.call("brain.state", {"events": 100}).events]
    assert kinds[0] == "reset" and kinds.count("feedback") == 10 and kinds[-1] == "init"
    assert rt.call("brain.replay").matches
    with pytest.raises(errors.NotFound):
        rt.call("brain.reset", {"profile": "nobody"})


def test_replaying_the_event_log_rebuilds_the_same_state(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rng = random.Random(7)
    for i in range(60):
        rid = recall(rt).recall_id
        note = rng.choice([relevant, fresh])
        signal = rng.choice(["useful", "not_useful", "correction"])
        rt.call("brain.feedback", {"recall_id": rid, "note_id": note, "signal": signal,
                                   "source": rng.choice(["explicit", "implicit"])})
        if i == 30:
            rt.call("brain.reset")
    res = rt.call("brain.replay")
    assert res.matches and res.events == 62 and res.replayed == res.stored
    # the same fold, done here from the raw rows, gives the stored numbers bit for bit
    rows = rt.store.con.execute("SELECT kind, payload FROM brain.events WHERE profile = 'default' ORDER BY seq").fetchall()
    state, n = post.replay((k, json.loads(p)) for k, p in rows)
    stored = rt.call("brain.state").state
    assert n == stored.feedback_events == 29
    assert {c: (p.alpha, p.beta) for c, p in stored.posteriors.items()} == state
    # and a tampered cache is detected
    rt.store.con.execute("UPDATE brain.posteriors SET alpha = alpha + 1 WHERE component = 'salience'")
    assert not rt.call("brain.replay").matches


def test_untouched_profile_replays_to_the_prior(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    res = rt.call("brain.replay")
    assert res.matches and res.events == 0
    assert {c: (p.alpha, p.beta) for c, p in res.stored.items()} == PRIOR


def test_without_the_brain_recall_uses_the_configured_defaults(make_pal_runtime):
    rt = make_pal_runtime(config={**HASHING, "runtime": {"disabled": ["brain"]}}, clock=Clock(NOW))
    assert "brain" not in rt.catalog.packs
    relevant, fresh = pair(rt)
    assert weights_used(rt) == DEFAULT_WEIGHTS and order(rt) == [relevant, fresh]
    assert recall(rt).results[0].breakdown is None
    with pytest.raises(errors.PalimpsestError):
        rt.call("brain.state")
    schemas = {r[0] for r in rt.store.con.execute("SELECT schema_name FROM information_schema.schemata").fetchall()}
    assert "brain" not in schemas
    # the memory config still rules: other defaults are used as they are
    tuned = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "score_weights": {
        "relevance": 0.1, "salience": 0.1, "temporal": 0.8}}}, "runtime": {"disabled": ["brain"]}}, clock=Clock(NOW))
    pair(tuned)
    assert weights_used(tuned) == {"relevance": 0.1, "salience": 0.1, "temporal": 0.8}


def test_state_and_replay_are_read_only(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    rt.call("brain.state", {"profile": "default", "events": 10})
    rt.call("brain.replay", {"profile": "default"})
    assert rt.store.con.execute("SELECT count(*) FROM brain.events").fetchone() == (0,)
    assert rt.store.con.execute("SELECT count(*) FROM brain.posteriors").fetchone() == (0,)

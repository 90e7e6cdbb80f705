"""brain.replay and the stored posteriors, checked against a fold written here from ADR 0010 (issue 22, item 5).

The other replay tests compare the stored state with the product's own ``posteriors.replay``: a bug shared by the
fold and the update would pass them. This test folds the event log itself: ``init``/``reset`` start from the
event's prior; ``feedback`` adds its (Δα, Δβ), rescales both by ``cap / (α + β)`` when their sum passes ``cap``,
then raises a parameter below ``floor`` to it, taking as much from the other.
"""
import json
import random

import pytest

from brain_helpers import HASHING, NOW, Clock, pair, recall

PRIOR = {"relevance": (7.0, 3.0), "salience": (2.0, 8.0), "temporal": (1.0, 9.0)}  # packs/brain/defaults.toml


def fold(events: list[tuple[str, dict]]) -> tuple[dict[str, tuple[float, float]], int]:
    state: dict[str, tuple[float, float]] = {}
    n = 0
    for kind, payload in events:
        if kind in ("init", "reset"):
            state = {c: (float(p["alpha"]), float(p["beta"])) for c, p in payload["prior"].items()}
            n = 0
            continue
        assert kind == "feedback", kind
        cap, floor = payload["cap"], payload["floor"]
        for c, (a, b) in state.items():
            da, db = payload["delta"][c]
            a, b = a + da, b + db
            if a + b > cap:
                a, b = a * cap / (a + b), b * cap / (a + b)
            total = a + b
            if a < floor:
                a, b = floor, total - floor
            elif b < floor:
                a, b = total - floor, floor
            state[c] = (a, b)
        n += 1
    return state, n


def test_the_stored_state_is_the_independent_fold_of_the_event_log(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rng = random.Random(11)
    for i in range(80):
        rid = recall(rt).recall_id
        rt.call("brain.feedback", {"recall_id": rid, "note_id": rng.choice([relevant, fresh]),
                                   "signal": rng.choice(["useful", "not_useful", "correction"]),
                                   "source": rng.choice(["explicit", "implicit"])})
        if i == 50:
            rt.call("brain.reset")
    rows = rt.store.con.execute("SELECT kind, payload FROM brain.events WHERE profile = 'default' "
                           "ORDER BY seq").fetchall()
    events = [(k, json.loads(p)) for k, p in rows]
    assert [k for k, _ in events].count("feedback") == 80 and [k for k, _ in events][0] == "init"
    state, n = fold(events)
    assert n == 29  # feedback events after the reset at i == 50
    stored = rt.call("brain.state").state
    assert stored.feedback_events == 29
    got = {c: (p.alpha, p.beta) for c, p in stored.posteriors.items()}
    assert got.keys() == PRIOR.keys()
    for c in PRIOR:
        assert got[c] == pytest.approx(state[c], rel=1e-12, abs=0)
    assert state != PRIOR  # the feedback moved something: the comparison above is not prior against prior
    res = rt.call("brain.replay")
    assert res.matches and res.events == len(events)
    for c in PRIOR:
        assert (res.replayed[c].alpha, res.replayed[c].beta) == pytest.approx(state[c], rel=1e-12, abs=0)


def test_an_untouched_profile_is_the_literal_prior(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    res = rt.call("brain.replay")
    assert res.matches and res.events == 0
    assert {c: (p.alpha, p.beta) for c, p in res.replayed.items()} == PRIOR
    assert {c: (p.alpha, p.beta) for c, p in rt.call("brain.state").state.posteriors.items()} == PRIOR

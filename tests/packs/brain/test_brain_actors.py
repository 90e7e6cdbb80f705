"""Per-actor profiles are served at recall (issue 6): a call made for an actor ranks with the weights of the
profile bound to that actor; an actor without a binding ranks with the namespace's; rebinding and unbinding
leave no stale weights behind; serves record the actor and the profile that ranked them."""
import pytest

from brain_helpers import DEFAULT_WEIGHTS, HASHING, NOW, Clock, means, order, pair, recall, snapshot, weights_used
from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime


def teach(rt, good: int, bad: int, rounds: int, actor: str | None = None) -> None:
    """Recall for ``actor`` and say ``good`` was useful and ``bad`` was not (the feedback call carries the actor)."""
    for _ in range(rounds):
        rid = recall(rt, actor=actor).recall_id
        rt.call("brain.feedback", {"recall_id": rid, "note_id": good, "signal": "useful"}, actor=actor)
        rt.call("brain.feedback", {"recall_id": rid, "note_id": bad, "signal": "not_useful"}, actor=actor)


def state_of(rt, actor: str | None = None, **kw):
    return rt.call("brain.state", kw, actor=actor).state


def two_actors(rt) -> tuple[int, int]:
    relevant, fresh = pair(rt)
    rt.call("brain.profile", {"name": "recent", "actor": "alice"})
    rt.call("brain.profile", {"name": "topical", "actor": "bob"})
    teach(rt, fresh, relevant, 12, actor="alice")  # alice wants the fresh, salient note
    teach(rt, relevant, fresh, 12, actor="bob")  # bob wants the one that matches the query
    return relevant, fresh


def test_two_actors_in_one_namespace_rank_with_their_own_profiles(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = two_actors(rt)
    alice, bob = state_of(rt, "alice"), state_of(rt, "bob")
    assert (alice.profile, alice.feedback_events, bob.profile, bob.feedback_events) == ("recent", 24, "topical", 24)
    assert means(alice)["temporal"] > DEFAULT_WEIGHTS["temporal"] > means(bob)["temporal"]
    # the same query, the same namespace: different rankings, each with its own profile's posterior means
    assert order(rt, actor="alice") == [fresh, relevant]
    assert order(rt, actor="bob") == [relevant, fresh]
    assert weights_used(rt, actor="alice") == pytest.approx(means(alice), abs=1e-12)
    assert weights_used(rt, actor="bob") == pytest.approx(means(bob), abs=1e-12)
    # the namespace's profile learned nothing, and an actor without a binding ranks with it
    assert means(state_of(rt)) == pytest.approx(DEFAULT_WEIGHTS)
    assert weights_used(rt) == weights_used(rt, actor="carol") == DEFAULT_WEIGHTS
    assert order(rt, actor="carol") == [relevant, fresh]
    assert state_of(rt, "alice").profile == "recent"
    assert rt.call("brain.state", {}, actor="alice").projected == pytest.approx(means(alice), abs=1e-12)
    assert rt.call("brain.state", {}, actor="carol").projected is None  # nothing set for carol's namespace yet


def test_an_unbound_actor_follows_the_namespace_as_it_learns(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = two_actors(rt)
    alice_before = weights_used(rt, actor="alice")
    teach(rt, fresh, relevant, 6)  # feedback for nobody in particular: the namespace's (default) profile
    namespace = means(state_of(rt))
    assert namespace != pytest.approx(DEFAULT_WEIGHTS)
    assert weights_used(rt) == pytest.approx(namespace, abs=1e-12)
    assert weights_used(rt, actor="carol") == pytest.approx(namespace, abs=1e-12)
    assert weights_used(rt, actor="alice") == alice_before  # bound actors keep their own


def test_rebinding_and_unbinding_leave_no_stale_actor_weights(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = two_actors(rt)
    teach(rt, relevant, fresh, 3)  # the namespace's default profile moves away from the prior too
    default = means(state_of(rt))
    # alice back on the default profile: her weights are the default profile's, not "recent"'s…
    rt.call("brain.profile", {"name": "default", "actor": "alice"})
    assert weights_used(rt, actor="alice") == pytest.approx(default, abs=1e-12)
    assert order(rt, actor="alice") == order(rt)
    # …and they follow it as it learns (the profile's projection covers every actor bound to it)
    teach(rt, relevant, fresh, 3)
    assert weights_used(rt, actor="alice") == pytest.approx(means(state_of(rt)), abs=1e-12)
    # bob unbound: his own rows are gone, he ranks with the namespace's weights
    res = rt.call("brain.unbind", {"actor": "bob"})
    assert (res.actor, res.was, res.now) == ("bob", "topical", "default")
    rows = rt.store.con.execute("SELECT count(*) FROM _palimpsest.tunables WHERE actor = 'bob'").fetchone()
    assert rows == (0,)
    assert weights_used(rt, actor="bob") == weights_used(rt)
    assert state_of(rt, "bob").profile == "default"
    # binding bob again brings "topical"'s learned weights back
    rt.call("brain.profile", {"name": "topical", "actor": "bob"})
    assert weights_used(rt, actor="bob") == pytest.approx(means(state_of(rt, profile="topical")), abs=1e-12)
    assert order(rt, actor="bob") == [relevant, fresh]
    # the namespace bound to "recent", then unbound: it falls back to the default profile's weights
    rt.call("brain.profile", {"name": "recent"})
    assert weights_used(rt, actor="carol") == pytest.approx(means(state_of(rt, profile="recent")), abs=1e-12)
    res = rt.call("brain.unbind")
    assert (res.actor, res.was, res.now) == ("*", "recent", "default")
    assert weights_used(rt, actor="carol") == pytest.approx(means(state_of(rt, profile="default")), abs=1e-12)


def test_reset_of_an_actor_profile_restores_that_actors_default_weights(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = two_actors(rt)
    res = rt.call("brain.reset", {}, actor="alice")  # the call's actor picks alice's profile
    assert res.state.profile == "recent" and res.projected == pytest.approx(DEFAULT_WEIGHTS)
    assert weights_used(rt, actor="alice") == pytest.approx(DEFAULT_WEIGHTS)
    assert order(rt, actor="alice") == [relevant, fresh]
    assert order(rt, actor="bob") == [relevant, fresh] and state_of(rt, "bob").feedback_events == 24


def test_serves_are_recorded_for_the_actor_and_its_profile_and_feedback_credits_it(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rt.call("brain.profile", {"name": "recent", "actor": "alice"})
    for_alice = recall(rt, actor="alice").recall_id  # the recall_served subscriber runs for alice too
    for_nobody = recall(rt).recall_id
    kept = rt.pack_state("brain").serves.pending
    assert (kept[for_alice].actor, kept[for_alice].profile) == ("alice", "recent")
    assert (kept[for_nobody].actor, kept[for_nobody].profile) == (None, "default")
    assert rt.call("brain.flush_serves", {}, internal=True).flushed == 2
    rows = {r: (a, p) for r, a, p in rt.store.con.execute("SELECT recall_id, actor, profile FROM brain.serves").fetchall()}
    assert rows == {for_alice: ("alice", "recent"), for_nobody: (None, "default")}
    # feedback on alice's recall, given without any actor, credits the profile that served her
    res = rt.call("brain.feedback", {"recall_id": for_alice, "note_id": fresh, "signal": "useful"})
    assert res.profile == "recent" and res.projected is not None
    assert weights_used(rt, actor="alice") == pytest.approx(res.projected, abs=1e-12)
    assert state_of(rt).feedback_events == 0
    events = rt.call("brain.state", {"profile": "recent", "events": 5}).events
    assert events[0].kind == "feedback" and events[0].actor == "alice"


def test_actor_weights_survive_reopening(tmp_path):
    db = tmp_path / "pal.duckdb"
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:
        relevant, fresh = two_actors(rt)
        before = {a: weights_used(rt, actor=a) for a in ("alice", "bob", "carol")}
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:
        assert {a: weights_used(rt, actor=a) for a in ("alice", "bob", "carol")} == before
        assert order(rt, actor="alice") == [fresh, relevant] and order(rt, actor="bob") == [relevant, fresh]


@pytest.mark.parametrize("bad", ["*", "two words", "", "x" * 129])
def test_a_bad_actor_is_refused_and_nothing_is_written(make_pal_runtime, bad):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rid = recall(rt, actor="alice").recall_id
    before = snapshot(rt)
    for verb, params in (("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful"}),
                         ("memory.remember", {"content": "written for nobody"}),
                         ("brain.profile", {"name": "x"}), ("memory.recall", {"query": "Postgres"})):
        with pytest.raises(errors.InvalidParams, match="actor"):
            rt.call(verb, params, actor=bad)
    with pytest.raises(errors.InvalidParams):  # and as a brain param, by the params model
        rt.call("brain.profile", {"name": "x", "actor": bad})
    rt.call("brain.flush_serves", {}, internal=True)  # the one good recall's serve, nothing else
    after = snapshot(rt)
    assert len(after["brain.serves"]) == len(before["brain.serves"]) + 1
    after.pop("brain.serves"), before.pop("brain.serves")
    assert after == before


def test_a_store_from_before_actor_projections_is_migrated(tmp_path):
    """brain 002 keeps the namespace projections (as actor '*') and the serves written before it."""
    import shutil

    from palimpsest_memory.packs.brain.pack import pack as brain
    from palimpsest_memory.runtime import storage

    first = tmp_path / "brain_sql_v1"
    first.mkdir()
    shutil.copy(brain.migrations / "001_brain.sql", first)
    db = tmp_path / "pal.duckdb"
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:  # memory and kg as they are
        rt.store.con.execute("DROP SCHEMA brain CASCADE; DELETE FROM _palimpsest.migrations WHERE pack = 'brain'")
    con = storage.open_store(db).con
    storage.migrate(con, "brain", first)
    con.execute("INSERT INTO brain.projections VALUES ('default', 'default', 0.6, 0.3, 0.1, false, ?)", [NOW])
    con.execute("INSERT INTO brain.serves VALUES ('r1', 'default', 'q', ?, '{}')", [NOW])
    con.close()
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:
        assert rt.schema_versions()["brain"] == 4  # 002, then 003 (the compact serve ledger), 004 (namespace keys)
        assert rt.call("brain.state").projected == {"relevance": 0.6, "salience": 0.3, "temporal": 0.1}
        assert rt.call("brain.state", {"actor": "alice"}).projected == {"relevance": 0.6, "salience": 0.3,
                                                                         "temporal": 0.1}
        assert rt.store.con.execute("SELECT recall_id, actor, profile FROM brain.serves").fetchall() == [("r1", None, None)]

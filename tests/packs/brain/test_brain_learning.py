"""brain.feedback end to end: the posteriors move, the weights are projected, the next recall's ranking flips;
state survives a reopen; the ledger is filled by observing recall, which stays read-only (issue 6)."""
from datetime import timedelta

import pytest
from pydantic import BaseModel, ConfigDict

from brain_helpers import (DEFAULT_WEIGHTS, HASHING, NOW, QUERY, Clock, means, order, pair, recall,
                           snapshot, weights_used)
from runtime import Act, Context, Pack, Visibility, errors
from runtime.testing import open_test_runtime


def teach_recency(rt, relevant: int, fresh: int, rounds: int, **kw) -> list:
    """A user who wants the fresh note: each round, recall and say so (and that the old one was not useful)."""
    out = []
    for _ in range(rounds):
        rid = recall(rt).recall_id
        out.append(rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful", **kw}))
        out.append(rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "not_useful", **kw}))
    return out


def test_feedback_moves_the_posteriors_and_flips_the_next_recall(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    assert order(rt) == [relevant, fresh]
    assert weights_used(rt) == DEFAULT_WEIGHTS  # the brain installed but untaught changes nothing
    before = means(rt.call("brain.state").state)
    assert before == pytest.approx(DEFAULT_WEIGHTS)
    first = teach_recency(rt, relevant, fresh, 1)[0]
    # relative credit (the default): z = (-1, 1, 1), minus their mean 1/3, clipped to [-1, 1]
    assert first.credit == pytest.approx({"relevance": -1.0, "salience": 2 / 3, "temporal": 2 / 3})
    assert {c: tuple(d) for c, d in first.delta.items()} == {
        "relevance": (0.0, pytest.approx(1.5)), "salience": (pytest.approx(1.0), 0.0),
        "temporal": (pytest.approx(1.0), 0.0)}
    assert means(first.state)["temporal"] > before["temporal"]
    assert means(first.state)["relevance"] < before["relevance"]
    flipped_after = None
    for r in range(1, 30):
        if order(rt) == [fresh, relevant]:
            flipped_after = r
            break
        teach_recency(rt, relevant, fresh, 1)
    assert flipped_after is not None, "30 rounds of feedback never flipped the ranking"
    state = rt.call("brain.state").state
    # the weights recall ranks with are exactly the posterior means the brain projected
    assert weights_used(rt) == pytest.approx(means(state), abs=1e-12)
    assert rt.call("brain.state").projected == pytest.approx(means(state), abs=1e-12)


def test_state_and_ledger_survive_closing_and_reopening(tmp_path):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=HASHING, path=db, clock=Clock(NOW)) as rt:
        relevant, fresh = pair(rt)
        teach_recency(rt, relevant, fresh, 3)
        old_rid = recall(rt).recall_id
        state = rt.call("brain.state").state
        ranked = order(rt)
        used = weights_used(rt)
    with open_test_runtime(config=HASHING, path=db, clock=Clock(NOW)) as rt:
        assert rt.call("brain.state").state == state
        assert weights_used(rt) == used
        assert order(rt) == ranked
        assert rt.call("brain.replay").matches
        # a recall served before the restart can still be given feedback
        after = rt.call("brain.feedback", {"recall_id": old_rid, "note_id": fresh, "signal": "useful"})
        assert after.state.feedback_events == state.feedback_events + 1


def test_recall_stays_read_only_and_the_breakdown_is_only_returned_when_asked(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    plain = recall(rt)
    assert all(h.breakdown is None for h in plain.results)
    asked = recall(rt, include_breakdown=True)
    assert all(h.breakdown is not None for h in asked.results)
    rows = rt._con.execute("SELECT recall_id, note_id, rank, relevance, effective_salience, recency "
                           "FROM brain.serve_items ORDER BY recall_id, rank").fetchall()
    served = {rid: [(n, rk) for r, n, rk, *_ in rows if r == rid] for rid in (plain.recall_id, asked.recall_id)}
    assert served[plain.recall_id] == [(relevant, 0), (fresh, 1)]
    assert served[asked.recall_id] == [(relevant, 0), (fresh, 1)]
    b = asked.results[1].breakdown
    assert [r[3:] for r in rows if r[0] == asked.recall_id][1] == (b.relevance, b.effective_salience, b.recency)
    spec = {v.full_name: v for v in rt.verbs(include_subhandlers=True)}
    assert spec["memory.recall"].act is Act.ASSERTIVE
    assert spec["brain.record_serve"].visibility is Visibility.SUBHANDLER
    assert "brain.record_serve" not in {v.full_name for v in rt.verbs()}


class Q(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str


class Ids(BaseModel):
    recall_id: str


def relay_pack() -> Pack:
    p = Pack("relay", version="0.0.1", requires=["memory"])

    @p.verb("ask", act=Act.ASSERTIVE)
    def ask(params: Q, ctx: Context) -> Ids:
        """Recall on behalf of the caller (a nested call)."""
        return Ids(recall_id=ctx.call("memory.recall", {"query": params.query}).recall_id)

    return p


def test_only_top_level_recalls_are_recorded(make_pal_runtime):
    rt = make_pal_runtime(relay_pack(), discover=True, config=HASHING, clock=Clock(NOW))
    relevant, _ = pair(rt)
    nested = rt.call("relay.ask", {"query": QUERY}).recall_id
    with pytest.raises(errors.NotFound):
        rt.call("brain.feedback", {"recall_id": nested, "note_id": relevant, "signal": "useful"})
    assert rt._con.execute("SELECT count(*) FROM brain.serves").fetchone() == (0,)
    top = recall(rt).recall_id
    assert rt._con.execute("SELECT recall_id FROM brain.serves").fetchall() == [(top,)]


def test_feedback_weights_by_signal_and_source(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rid = recall(rt).recall_id
    fb = lambda **kw: rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, **kw})  # noqa: E731
    assert fb(signal="useful").weight == 1.5
    assert fb(signal="correction").weight == 2.0
    assert fb(signal="useful", source="implicit").weight == 0.3
    assert fb(signal="useful", source="implicit", weight=0.5).weight == 0.5
    corr = rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "correction"})
    # a correction of the relevant note (z = (1, -1, -1), relative g = (1, -2/3, -2/3)) debits relevance and
    # credits what it lagged in, at weight 2
    assert {c: tuple(d) for c, d in corr.delta.items()} == {
        "relevance": (0.0, pytest.approx(2.0)), "salience": (pytest.approx(4 / 3), 0.0),
        "temporal": (pytest.approx(4 / 3), 0.0)}


def test_absolute_credit_is_configurable(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing"}, "brain": {"credit": "absolute"}}},
                          clock=Clock(NOW))
    relevant, fresh = pair(rt)
    res = rt.call("brain.feedback", {"recall_id": recall(rt).recall_id, "note_id": fresh, "signal": "useful"})
    assert res.credit == pytest.approx({"relevance": -1.0, "salience": 1.0, "temporal": 1.0})
    events = rt.call("brain.state", {"events": 1}).events
    assert events[0].payload["mode"] == "absolute"


def test_thompson_sampling_projects_a_sample_not_the_mean(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rt.call("brain.profile", {"name": "explorer", "explore": True})
    rid = recall(rt).recall_id
    res = rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful"})
    assert res.profile == "explorer" and res.state.explore
    assert res.projected != pytest.approx(means(res.state))
    assert all(0 < v < 1 for v in res.projected.values())
    assert weights_used(rt) == pytest.approx(res.projected, abs=1e-12)
    # per call, explore=false projects the means again
    res2 = rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful", "explore": False})
    assert res2.projected == pytest.approx(means(res2.state), abs=1e-12)


def test_old_serves_are_pruned_and_then_unknown(make_pal_runtime):
    clock = Clock(NOW)
    rt = make_pal_runtime(config=HASHING, clock=clock)
    relevant, _ = pair(rt)
    old = recall(rt).recall_id
    clock.now = NOW + timedelta(days=31)
    recall(rt)  # recording a new serve prunes those older than serve_retention_days
    with pytest.raises(errors.NotFound, match="unknown, or pruned"):
        rt.call("brain.feedback", {"recall_id": old, "note_id": relevant, "signal": "useful"})
    assert rt._con.execute("SELECT count(*) FROM brain.serve_items WHERE recall_id = ?", [old]).fetchone() == (0,)


def test_nothing_is_written_on_bad_feedback(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rid = recall(rt, limit=1).recall_id  # returns `relevant` only
    before = snapshot(rt)
    with pytest.raises(errors.NotFound):
        rt.call("brain.feedback", {"recall_id": "no-such-recall", "note_id": fresh, "signal": "useful"})
    with pytest.raises(errors.InvalidParams, match="not returned"):
        rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful"})
    with pytest.raises(errors.NotFound):  # the recall belongs to another namespace
        rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful", "namespace": "elsewhere"})
    with pytest.raises(errors.NotFound, match="profile"):
        rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful", "profile": "ghost"})
    with pytest.raises(errors.InvalidParams, match="weight"):
        rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful", "source": "implicit",
                                   "weight": 1.5})
    for bad in ({"signal": "great"}, {"signal": "useful", "weight": -1}, {"signal": "useful", "extra": 1}):
        with pytest.raises(errors.InvalidParams):
            rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, **bad})
    assert snapshot(rt) == before
    assert weights_used(rt) == DEFAULT_WEIGHTS

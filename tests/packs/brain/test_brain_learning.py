"""brain.feedback end to end: the posteriors move, the weights are projected, the next recall's ranking flips;
state survives a reopen; the ledger is filled by observing recall, which stays read-only (issue 6)."""
import pytest

from brain_helpers import (DEFAULT_WEIGHTS, HASHING, NOW, Clock, means, order, pair, recall,
                           snapshot, weights_used)
from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime


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
    served = recall(rt, include_breakdown=True)
    first = rt.call("brain.feedback", {"recall_id": served.recall_id, "note_id": fresh, "signal": "useful"})
    # ADR 0010, computed here from the breakdown the recall returned: d_c, the lead d_s in the score, and
    # g_c = (d_c − d_s) / max |d − d_s|; then y = μ + μ(1 − μ)·g, Δ = (1.5·y, 1.5·(1 − y))
    cols = {c: [getattr(h.breakdown, f) for h in served.results]
            for c, f in (("relevance", "relevance"), ("salience", "effective_salience"), ("temporal", "recency"))}
    j = [h.note.id for h in served.results].index(fresh)
    d = {c: v[j] - sum(v) / len(v) for c, v in cols.items()}
    w = served.results[0].breakdown.weights
    lead = sum(w[c] * d[c] for c in d) / sum(w.values())
    top = max(abs(d[c] - lead) for c in d)
    g = {c: (d[c] - lead) / top for c in d}
    assert first.credit == pytest.approx(g, abs=1e-12)
    assert g["relevance"] < 0 < g["temporal"] and g["salience"] > 0  # the fresh note is recent and salient
    y = {c: before[c] + before[c] * (1 - before[c]) * g[c] for c in g}
    for c in g:
        assert tuple(first.delta[c]) == pytest.approx((1.5 * y[c], 1.5 * (1 - y[c])), abs=1e-12)
    assert means(first.state)["temporal"] > before["temporal"]
    assert means(first.state)["relevance"] < before["relevance"]
    flipped_after = None
    for r in range(1, 40):
        if order(rt) == [fresh, relevant]:
            flipped_after = r
            break
        teach_recency(rt, relevant, fresh, 1)
    assert flipped_after is not None, "40 rounds of feedback never flipped the ranking"
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


def test_feedback_weights_by_signal_and_source(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    rid = recall(rt).recall_id
    fb = lambda **kw: rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, **kw})  # noqa: E731
    assert fb(signal="useful").weight == 1.5
    assert fb(signal="correction").weight == 2.0
    assert fb(signal="useful", source="implicit").weight == 0.3
    assert fb(signal="useful", source="implicit", weight=0.5).weight == 0.5
    before = means(rt.call("brain.state").state)
    corr = rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "correction"})
    # a correction of the relevant note debits what it stood out in (relevance) and credits the others, at
    # weight 2: each Δα + Δβ is the weight, and the means move against the credit
    assert corr.weight == 2.0 and corr.credit["relevance"] > 0 > corr.credit["temporal"]
    assert all(sum(d) == pytest.approx(2.0) for d in corr.delta.values())
    after = means(corr.state)
    assert after["relevance"] < before["relevance"] and after["temporal"] > before["temporal"]
    # explicit weighs more than implicit: the same event moves the means further
    moves = {}
    for source in ("explicit", "implicit"):
        st = means(rt.call("brain.state").state)
        res = rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful", "source": source})
        moves[source] = abs(means(res.state)["temporal"] - st["temporal"])
    assert moves["explicit"] > 3 * moves["implicit"] > 0


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

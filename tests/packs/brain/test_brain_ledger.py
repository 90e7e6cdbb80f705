"""The serve ledger: filled by observing top-level recalls (recall stays read-only), kept in memory and written
``serve_flush_every`` serves at a time and at close; feedback finds a serve either way (ADR 0010)."""
from datetime import timedelta

import pytest
from pydantic import BaseModel, ConfigDict

from brain_helpers import HASHING, NOW, QUERY, Clock, pair, recall, snapshot
from palimpsest_memory.runtime import Act, Context, Pack, Visibility, errors
from palimpsest_memory.runtime.testing import open_test_runtime


def flush(rt) -> int:
    return rt.call("brain.flush_serves", {}, internal=True).flushed


def stored(rt) -> list[str]:
    return [r[0] for r in rt.store.con.execute("SELECT recall_id FROM brain.serves ORDER BY served_at, recall_id")
            .fetchall()]


def every(n: int) -> dict:
    return {"packs": {"memory": {"embedder": "hashing"}, "brain": {"serve_flush_every": n}}}


def test_recall_stays_read_only_and_the_breakdown_is_only_returned_when_asked(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    plain = recall(rt)
    assert all(h.breakdown is None for h in plain.results)
    asked = recall(rt, include_breakdown=True)
    assert all(h.breakdown is not None for h in asked.results)
    assert flush(rt) == 2
    rows = rt.store.con.execute("SELECT recall_id, note_id, rank, relevance, effective_salience, recency "
                           "FROM brain.serve_items ORDER BY recall_id, rank").fetchall()
    served = {rid: [(n, rk) for r, n, rk, *_ in rows if r == rid] for rid in (plain.recall_id, asked.recall_id)}
    assert served[plain.recall_id] == [(relevant, 0), (fresh, 1)]
    assert served[asked.recall_id] == [(relevant, 0), (fresh, 1)]
    b = asked.results[1].breakdown
    assert [r[3:] for r in rows if r[0] == asked.recall_id][1] == (b.relevance, b.effective_salience, b.recency)
    spec = {v.full_name: v for v in rt.verbs(include_subhandlers=True)}
    assert spec["memory.recall"].act is Act.ASSERTIVE
    for sub in ("brain.record_serve", "brain.flush_serves"):
        assert spec[sub].visibility is Visibility.SUBHANDLER
        assert sub not in {v.full_name for v in rt.verbs()}


def test_serves_are_written_in_batches_and_feedback_finds_them_before(make_pal_runtime):
    rt = make_pal_runtime(config=every(3), clock=Clock(NOW))
    relevant, fresh = pair(rt)
    first, second = recall(rt).recall_id, recall(rt).recall_id
    assert stored(rt) == []  # kept in memory: a recall costs no write transaction
    # feedback right after the recall, on a serve not yet written, works, and does not write the serves
    res = rt.call("brain.feedback", {"recall_id": first, "note_id": fresh, "signal": "useful"})
    assert res.state.feedback_events == 1 and stored(rt) == []
    third = recall(rt).recall_id  # the third fills the buffer: all three are written in one transaction
    assert sorted(stored(rt)) == sorted([first, second, third])
    n = rt.store.con.execute("SELECT count(*) FROM brain.serve_items").fetchone()[0]
    assert n == 6
    fourth = recall(rt).recall_id
    assert fourth not in stored(rt) and flush(rt) == 1 and fourth in stored(rt) and flush(rt) == 0
    # written or kept, the answer is the same
    for rid in (second, fourth):
        assert rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "not_useful"}).credit


def test_close_writes_the_pending_serves_and_a_crash_loses_them(tmp_path):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=every(64), path=db, clock=Clock(NOW)) as rt:
        relevant, fresh = pair(rt)
        kept = recall(rt).recall_id
    with open_test_runtime(config=every(64), path=db, clock=Clock(NOW)) as rt:
        assert stored(rt) == [kept]
        rt.call("brain.feedback", {"recall_id": kept, "note_id": fresh, "signal": "useful"})
        lost = recall(rt).recall_id
        before = snapshot(rt)
        rt.store.con.close()  # the process dies: no close hook runs
        rt.store.con = None
    with open_test_runtime(config=every(64), path=db, clock=Clock(NOW)) as rt:
        assert stored(rt) == [kept]
        with pytest.raises(errors.NotFound, match="unknown"):
            rt.call("brain.feedback", {"recall_id": lost, "note_id": fresh, "signal": "useful"})
        assert snapshot(rt) == before  # everything else that committed is there


def test_a_serve_of_another_namespace_is_unknown_even_in_memory(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, _ = pair(rt)
    rid = recall(rt).recall_id
    for _ in ("kept in memory", "written"):
        with pytest.raises(errors.NotFound, match="unknown"):
            rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful",
                                       "namespace": "elsewhere"})
        flush(rt)


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


def test_a_recall_made_by_another_pack_is_recorded_and_explains_inner_recalls_are_not(make_pal_runtime):
    """Every memory.recall publishes recall_served (ADR 0008): a pack that recalls for its caller hands the
    recall id on, so feedback on it must work. memory.explain ranks without calling memory.recall: its inner
    recalls are never given to anyone and leave no serve."""
    rt = make_pal_runtime(relay_pack(), discover=True, config=HASHING, clock=Clock(NOW))
    relevant, _ = pair(rt)
    nested = rt.call("relay.ask", {"query": QUERY}).recall_id
    assert rt.call("brain.feedback", {"recall_id": nested, "note_id": relevant, "signal": "useful"}).credit
    assert flush(rt) == 1 and stored(rt) == [nested]
    rt.call("memory.explain", {"query": QUERY})
    assert flush(rt) == 0 and stored(rt) == [nested]
    top = recall(rt).recall_id
    assert flush(rt) == 1 and sorted(stored(rt)) == sorted([nested, top])


@pytest.mark.parametrize("written", [False, True])
def test_old_serves_expire_and_are_pruned_at_the_next_write(make_pal_runtime, written):
    clock = Clock(NOW)
    rt = make_pal_runtime(config=HASHING, clock=clock)
    relevant, _ = pair(rt)
    old = recall(rt).recall_id
    if written:
        flush(rt)
    clock.now = NOW + timedelta(days=31)  # past serve_retention_days (30)
    with pytest.raises(errors.NotFound, match="unknown, or expired"):
        rt.call("brain.feedback", {"recall_id": old, "note_id": relevant, "signal": "useful"})
    new = recall(rt).recall_id
    res = rt.call("brain.flush_serves", {}, internal=True)
    assert (res.flushed, res.pruned) == (1, 1)  # written and deleted, or dropped before it was ever written
    assert stored(rt) == [new]
    assert rt.store.con.execute("SELECT count(*) FROM brain.serve_items WHERE recall_id = ?", [old]).fetchone() == (0,)


def bounded(flush_every: int, keep: int) -> dict:
    return {"packs": {"memory": {"embedder": "hashing"},
                      "brain": {"serve_flush_every": flush_every, "serve_max_per_namespace": keep}}}


def stored_in(rt, namespace: str) -> list[str]:
    return [r[0] for r in rt.store.con.execute("SELECT recall_id FROM brain.serves WHERE namespace = ? ORDER BY seq",
                                          [namespace]).fetchall()]


def test_the_ledger_keeps_the_newest_serves_of_each_namespace_up_to_its_bound(make_pal_runtime):
    """serve_max_per_namespace bounds the ledger's size: at each flush the oldest serves beyond it are dropped
    (by write order: the clock here never moves), per namespace, and feedback on a dropped one is the typed
    "unknown recall" error, as for an expired one."""
    rt = make_pal_runtime(config=bounded(2, 3), clock=Clock(NOW))
    relevant, _ = pair(rt)
    pair(rt, namespace="other")
    mine = [recall(rt).recall_id for _ in range(7)]
    theirs = [rt.call("memory.recall", {"query": QUERY, "namespace": "other"}).recall_id for _ in range(2)]
    flush(rt)
    assert stored_in(rt, "default") == mine[-3:]  # oldest dropped first
    assert stored_in(rt, "other") == theirs  # another namespace's serves do not count against this one's
    assert rt.store.con.execute("SELECT count(*) FROM brain.serve_items").fetchone() == (10,)  # 5 serves × 2 notes
    for rid in mine[:4]:
        with pytest.raises(errors.NotFound, match="unknown") as caught:
            rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful"})
        assert caught.value.details["errors"][0]["msg"] == "unknown recall"
    for rid in mine[-3:]:
        assert rt.call("brain.feedback", {"recall_id": rid, "note_id": relevant, "signal": "useful"}).credit
    for _ in range(20):  # it stays bounded however many recalls follow
        recall(rt)
    flush(rt)
    assert len(stored_in(rt, "default")) == 3


def test_close_and_flush_lose_nothing_within_the_bound(tmp_path):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=bounded(4, 6), path=db, clock=Clock(NOW)) as rt:
        relevant, fresh = pair(rt)
        served = [recall(rt).recall_id for _ in range(6)]  # one flush of 4, then 2 kept in memory until close
        assert len(stored(rt)) == 4
    with open_test_runtime(config=bounded(4, 6), path=db, clock=Clock(NOW)) as rt:
        assert stored_in(rt, "default") == served
        for rid in served:
            res = rt.call("brain.feedback", {"recall_id": rid, "note_id": fresh, "signal": "useful"})
            assert res.credit["temporal"] > 0  # the fresh note's recency, read back from each serve


def test_the_bound_must_hold_the_serves_kept_in_memory():
    from palimpsest_memory.runtime import errors as e

    with pytest.raises(e.ConfigError, match="serve_max_per_namespace"):
        open_test_runtime(config=bounded(64, 10)).close()


def test_a_serve_keeps_what_feedback_needs_and_not_the_query(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING, clock=Clock(NOW))
    relevant, fresh = pair(rt)
    secret = "Orion Postgres migration zanzibar"
    rid = rt.call("memory.recall", {"query": secret, "now": NOW.isoformat()}).recall_id
    flush(rt)
    assert not any(secret in row for rows in snapshot(rt).values() for row in rows)
    (row,) = rt.store.con.execute("SELECT note_ids, relevance_weight, salience_weight, temporal_weight FROM brain.serves "
                             "WHERE recall_id = ?", [rid]).fetchall()
    assert row == ([relevant, fresh], 0.7, 0.2, 0.1)


def test_the_old_ledger_is_converted_and_feedback_on_its_serves_works(tmp_path):
    """Migration 003 turns brain 002's serves and serve_items into one row per serve, in served order."""
    import shutil

    from palimpsest_memory.packs.brain import posteriors as post
    from palimpsest_memory.packs.brain.pack import pack as brain
    from palimpsest_memory.runtime import storage

    old = tmp_path / "brain_sql_v2"
    old.mkdir()
    for name in ("001_brain.sql", "002_actor_projections.sql"):
        shutil.copy(brain.migrations / name, old)
    db = tmp_path / "pal.duckdb"
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:
        relevant, fresh = pair(rt)
        rt.store.con.execute("DROP SCHEMA brain CASCADE; DELETE FROM _palimpsest.migrations WHERE pack = 'brain'")
    con = storage.open_store(db).con
    storage.migrate(con, "brain", old)
    con.execute("INSERT INTO brain.serves VALUES ('new', 'default', 'q', ?, "
                "'{\"relevance\": 0.6, \"salience\": 0.3, \"temporal\": 0.1}', 'alice', 'default')",
                [NOW - timedelta(hours=1)])
    con.execute("INSERT INTO brain.serves VALUES ('old', 'default', 'q', ?, '{}', NULL, NULL)", [NOW - timedelta(days=2)])
    con.execute("INSERT INTO brain.serve_items VALUES ('new', ?, 1, 0.4, 0.2, 0.9, 0.99), ('new', ?, 0, 0.8, 0.9, 0.1, 0.0),"
                "('old', ?, 0, 0.5, 0.5, 0.5, 0.5)", [fresh, relevant, relevant])
    con.close()
    with open_test_runtime(config=HASHING, clock=Clock(NOW), path=str(db)) as rt:
        assert rt.schema_versions()["brain"] == 4  # 003, then 004 (namespace keys)
        rows = rt.store.con.execute("SELECT recall_id, seq, actor, note_ids, relevance_weight, recency FROM brain.serves "
                               "ORDER BY seq").fetchall()
        assert rows == [("old", 1, None, [relevant], 0.0, [0.5]), ("new", 2, "alice", [relevant, fresh], 0.6, [0.0, 0.99])]
        res = rt.call("brain.feedback", {"recall_id": "new", "note_id": fresh, "signal": "useful"})
        expected = post.credit({"relevance": [0.9, 0.2], "effective_salience": [0.1, 0.9], "recency": [0.0, 0.99]}, 1,
                               {"relevance": 0.6, "salience": 0.3, "temporal": 0.1})
        assert res.credit == expected and res.profile == "default"
        assert rt.store.con.execute("SELECT note_id, rank FROM brain.serve_items WHERE recall_id = 'new' ORDER BY rank"
                               ).fetchall() == [(relevant, 0), (fresh, 1)]
        recall(rt)  # the next serves follow the converted ones
        flush(rt)
        assert rt.store.con.execute("SELECT max(seq) FROM brain.serves").fetchone() == (3,)

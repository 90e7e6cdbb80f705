"""Many processes on one PostgreSQL store (issue 14, ADR 0016): the seam, credentials, read-only transactions, the
change log and its followers, per-namespace write serialisation, and no lost acknowledged write after SIGKILL.

These tests start real processes on a real PostgreSQL server (the ``pal_postgres`` fixture of palimpsest_memory.runtime.testing);
they are skipped, with the reason, when the postgres extra is not installed. Nothing here is timed: waits are
bounded polls that fail the test when the bound is reached."""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from palimpsest_memory.runtime import Act, Context, Pack, errors
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.storage import pg_dialect, postgres
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "tests" / "helpers" / "pg_worker.py"


def spawn(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PALIMPSEST_CONFIG_DISABLED": "1"}
    return subprocess.Popen([sys.executable, str(WORKER), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


@pytest.fixture
def url(pal_postgres):  # type: ignore[no-untyped-def]
    made = pal_postgres.fresh()
    yield made
    pal_postgres.drop(made)


def head(rt) -> int:  # type: ignore[no-untyped-def]
    with rt._lock:  # the follower thread uses the connection too, under the runtime's lock
        return rt.store.head()


def sql(rt, query: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    with rt._lock:
        return rt.store.con.execute(query).fetchall()


def wait_for(check, seconds: float = 20.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


# -- the seam -------------------------------------------------------------------------------------------------------
def test_translation_of_the_duckdb_spellings_packs_use() -> None:
    t = pg_dialect.translate("SELECT nextval('kg.s') FROM range(?) WHERE x LIKE '%a?' AND y = $1", True)
    assert t.sql == "SELECT nextval('kg.s') FROM generate_series(1, %s) WHERE x LIKE '%%a?' AND y = %s"
    assert t.bind([3, 9])[1] == [3, 3]  # "?" is the first parameter, and so is "$1"
    t = pg_dialect.translate("SELECT list(v ORDER BY v), len(a), epoch(?::TIMESTAMP) FROM t WHERE "
                           "list_has_any(tags, ?::VARCHAR[]) AND list_contains(?::VARCHAR[], left(src, 1))", True)
    assert "array_agg(v ORDER BY v)" in t.sql and "cardinality(a)" in t.sql and "date_part('epoch', " in t.sql
    assert "(tags && %s::VARCHAR[])" in t.sql and "(left(src, 1) = ANY(%s::VARCHAR[]))" in t.sql
    t = pg_dialect.translate("SELECT unnest($1::VARCHAR[][]), unnest($2)", True)
    sql, values = t.bind([[["a"], ["b", "c"]], ["x", None]])
    assert sql == "SELECT _palimpsest.jarr(unnest(%s::text[]))::VARCHAR[], unnest(%s::text[])"
    assert values == [['["a"]', '["b", "c"]'], ["x", None]]
    assert "double precision" in pg_dialect.translate("CREATE TABLE t (x DOUBLE, b BLOB)", False).sql
    with pytest.raises(errors.StorageError, match="ON CONFLICT"):
        pg_dialect.translate("INSERT OR REPLACE INTO t VALUES (?)", True)


def test_credentials_never_reach_messages_or_logs(url, caplog, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    secret = "pw-Xy7-never-shown"
    bad = f"postgresql://someone:{secret}@127.0.0.1:9/nodb?connect_timeout=2"
    with pytest.raises(errors.StorageError) as info:
        open_test_runtime(path=bad)
    shown = str(info.value) + repr(info.value.to_dict() if hasattr(info.value, "to_dict") else info.value.details)
    assert secret not in shown and "someone" not in shown and "127.0.0.1" in shown
    monkeypatch.setenv("PGPASSWORD", secret)
    with pytest.raises(errors.StorageError) as info:
        open_test_runtime(path="postgresql://127.0.0.1:9/nodb?connect_timeout=2")
    assert secret not in str(info.value)
    # a working URL with a password (the test server trusts its socket): the runtime shows it without one
    parts = url.split("://", 1)
    with open_test_runtime(path=f"{parts[0]}://postgres:{secret}@{parts[1].split('@', 1)[-1]}") as rt:
        assert secret not in rt.path and rt.path.startswith("postgresql://")
        rt.call("memory.remember", {"content": "a note"})
    assert secret not in caplog.text


def test_assertive_verbs_run_in_read_only_transactions(url) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime import storage

    with open_test_runtime(path=url) as rt, rt._lock:
        con = rt.store.con
        rt.store.begin(read_only=True)
        try:
            with pytest.raises(storage.BackendError, match="read-only transaction"):
                con.execute("INSERT INTO _palimpsest.tunables VALUES ('n', '*', 'p', 'x', 1, NULL, now())")
        finally:
            storage.rollback_quietly(con)
        db = storage.Database(rt.store, read_only=True, verb="test.read")
        with pytest.raises(errors.ReadOnlyViolation):
            db.execute("DELETE FROM _palimpsest.tunables")
        assert con.execute("SELECT count(*) FROM _palimpsest.tunables").fetchone() == (0,)


def test_bad_input_leaves_the_shared_store_and_the_log_unchanged(url) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(path=url) as rt:
        rt.call("memory.remember", {"content": "kept"})
        before = head(rt)
        with pytest.raises(errors.InvalidParams):
            rt.call("memory.remember", {"content": ""})
        with pytest.raises(errors.InvalidParams):
            rt.call("memory.recall", {"query": "kept"}, consistency="sometimes")
        assert head(rt) == before
        assert sql(rt, "SELECT count(*) FROM memory.notes") == [(1,)]


# -- followers -------------------------------------------------------------------------------------------------------
def test_another_process_write_reaches_recall_and_strong_sees_it_at_once(url) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(path=url) as rt:
        assert rt.call("memory.recall", {"query": "zebra migration"}).results == []
        proc = spawn("remember", url, "zebras migrate across the Serengeti")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        note_id = int(out.split()[-1])
        strong = rt.call("memory.recall", {"query": "zebra migration"}, consistency="strong")
        assert [h.note.id for h in strong.results][:1] == [note_id]
        proc = spawn("remember", url, "giraffes eat acacia leaves")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        seen = wait_for(lambda: rt.call("memory.recall", {"query": "giraffe acacia"}).results, 10.0)
        assert [h.note.id for h in seen][:1] == [int(out.split()[-1])]


def test_a_follower_s_mirrors_equal_a_fresh_load(url) -> None:  # type: ignore[no-untyped-def]
    """Runtime B follows A's commits through the log (decoded change data): its mirrors equal a fresh load."""
    with open_test_runtime(path=url) as a, open_test_runtime(path=url) as b:
        notes = a.call("memory.remember_many", {"notes": [{"content": f"note {i} about topic {i % 3}",
                                                            "tags": [f"t{i % 2}"]} for i in range(12)]})
        ids = [n.id for n in notes.notes] if hasattr(notes, "notes") else []
        a.call("kg.assert_fact", {"subject": "Ada", "predicate": "works_at", "object": "Acme"})
        a.call("kg.assert_fact", {"subject": "Ada", "predicate": "works_at", "object": "Initech",
                                  "valid_from": "2021-01-01"})
        a.call("kg.link", {"src": "e:1", "dst": "e:2", "relation": "related_to"})
        if ids:
            a.call("memory.archive", {"note_ids": ids[:2]})
        a.call("memory.upsert_belief", {"fact_key": "ada.city", "content": "Ada lives in Paris"})
        a.call("memory.upsert_belief", {"fact_key": "ada.city", "content": "Ada lives in Rome"})
        a.call("memory.recall", {"query": "topic 1"})
        b.call("memory.recall", {"query": "topic zebra"}, consistency="strong")
        with open_test_runtime(path=url) as fresh:
            fresh.call("memory.recall", {"query": "topic"})  # holds the namespace b holds (loaded at first call)
            assert list(fresh.followers.held) == list(b.followers.held) == ["default"]
            for owner, mirrors in fresh.followers.mirrors.items():
                mine = dict(b.followers.mirrors[owner])
                for name, mirror in mirrors:
                    try:
                        want = mirror.digest()
                    except NotImplementedError:
                        continue
                    assert mine[name].digest() == want, f"{owner}.{name} drifted from the store"


def test_a_recall_does_not_queue_behind_a_writer_of_its_namespace(url) -> None:  # type: ignore[no-untyped-def]
    """A recall's serve record takes no namespace lock (ADR 0016): while another process holds the namespace's
    write lock (a writer mid-batch), the recall still answers, and its serve is kept for feedback."""
    import psycopg

    with open_test_runtime(path=url) as rt:
        note = rt.call("memory.remember", {"content": "otters hold hands while they sleep"}).note
        answers: list = []
        done = threading.Event()
        with psycopg.connect(url) as writer:  # its transaction holds the lock until the block ends
            writer.execute("SELECT pg_advisory_xact_lock(%s)", [postgres.lock_key("ns", rt.default_namespace)])
            threading.Thread(target=lambda: (answers.append(rt.call("memory.recall", {"query": "otters"})),
                                             done.set()), daemon=True).start()
            assert done.wait(60), "the recall waited for the namespace's writer"
        answer = answers[0]
        assert [h.note.id for h in answer.results][:1] == [note.id]
        fed = rt.call("brain.feedback", {"recall_id": answer.recall_id, "note_id": note.id, "signal": "useful"})
        assert fed.event_seq >= 1


def test_serves_flushed_by_two_processes_are_written_once(url) -> None:  # type: ignore[no-untyped-def]
    """Both runtimes keep every serve (the change log) and flush when enough are pending, at the same time; the
    flush serialises itself, so no serve is written twice or lost and ledger sequence numbers stay unique."""
    config = {"packs": {"brain": {"serve_flush_every": 2}}}
    with open_test_runtime(path=url, config=config) as a, open_test_runtime(path=url, config=config) as b:
        a.call("memory.remember_many", {"notes": [{"content": f"river {i} floods in spring"} for i in range(5)]})
        ids: list[str] = []

        def recalls(rt) -> None:  # type: ignore[no-untyped-def]
            for i in range(60):
                ids.append(rt.call("memory.recall", {"query": f"river {i % 5}"}).recall_id)

        threads = [threading.Thread(target=recalls, args=(rt,)) for rt in (a, b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
    with open_test_runtime(path=url) as check:
        rows = sql(check, "SELECT recall_id, seq FROM brain.serves")
    assert len(ids) == 120
    assert sorted(r[0] for r in rows) == sorted(ids)
    assert len({r[1] for r in rows}) == len(rows)


# -- many writers ----------------------------------------------------------------------------------------------------
def _history(rt, subjects: int) -> dict[str, list[tuple]]:  # type: ignore[no-untyped-def]
    out = {}
    for s in range(subjects):
        try:
            facts = rt.call("kg.fact_history", {"subject": f"s{s}", "predicate": "holds"}).facts
        except errors.NotFound:
            continue
        out[f"s{s}"] = sorted((f.object, f.valid_from, f.valid_to, f.retracted_at is None, f.evidence_count)
                              for f in facts)
    return out


def _commit_order(rt) -> list[str]:  # type: ignore[no-untyped-def]
    """The asserted objects in change-log (commit) order: each assert's logged timeline brings one new object."""
    seen: set[str] = set()
    order = []
    with rt._lock:
        rows = rt.store.changes_after(0)[1]
    for _seq, pack, _ns, kind, data, _origin in rows:
        if pack != "kg":
            continue
        change = rt.store.decode(data)
        new = {row[5] for rows in change.timelines.values() for row in rows} - seen
        assert len(new) <= 1, new
        order += sorted(new)
        seen |= new
    return order


@pytest.mark.timeout(900)
def test_four_writers_interleaved_equal_a_serial_replay_in_commit_order(url) -> None:  # type: ignore[no-untyped-def]
    n, subjects = int(os.environ.get("PAL_PG_CONCURRENCY_N", "60")), 20
    procs = [spawn("assert", url, f"w{w}", str(n), str(subjects), str(w)) for w in range(4)]
    outs = [p.communicate(timeout=800) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    acked = [line.split()[1] for out, _ in outs for line in out.splitlines() if line.startswith("ack ")]
    assert len(acked) == 4 * n
    with open_test_runtime(path=url) as shared:
        order = _commit_order(shared)
        assert sorted(order) == sorted(acked)  # every acknowledged assert is logged once
        got = _history(shared, subjects)
    params = {}
    import random
    from datetime import datetime, timedelta
    for w in range(4):  # the workers' own parameters, regenerated from their seeds
        rng = random.Random(w)
        for i in range(n):
            params[f"w{w}-{i}"] = (f"s{rng.randrange(subjects)}",
                                   (datetime(2000, 1, 1) + timedelta(days=rng.randrange(100_000))).isoformat())
    with open_test_runtime() as serial:
        for obj in order:
            subject, start = params[obj]
            serial.call("kg.assert_fact", {"subject": subject, "predicate": "holds", "object": obj, "literal": True,
                                           "valid_from": start})
        assert _history(serial, subjects) == got


@pytest.mark.timeout(600)
def test_sigkill_mid_batch_loses_no_acknowledged_write(url) -> None:  # type: ignore[no-untyped-def]
    proc = spawn("assert", url, "k", "100000", "20", "7")
    acked: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("ack "):
            acked.append(line.split()[1])
            if len(acked) >= 40:
                break
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    acked += [line.split()[1] for line in rest.splitlines() if line.startswith("ack ")]
    with open_test_runtime(path=url) as rt:
        stored = {r[0] for r in sql(rt, "SELECT DISTINCT object_text FROM kg.claims")}
        logged = set(_commit_order(rt))
    assert set(acked) <= stored and set(acked) <= logged


# -- namespaces loaded on demand (ADR 0016, issue 14 item 4) -----------------------------------------------------------
def _per_ns_digests(rt) -> dict:  # type: ignore[no-untyped-def]
    return {f"{o}.{n}": m.digest() for o, ms in rt.followers.mirrors.items() for n, m in ms if m.per_namespace}


def test_a_late_loaded_namespace_sees_commits_before_and_after_its_load_once(url) -> None:  # type: ignore[no-untyped-def]
    """B loads namespace 'late' after A committed to it, while B's cursor may still be behind those commits; then A
    commits more. B's index of 'late' holds every note exactly once and equals a fresh load; a namespace B does not
    hold is skipped by its follower and read whole when B first uses it."""
    with open_test_runtime(path=url) as a, open_test_runtime(path=url) as b:
        b.call("memory.recall", {"query": "x"}, namespace="other")
        before = [a.call("memory.remember", {"content": f"early note {i} lark"}, namespace="late").note.id
                  for i in range(3)]
        a.call("kg.assert_fact", {"subject": "Ada", "predicate": "lives_in", "object": "Paris"}, namespace="late")
        b.call("memory.recall", {"query": "x"}, namespace="other", consistency="strong")  # follows; 'late' skipped
        assert "late" not in b.held_namespaces() and b.followers.seq == head(b)
        more = [a.call("memory.remember", {"content": f"middle note {i} lark"}, namespace="late").note.id
                for i in range(2)]
        got = b.call("memory.recall", {"query": "lark note", "limit": 20}, namespace="late")  # loads 'late' now
        assert sorted(h.note.id for h in got.results) == sorted(before + more)
        after = [a.call("memory.remember", {"content": f"late note {i} lark"}, namespace="late").note.id
                 for i in range(2)]
        a.call("kg.assert_fact", {"subject": "Ada", "predicate": "lives_in", "object": "Rome"}, namespace="late")
        a.call("memory.remember", {"content": "another namespace moves on"}, namespace="other")
        got = b.call("memory.recall", {"query": "lark note", "limit": 20}, namespace="late", consistency="strong")
        ids = [h.note.id for h in got.results]
        assert sorted(ids) == sorted(before + more + after) and len(ids) == len(set(ids))
        index = b.pack_state("memory").index.of("late")
        assert len(index.rows) == 7 and len(index.bm25) == 7
        assert [f.object for f in b.call("kg.facts", {"subject": "Ada"}, namespace="late").facts] == ["Rome"]
        with open_test_runtime(path=url) as fresh:
            for ns in b.held_namespaces():
                fresh.hold(ns)
            assert _per_ns_digests(fresh) == _per_ns_digests(b)


class Text(Params):
    content: str


class Done(Params):
    pass


def test_a_nested_call_into_a_namespace_not_held_loads_it_under_its_lock(url) -> None:  # type: ignore[no-untyped-def]
    """A writing call in one namespace whose nested call writes another namespace not yet held loads that one
    inside the transaction (under the namespace's lock): its mirrors take the nested change exactly once."""
    pack = Pack("cross", version="1.0", requires=["memory"])

    @pack.verb("copy_note", act=Act.COMMISSIVE)
    def copy_note(params: Text, ctx: Context) -> Done:
        ctx.call("memory.remember", {"content": params.content})
        ctx.call("memory.remember", {"content": params.content}, namespace="elsewhere")
        return Done()

    import palimpsest_memory.packs.brain.pack as brain
    import palimpsest_memory.packs.kg.pack as kg
    import palimpsest_memory.packs.memory.pack as memory

    with open_test_runtime(kg, memory, brain, pack, path=url) as a, open_test_runtime(path=url) as other:
        other.call("memory.remember", {"content": "committed before the load"}, namespace="elsewhere")
        a.call("cross.copy_note", {"content": "copied across namespaces"})
        index = a.pack_state("memory").index.of("elsewhere")
        assert sorted(r.content for r in index.rows.values()) == ["committed before the load",
                                                                   "copied across namespaces"]

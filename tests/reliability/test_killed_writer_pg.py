"""A killed writer leaves every process consistent (issue 41, items 3 and 5).

A writer process (killed_writer_child.py) runs ``pal import palimpsest``, ``pal import jsonl``,
``memory.remember_many``, ``kg.assert_facts``, ``memory.forget everything`` or ``pal copy`` and is SIGKILLed at a
chosen point: after k import pages inside the transaction, just before COMMIT, right after COMMIT before its own
mirrors were fed, before the rewrite that follows an erase. On PostgreSQL this test process is a follower that
held the namespace (at 0 notes) before the writer started; afterwards it must agree with SQL (its mirrors equal a
freshly opened runtime's), no sequence may stand below an id its table holds, and a new note must be stored both
by the follower and by a fresh process (in the namespace and elsewhere: a ``duplicate key ... notes_pkey`` was the
reported symptom). A killed import left nothing, so the same import then succeeds. On DuckDB the file is reopened
and written the same way.

And (issue 41, item 5): a recall into an empty namespace, from another process or this one, does not stop a later
import into it.

Every wait is bounded (a writer that never reaches its point fails the test); nothing is timed.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from killed_writer_child import sequences_behind
from rel_support import index_problems, integrity_problems
from palimpsest_memory.runtime import Runtime, exportfile
from palimpsest_memory.runtime.testing import open_test_runtime, postgres_available

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CHILD = HERE / "killed_writer_child.py"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
NS = "imp"
NOTES = 2100  # > one import page (2000 records): the notes and their vectors take three pages, the edges two
BATCH = 40  # notes / facts per remember_many / assert_facts call of the writer
WRITER_BOUND = 180  # seconds after which a writer that never reached its point is killed (and the test fails)
needs_pg = pytest.mark.skipif(not postgres_available(), reason="postgres extra not installed")


# -- the data the writers write ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A DuckDB store with two namespaces (``src``: entities, facts, 2,100 notes that mention them; ``src2``: a
    few), its ``src`` exported, and a JSONL chat log of 1,200 lines."""
    folder = tmp_path_factory.mktemp("killed-writer")
    db = folder / "source.duckdb"
    with open_test_runtime(config=HASHING, discover=True, path=str(db)) as rt:
        # ids are preserved by an import: start past the few notes a target holds before it (ids 1-3)
        rt.store.con.execute("SELECT nextval('memory.note_ids') FROM range(50)").fetchall()
        for name in ("Ada Lovelace", "Harbour Street"):
            rt.call("kg.upsert_entity", {"name": name, "kind": "person"}, namespace="src")
        rt.call("kg.assert_fact", {"subject": "Ada Lovelace", "predicate": "lives_in", "object": "Harbour Street"},
                namespace="src")
        for start in range(0, NOTES, 700):
            rt.call("memory.remember_many", {"notes": [
                {"content": f"note {i}: Ada Lovelace walked down Harbour Street", "key": f"s{i}"}
                for i in range(start, min(NOTES, start + 700))]}, namespace="src")
        rt.call("memory.remember_many", {"notes": [{"content": f"second {i}"} for i in range(5)]}, namespace="src2")
        with open(folder / "src.jsonl", "w", encoding="utf-8") as out:
            exportfile.export_namespace(rt, out, "src")
    with open(folder / "chat.jsonl", "w", encoding="utf-8") as out:
        for i in range(1200):
            out.write(json.dumps({"speaker": "Ada" if i % 2 else "Bo", "text": f"turn {i} about the harbour",
                                  "timestamp": f"2026-03-02T10:{i % 60:02d}:00", "thread": f"t{i // 100}"}) + "\n")
    return {"db": db, "export": folder / "src.jsonl", "chat": folder / "chat.jsonl"}


# -- the writer ----------------------------------------------------------------------------------------------------
def spawn(store: str, pause: str, op: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PALIMPSEST_CONFIG_DISABLED": "1"}
    return subprocess.Popen([sys.executable, str(CHILD), store, pause, op, *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run_until(proc: subprocess.Popen, want: str) -> list[str]:
    """The writer's lines up to the first that starts with ``want`` (or its end); a watchdog bounds the wait."""
    watchdog = threading.Timer(WRITER_BOUND, proc.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith(want):
                break
    finally:
        watchdog.cancel()
    return lines


def kill_at(store: str, pause: str, op: str, *args: str) -> list[str]:
    """Run the writer until it pauses at ``pause``, SIGKILL it there; returns what it printed."""
    proc = spawn(store, pause, op, *args)
    lines = run_until(proc, "paused")
    if not lines or not lines[-1].startswith("paused"):
        proc.kill()
        _, err = proc.communicate(timeout=60)
        pytest.fail(f"the writer ({op} {args}) never reached {pause}: {lines[-5:]}\n{err[-3000:]}")
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            stream.close()
    return lines


def run_child(store: str, op: str, *args: str) -> list[str]:
    proc = spawn(store, "-", op, *args)
    try:
        out, err = proc.communicate(timeout=WRITER_BOUND)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    assert proc.returncode == 0, f"{op} {args} failed:\n{err[-3000:]}"
    return out.splitlines()


def fresh_process_check(store: str, ns: str) -> dict[str, Any]:
    """A new process opens the store, counts, checks the sequences and remembers a note in ``ns`` and elsewhere."""
    found = json.loads(next(line for line in run_child(store, "check", ns) if line.startswith("{")))
    assert found["behind"] == [], found
    assert found["remembered"] > 0 and found["remembered_elsewhere"] > found["remembered"]
    return found


# -- the checks ----------------------------------------------------------------------------------------------------
def sql(rt: Runtime, query: str, args: list | None = None) -> list[tuple]:
    with rt._lock:  # a follower's listener thread uses the connection too, under the runtime's lock
        return rt.store.con.execute(query, args or []).fetchall()


def notes_in(rt: Runtime, ns: str) -> int:
    return sql(rt, "SELECT count(*) FROM memory.notes WHERE namespace = ?", [ns])[0][0]


def facts_in(rt: Runtime, ns: str) -> int:
    return sql(rt, "SELECT count(*) FROM kg.facts WHERE namespace = ?", [ns])[0][0]


def digests(rt: Runtime) -> dict[str, Any]:
    with rt._lock:
        return {f"{owner}.{name}": mirror.digest() for owner, ms in rt.followers.mirrors.items() for name, mirror in ms}


def warm(rt: Runtime, namespaces: list[str]) -> None:
    """Hold the namespaces and build what kg builds lazily, the same way on both runtimes compared."""
    for ns in namespaces:
        rt.call("kg.facts", {"subject": "Ada Lovelace"}, namespace=ns)
        rt.call("kg.detect_entities", {"text": "Ada Lovelace on Harbour Street"}, namespace=ns)
        rt.call("memory.count", {}, namespace=ns)


def agrees_with_a_fresh_runtime(follower: Runtime, store: str, namespaces: list[str]) -> None:
    """The follower, caught up, holds what a runtime opened now loads from the tables: mirror by mirror."""
    follower.call("memory.count", {}, namespace=namespaces[0], consistency="strong")
    warm(follower, namespaces)
    with open_test_runtime(config=HASHING, discover=True, path=store) as fresh:
        warm(fresh, namespaces)
        mine, theirs = digests(follower), digests(fresh)
    for key in mine:
        a, b = mine[key], theirs[key]
        if isinstance(a, dict) and isinstance(b, dict):  # per namespace: the ones compared
            a = {ns: v for ns, v in a.items() if ns in namespaces}
            b = {ns: v for ns, v in b.items() if ns in namespaces}
        assert a == b, f"the follower's {key} disagrees with the store"
    with follower._lock:
        problems = [p for ns in namespaces for p in _index_problems(follower, ns)]
    assert problems == []


def _index_problems(rt: Runtime, ns: str) -> list[str]:
    from rel_support import _namespace_problems

    return _namespace_problems(rt, rt.pack_state("memory").index.of(ns), ns)


def writes_go_on(follower: Runtime, pg: str) -> None:
    """After a kill: the surviving follower and a fresh process both write, and the follower still agrees with a
    fresh runtime."""
    writes_after(follower, NS)
    fresh_process_check(pg, NS)
    agrees_with_a_fresh_runtime(follower, pg, [NS, "base"])


def writes_after(rt: Runtime, ns: str) -> None:
    """The surviving process stores notes (in the namespace, and in another), facts, and recalls them."""
    a = rt.call("memory.remember", {"content": "the follower writes after the kill"}, namespace=ns).note.id
    # a new text each call: the same text again would be counted on the first call's note (ADR 0039)
    b = rt.call("memory.remember", {"content": f"and elsewhere too, after {ns}"},
                namespace="follower-elsewhere").note.id
    assert b > a
    rt.call("memory.remember_many", {"notes": [{"content": f"after {i} Ada Lovelace"} for i in range(3)]},
            namespace=ns)
    rt.call("kg.assert_fact", {"subject": "Follower", "predicate": "wrote", "object": "after"}, namespace=ns)
    hits = rt.call("memory.recall", {"query": "the follower writes after the kill"}, namespace=ns).results
    assert hits and hits[0].note.id == a


# -- PostgreSQL: a surviving follower and a fresh process -----------------------------------------------------------
@pytest.fixture
def pg(pal_postgres):  # type: ignore[no-untyped-def]
    url = pal_postgres.fresh()
    yield url
    pal_postgres.drop(url)


@pytest.fixture
def follower(pg: str):  # type: ignore[no-untyped-def]
    """A process that holds the namespace before the writer starts (at 0 notes: a recall made it held)."""
    rt = open_test_runtime(config=HASHING, discover=True, path=pg)
    rt.call("memory.remember_many", {"notes": [{"content": f"base {i}"} for i in range(3)]}, namespace="base")
    rt.call("memory.recall", {"query": "harbour"}, namespace=NS)
    assert NS in rt.held_namespaces()
    yield rt
    rt.close()


IMPORT_POINTS = [
    ("after:kg.import_records:2", 0),        # the namespace checked empty, kg's first page written
    ("after:memory.import_records:5", 0),    # 2,000 notes written in the transaction (the reported case)
    ("commit:1", 0),                         # everything written and the sequences advanced, COMMIT not sent
    ("committed:1", NOTES),                  # committed; the writer died before feeding its own mirrors
]


@needs_pg
@pytest.mark.parametrize("pause,stored", IMPORT_POINTS, ids=[p for p, _ in IMPORT_POINTS])
def test_a_killed_pal_import_leaves_followers_and_fresh_processes_consistent(source, pg, follower, pause, stored):
    kill_at(pg, pause, "import", str(source["export"]), NS)
    assert notes_in(follower, NS) == stored  # all or nothing
    assert sequences_behind(follower) == []
    agrees_with_a_fresh_runtime(follower, pg, [NS, "base"])
    assert follower.call("memory.count", {}, namespace=NS).count == stored
    if stored == 0:  # nothing of the killed import stayed: the same import now succeeds, from the follower
        counts = exportfile.import_file(follower, source["export"], NS)
        assert counts["memory"]["note"] == NOTES
        assert follower.call("memory.count", {}, namespace=NS).count == NOTES
    writes_go_on(follower, pg)


@needs_pg
@pytest.mark.parametrize("pause", ["after:kg.link_many:2", "commit:1"])
def test_a_killed_jsonl_import_leaves_nothing(source, pg, follower, pause):
    kill_at(pg, pause, "jsonl", str(source["chat"]), NS)
    assert notes_in(follower, NS) == 0
    writes_go_on(follower, pg)


@needs_pg
@pytest.mark.parametrize("op,pause", [("remember", "after:memory.remember_many:3"), ("remember", "commit:3"),
                                      ("facts", "after:kg.assert_facts:3"), ("facts", "commit:3")])
def test_a_killed_batch_writer_leaves_its_acknowledged_batches_and_nothing_else(pg, follower, op, pause):
    lines = kill_at(pg, pause, op, NS, "10", str(BATCH))
    acked = sum(line.startswith("ack ") for line in lines)
    assert acked == 2
    if op == "remember":
        assert notes_in(follower, NS) == acked * BATCH
    else:
        assert facts_in(follower, NS) == acked * BATCH
    assert sequences_behind(follower) == []
    agrees_with_a_fresh_runtime(follower, pg, [NS, "base"])
    writes_go_on(follower, pg)


@needs_pg
@pytest.mark.parametrize("pause,gone", [("commit:1", False), ("compact:1", True)])
def test_a_killed_forget_leaves_followers_consistent(pg, follower, pause, gone):
    follower.call("memory.remember_many", {"notes": [{"content": f"to forget {i} Ada Lovelace"} for i in range(30)]},
                  namespace=NS)
    follower.call("kg.assert_fact", {"subject": "Ada Lovelace", "predicate": "lives_in", "object": "Harbour"},
                  namespace=NS)
    kill_at(pg, pause, "forget", NS)
    assert notes_in(follower, NS) == (0 if gone else 30)
    assert sequences_behind(follower) == []
    agrees_with_a_fresh_runtime(follower, pg, [NS, "base"])
    writes_go_on(follower, pg)


@needs_pg
@pytest.mark.parametrize("pause,copied", [("after:memory.import_records:2", []), ("imported:1", ["src"])])
def test_a_killed_pal_copy_leaves_the_destination_consistent(source, tmp_path, pg, pause, copied):
    src = tmp_path / "src.duckdb"
    shutil.copy(source["db"], src)
    follower = open_test_runtime(config=HASHING, discover=True, path=pg)
    try:
        follower.call("memory.recall", {"query": "harbour"}, namespace="src")  # held, at 0 notes
        kill_at(str(src), pause, "copy", pg)
        held = {r[0] for r in sql(follower, "SELECT DISTINCT namespace FROM memory.notes")}
        assert held == set(copied)
        if copied:
            assert notes_in(follower, "src") == NOTES
        assert sequences_behind(follower) == []
        agrees_with_a_fresh_runtime(follower, pg, ["src", "src2"])
        writes_after(follower, "src")
        writes_after(follower, "src2")
        fresh_process_check(pg, "src2")
        agrees_with_a_fresh_runtime(follower, pg, ["src", "src2"])
    finally:
        follower.close()


@needs_pg
def test_a_followers_write_right_after_an_import_starts_from_the_imported_state(source, pg, follower):
    """The import's mirrors reload (its ``_reload`` change) meets the follower inside its next write transaction
    when the follower's listener has not applied it yet (stopped here, so it never does): the namespace it locked
    is loaded again at once, so the note it stores links the imported entity it names, as in any fresh process."""
    follower.store.unfollow()
    run_child(pg, "import", str(source["export"]), NS)
    nid = follower.call("memory.remember", {"content": "Ada Lovelace again"}, namespace=NS).note.id
    mentions = sql(follower, "SELECT k.name FROM kg.edges e JOIN kg.entities k ON e.dst = 'e:' || k.id::VARCHAR "
                             "WHERE e.src = ? AND e.relation = 'mentions'", [f"m:{nid}"])
    assert mentions == [("Ada Lovelace",)]
    agrees_with_a_fresh_runtime(follower, pg, [NS, "base"])


# -- DuckDB: a killed writer of a file; reopen and write --------------------------------------------------------------
def reopened_checks(db: Path, ns: str, expect: int | None = None, reimport: Path | None = None) -> Runtime:
    """Reopen the file: no half-written row, indexes equal to the tables, no sequence behind its ids, ``expect``
    notes in ``ns``; the killed import (``reimport``) then succeeds; and the store takes new writes."""
    rt = open_test_runtime(config=HASHING, discover=True, path=str(db))
    assert integrity_problems(rt) == []
    assert index_problems(rt) == []
    assert sequences_behind(rt) == []
    if expect is not None:
        assert notes_in(rt, ns) == expect
    if reimport is not None:
        assert exportfile.import_file(rt, reimport, ns)["memory"]["note"] == NOTES
    writes_after(rt, ns)
    assert integrity_problems(rt) == []
    assert sequences_behind(rt) == []
    return rt


@pytest.mark.parametrize("op,pause,expect", [
    ("import", "after:memory.import_records:5", 0), ("import", "commit:1", 0), ("import", "committed:1", NOTES),
    ("remember", "commit:3", 2 * BATCH), ("facts", "commit:3", 0), ("forget", "commit:1", 30),
    ("forget", "compact:1", 0), ("forget", "copied:1", 0),
])
def test_a_killed_writer_of_a_duckdb_file_leaves_it_consistent(source, tmp_path, op, pause, expect):
    db = tmp_path / "store.duckdb"
    with open_test_runtime(config=HASHING, discover=True, path=str(db)) as rt:
        rt.call("memory.remember_many", {"notes": [{"content": f"base {i}"} for i in range(3)]}, namespace="base")
        if op == "forget":
            rt.call("memory.remember_many", {"notes": [{"content": f"gone {i}"} for i in range(30)]}, namespace=NS)
    args = {"import": [str(source["export"]), NS], "remember": [NS, "10", str(BATCH)],
            "facts": [NS, "10", str(BATCH)], "forget": [NS]}[op]
    lines = kill_at(str(db), pause, op, *args)
    if op in ("remember", "facts"):
        assert sum(line.startswith("ack ") for line in lines) == 2
    rt = reopened_checks(db, NS, expect, source["export"] if op == "import" and expect == 0 else None)
    if op == "forget" and expect == 0:  # issue 46, F4: the rewrite a killed forget owed ran when the file reopened
        rt.store.con.execute("CHECKPOINT")
        assert b"gone 1" not in db.read_bytes()
    try:
        if op == "facts":
            assert facts_in(rt, NS) == 2 * BATCH + 1  # and the one writes_after asserted
    finally:
        rt.close()


@pytest.mark.parametrize("pause,copied", [("after:memory.import_records:2", set()), ("imported:1", {"src"})])
def test_a_killed_pal_copy_into_a_duckdb_file_leaves_it_consistent(source, tmp_path, pause, copied):
    src, dst = tmp_path / "src.duckdb", tmp_path / "dst.duckdb"
    shutil.copy(source["db"], src)
    kill_at(str(src), pause, "copy", str(dst))
    with open_test_runtime(config=HASHING, discover=True, path=str(dst)) as rt:
        assert {r[0] for r in sql(rt, "SELECT DISTINCT namespace FROM memory.notes")} == copied
    reopened_checks(dst, "src2").close()


# -- item 5: a recall into an empty namespace does not stop a later import into it -----------------------------------
@needs_pg
def test_a_recall_into_an_empty_namespace_never_blocks_an_import_into_it_postgres(source, pg):
    run_child(pg, "recall", NS)  # another process recalls in the empty namespace and closes
    with open_test_runtime(config=HASHING, discover=True, path=pg) as rt:
        rt.call("memory.recall", {"query": "nothing here yet"}, namespace="mine")  # and this process, in another
        rt.call("brain.flush_serves", {}, internal=True)
        assert sql(rt, "SELECT count(*) FROM brain.serves") == [(0,)]
        for ns in (NS, "mine"):
            assert exportfile.import_file(rt, source["export"], ns)["memory"]["note"] == NOTES if ns == NS else True
            if ns == "mine":
                rt.call("memory.forget", {"everything": True, "reason": "ids are store-wide: free them"},
                        namespace=NS)
                assert exportfile.import_file(rt, source["export"], ns)["memory"]["note"] == NOTES
        rt.call("memory.remember", {"content": "a write after both imports"}, namespace="mine")


def test_a_recall_into_an_empty_namespace_never_blocks_an_import_into_it_duckdb(source, tmp_path):
    db = tmp_path / "store.duckdb"
    with open_test_runtime(config=HASHING, discover=True, path=str(db)) as rt:
        assert rt.call("memory.recall", {"query": "cats"}, namespace=NS).results == []
    with open_test_runtime(config=HASHING, discover=True, path=str(db)) as rt:
        rt.call("memory.recall", {"query": "cats"}, namespace=NS)  # and again, held by the importing process
        assert exportfile.import_file(rt, source["export"], NS)["memory"]["note"] == NOTES
        rt.call("memory.remember", {"content": "written after the import"}, namespace=NS)


# -- Runtime.call_all: the one transaction an import runs in --------------------------------------------------------
def test_call_all_keeps_everything_or_nothing(tmp_path):
    from palimpsest_memory.runtime import errors

    with open_test_runtime(config=HASHING, discover=True, path=str(tmp_path / "s.duckdb")) as rt:
        def two(call):  # type: ignore[no-untyped-def]
            call("memory.remember", {"content": "first"})
            call("memory.remember", {"content": "second"})
            return "ok"

        assert rt.call_all(two, namespace="a") == "ok"
        assert rt.call("memory.count", {}, namespace="a").count == 2
        assert len(rt.call("memory.recall", {"query": "second"}, namespace="a").results) >= 1  # mirrors fed

        def fails(call):  # type: ignore[no-untyped-def]
            call("memory.remember", {"content": "kept only if all is"})
            call("memory.update", {"id": 10 ** 9, "salience": 0.5})

        with pytest.raises(errors.NotFound):
            rt.call_all(fails, namespace="a")

        def swallows(call):  # type: ignore[no-untyped-def]
            call("memory.remember", {"content": "kept only if all is"})
            try:
                call("memory.update", {"id": 10 ** 9, "salience": 0.5})
            except errors.NotFound:
                pass

        with pytest.raises(errors.InternalError, match="nothing was kept"):
            rt.call_all(swallows, namespace="a")
        assert rt.call("memory.count", {}, namespace="a").count == 2
        hits = rt.call("memory.recall", {"query": "kept only if all is"}, namespace="a").results
        assert all(h.note.content != "kept only if all is" for h in hits)  # nor in the mirrors

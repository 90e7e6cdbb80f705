"""A namespace's load on PostgreSQL reads each of its vector rows about once (issue 41).

Once ``memory.vectors`` was keyed by (namespace, note_id, model), the load's reads joined the notes on ``note_id``
alone, which that key cannot serve: PostgreSQL planned a nested loop that scanned the vectors table once per note
(a follower's first recall took 38 s at 20k notes). Counted, not timed: PostgreSQL's own statistics say how many
vector rows the load touched, and a quadratic plan touches thousands of times more than there are notes."""
from __future__ import annotations

import time

import psycopg
import pytest

from palimpsest_memory.runtime import Runtime
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, postgres_available

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
NOTES = 1500
ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def vector_rows_read(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as con:
        got = con.execute("SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables "
                          "WHERE schemaname = 'memory' AND relname = 'vectors'").fetchone()
    return int(got[0])


def test_a_followers_load_reads_each_vector_row_a_bounded_number_of_times(pal_postgres):  # type: ignore[no-untyped-def]
    url = pal_postgres.fresh()
    try:
        writer = Runtime.open(url, env=ENV)
        notes = [{"content": f"note {i} about topic {i % 37} and place {i % 11}"} for i in range(NOTES)]
        for start in range(0, NOTES, 500):
            writer.call("memory.remember_many", {"notes": notes[start:start + 500]}, namespace="work")
        writer.close()  # its session's statistics are flushed when it ends
        before = vector_rows_read(url)

        follower = Runtime.open(url, env=ENV)
        got = follower.call("memory.recall", {"query": "topic 5 place 3", "limit": 3}, namespace="work")
        assert got.results, "the loaded namespace answers"
        assert len(follower.pack_state("memory").index.of("work").vectors) == 1
        follower.close()
        # a session's statistics reach the shared counters when it ends, a moment after close returns: wait for
        # them (bounded), the load reads each row at least once
        deadline = time.monotonic() + 30
        while (read := vector_rows_read(url) - before) < NOTES and time.monotonic() < deadline:
            time.sleep(0.1)
        # linear: a few passes over the namespace's rows (the count, the chunks, a snapshot check); a nested loop
        # over the notes reads NOTES * NOTES rows
        assert NOTES <= read <= 10 * NOTES, f"the load read {read} vector rows for {NOTES} notes"
    finally:
        pal_postgres.drop(url)

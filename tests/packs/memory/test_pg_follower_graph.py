"""A follower leaves the HNSW work of notes it follows until it is idle (issue 41, item 7; ADR 0031), and ends with
the graph a fresh process builds: on a real PostgreSQL, a writer process's notes reach a follower's index at once
(scored exactly meanwhile), and its graph takes them once no more come. Bounded polls, no timing."""
from __future__ import annotations

import time

import pytest

from palimpsest_memory.packs.memory.mirrors import index as index_mirror
from palimpsest_memory.runtime import Runtime
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, postgres_available

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
ENV = {"PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST__packs__memory__vector_index__min_rows": "300"}


def vector_index(rt: Runtime, ns: str):  # type: ignore[no-untyped-def]
    with rt._lock:  # the follower thread applies changes under the runtime's lock
        index = rt.pack_state("memory").index.of(ns)
        (vi,) = index.vectors.values()
        return vi, vi.deferred_rows(), vi.has_graph, len(vi.graph.hnsw) if vi.has_graph else 0


def until(check, seconds: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not (got := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


def test_a_follower_defers_graph_work_and_ends_with_every_note_in_its_graph(pal_postgres, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(index_mirror, "QUIET", 1e9)  # never quiet: the deferred work waits (until set below)
    url = pal_postgres.fresh()
    writer = Runtime.open(url, env=ENV)
    follower = Runtime.open(url, env=ENV)
    try:
        notes = [{"content": f"note {i}: the {['red', 'green', 'blue'][i % 3]} kite number {i} flew"}
                 for i in range(900)]
        writer.call("memory.remember_many", {"notes": notes[:100]}, namespace="work")
        follower.call("memory.recall", {"query": "kite"}, namespace="work")  # it holds the namespace: it follows
        for start in range(100, 900, 100):
            writer.call("memory.remember_many", {"notes": notes[start:start + 100]}, namespace="work")
        assert until(lambda: len(follower.pack_state("memory").index.of("work").rows) == 900)
        _, deferred, has_graph, held = vector_index(follower, "work")
        assert deferred == 900 and not has_graph  # followed: no graph work yet (the writer's graph is built)
        assert vector_index(writer, "work")[1:3] == (0, True)
        # every note is found meanwhile, by its words and by its vector (all rows are scanned)
        got = follower.call("memory.recall", {"query": "kite number 777 flew", "limit": 3}, namespace="work")
        assert "number 777 " in got.results[0].note.content
        got = follower.call("memory.recall", {"query": "kite number 777 flew", "limit": 3, "fusion": "vector_only"},
                            namespace="work")
        assert got.results
        # once no more notes come, the follower's idle moments give the graph every note
        monkeypatch.setattr(index_mirror, "QUIET", 0.0)
        assert until(lambda: vector_index(follower, "work")[1:] == (0, True, 900)), vector_index(follower, "work")
        vi = vector_index(follower, "work")[0]
        assert bool(vi.graph.hnsw.contains(vi.live_rows()[0]).all())
        fresh = Runtime.open(url, env=ENV)  # and its index is what a fresh process loads from the tables
        try:
            fresh.call("memory.recall", {"query": "kite"}, namespace="work")
            with follower._lock, fresh._lock:
                assert follower.pack_state("memory").index.digest()["work"] == \
                    fresh.pack_state("memory").index.digest()["work"]
        finally:
            fresh.close()
    finally:
        follower.close()
        writer.close()
        pal_postgres.drop(url)


def test_the_writers_own_notes_go_into_its_graph_at_once(pal_postgres):  # type: ignore[no-untyped-def]
    url = pal_postgres.fresh()
    writer = Runtime.open(url, env=ENV)
    try:
        writer.call("memory.remember_many", {"notes": [{"content": f"own note {i}"} for i in range(400)]},
                    namespace="work")
        vi, deferred, has_graph, held = vector_index(writer, "work")
        vi.graph.sync()
        assert (deferred, has_graph, len(vi.graph.hnsw)) == (0, True, 400)
    finally:
        writer.close()
        pal_postgres.drop(url)

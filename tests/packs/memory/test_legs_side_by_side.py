"""The vector leg runs beside the BM25 leg when it walks the graph (stages.legs, ADR 0008): the same answers as one
after the other, on its own thread only then, and never still running when the recall has returned."""
import copy
import threading
import time

import pytest
from store_support import HASHING, T0

from index_support import held_index
from palimpsest_memory.packs.memory.engine import vector_graph
from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex

GRAPH = copy.deepcopy(HASHING)
GRAPH["packs"]["memory"]["vector_index"] = {"min_rows": 30}
WORDS = ["orion", "postgres", "vega", "mysql", "harbour", "crane", "ferry", "dawn", "budget", "launch", "sofa",
         "replication", "backup", "nightly", "alice", "bob", "decision", "because", "latency", "storm"]
QUERIES = ["orion postgres", "vega mysql backup", "ferry at dawn", "why the budget decision", "alice launch"]


def notes(n: int) -> list[dict]:
    return [{"content": f"{WORDS[(i * 7) % 20]} {WORDS[(i * 3 + 1) % 20]} note {i} {WORDS[(i * 5 + 2) % 20]}",
             "scope": f"p{i % 2}"} for i in range(n)]


def answers(rt, **extra) -> list:  # type: ignore[no-untyped-def]
    return [[(h.note.id, h.score) for h in rt.call("memory.recall", {
        "query": q, "limit": 15, "now": T0.isoformat(), "include_breakdown": True, **extra}).results]
        for q in QUERIES]


@pytest.fixture
def searches(monkeypatch):  # type: ignore[no-untyped-def]
    """The thread each vector search ran on."""
    seen: list[str] = []
    search = VectorIndex.search

    def recorded(self, *a, **k):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return search(self, *a, **k)
    monkeypatch.setattr(VectorIndex, "search", recorded)
    return seen


def test_a_graph_search_runs_on_the_leg_thread_and_answers_as_one_after_the_other(
        make_pal_runtime, monkeypatch, searches) -> None:
    rt = make_pal_runtime(config=GRAPH)
    rt.call("memory.remember_many", {"notes": notes(80)})
    assert held_index(rt).vectors["hashing"].has_graph
    side_by_side, scoped = answers(rt), answers(rt, scope="p1")
    assert searches and all(name.startswith("palimpsest-vector-leg") for name in searches)
    searches.clear()
    monkeypatch.setattr(vector_graph.VectorGraph, "searches", lambda self, rows: False)
    assert answers(rt) == side_by_side and answers(rt, scope="p1") == scoped
    assert searches and not any(name.startswith("palimpsest-vector-leg") for name in searches)


def test_below_the_graph_threshold_the_caller_scans(make_pal_runtime, searches) -> None:
    rt = make_pal_runtime(config=GRAPH)
    rt.call("memory.remember_many", {"notes": notes(20)})  # 20 rows: under min_rows 30, no graph
    answers(rt)
    assert searches == [threading.current_thread().name] * len(QUERIES)
    rt.call("memory.remember_many", {"notes": notes(60)[20:]})  # 40 new texts (a text said again would merge)
    answers(rt, scope="p0")  # a graph now, and the scope's 30 notes are at its threshold: the graph is walked
    assert searches[-1].startswith("palimpsest-vector-leg")


def test_a_failing_bm25_leg_waits_for_the_vector_search_then_raises(make_pal_runtime, monkeypatch) -> None:
    rt = make_pal_runtime(config=GRAPH)
    rt.call("memory.remember_many", {"notes": notes(80)})
    finished = threading.Event()
    search = VectorIndex.search

    def slow(self, *a, **k):  # type: ignore[no-untyped-def]
        time.sleep(0.2)
        try:
            return search(self, *a, **k)
        finally:
            finished.set()

    def broken(self, *a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("bm25 broke")
    monkeypatch.setattr(VectorIndex, "search", slow)
    monkeypatch.setattr(BM25Index, "search", broken)
    with pytest.raises(Exception, match="bm25 broke"):
        rt.call("memory.recall", {"query": "orion postgres"})
    assert finished.is_set()  # the leg thread was done before the call gave up its lock


def test_a_failing_vector_leg_fails_the_recall(make_pal_runtime, monkeypatch) -> None:
    rt = make_pal_runtime(config=GRAPH)
    rt.call("memory.remember_many", {"notes": notes(80)})

    def broken(self, *a, **k):  # type: ignore[no-untyped-def]
        raise RuntimeError("graph broke")
    monkeypatch.setattr(VectorIndex, "search", broken)
    with pytest.raises(Exception, match="graph broke"):
        rt.call("memory.recall", {"query": "orion postgres"})
    monkeypatch.undo()
    assert rt.call("memory.recall", {"query": "orion postgres"}).results  # the leg thread still serves



def test_no_vector_search_overlaps_a_write_while_threads_recall_and_remember(make_pal_runtime, monkeypatch) -> None:
    # The runtime's lock keeps a write from running during a call; the leg thread must not let a search escape it.
    rt = make_pal_runtime(config=GRAPH)
    rt.call("memory.remember_many", {"notes": notes(80)})
    spans: list[tuple[str, float, float]] = []
    search, add = VectorIndex.search, VectorIndex.add

    def timed(kind, f):  # type: ignore[no-untyped-def]
        def run(self, *a, **k):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            try:
                return f(self, *a, **k)
            finally:
                spans.append((kind, start, time.perf_counter()))
        return run
    monkeypatch.setattr(VectorIndex, "search", timed("search", search))
    monkeypatch.setattr(VectorIndex, "add", timed("add", add))
    errors: list[BaseException] = []

    def recalls(offset: int) -> None:
        try:
            for i in range(15):
                rt.call("memory.recall", {"query": QUERIES[(i + offset) % len(QUERIES)]})
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def writes() -> None:
        try:
            for i in range(10):
                rt.call("memory.remember", {"content": f"orion ferry at dawn, write {i}", "scope": "p0"})
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=recalls, args=(j,)) for j in range(3)] + [threading.Thread(target=writes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    searches = [(a, b) for kind, a, b in spans if kind == "search"]
    adds = [(a, b) for kind, a, b in spans if kind == "add"]
    assert len(searches) == 45 and len(adds) == 10
    assert not [(s, w) for s in searches for w in adds if s[0] < w[1] and w[0] < s[1]]

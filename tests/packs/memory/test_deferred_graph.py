"""Graph work deferred by a follower (issue 41, item 7; ADR 0031): rows added with ``defer=True`` wait for the HNSW
graph — in its tail, or with the whole graph owed — and every search still scores them exactly; ``catch_up_graph``
then does the work a chunk at a time, and the index ends as one that inserted them at once."""
from __future__ import annotations

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine.vector_graph import Ann
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex, l2_normalize

ANN = Ann(min_rows=300)


def rand(n: int, d: int = 24, seed: int = 0) -> np.ndarray:
    return l2_normalize(np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32))


def finish(vi: VectorIndex, chunk: int) -> int:
    calls = 0
    while vi.catch_up_graph(chunk):
        vi.graph.sync()  # (a follower asks again a poll later; a call while the last chunk runs queues nothing)
        calls += 1
        assert calls < 10_000, "catch_up_graph never finished"
    vi.graph.sync()
    return calls


def finds_itself(vi: VectorIndex, ids: np.ndarray, m: np.ndarray) -> bool:
    """Each row, asked for with its own vector, comes first (its cosine is 1): certain for rows every search scores
    (no graph yet, or the graph's tail); a graph walk is approximate, so rows in a graph are checked with
    ``holds_every`` instead."""
    return all(vi.search(m[j], 5, min_cosine=None)[0][0] == int(ids[j]) for j in range(0, ids.size, 7))


def holds_every(vi: VectorIndex, ids: np.ndarray) -> bool:
    vi.graph.sync()
    return vi.has_graph and len(vi.graph.hnsw) == ids.size and bool(vi.graph.hnsw.contains(ids).all())


def test_a_graph_owed_is_built_in_chunks_and_searches_scan_until_it_is_whole():
    m = rand(900)
    ids = np.arange(900) * 2 + 1
    vi = VectorIndex(24, ann=ANN)
    for s in range(0, 900, 100):
        vi.add(ids[s:s + 100], m[s:s + 100], defer=True)
    assert not vi.has_graph and vi.graph.owed and vi.deferred_rows() == 900
    assert finds_itself(vi, ids, m)
    assert vi.catch_up_graph(250)  # a first chunk: the graph is not searched until it holds every row
    assert not vi.has_graph and finds_itself(vi, ids, m)
    more_ids, more = np.arange(900, 950) * 2 + 1, rand(50, seed=1)
    vi.add(more_ids, more, defer=True)  # rows arriving while it is built are given to it too
    finish(vi, 250)
    assert vi.has_graph and not vi.graph.owed and vi.deferred_rows() == 0
    assert holds_every(vi, np.r_[ids, more_ids])


def test_a_tail_is_scored_exactly_then_inserted():
    m = rand(700, seed=2)
    ids = np.arange(700) + 10
    vi = VectorIndex(24, ann=ANN)
    vi.add(ids[:400], m[:400])  # past min_rows: the graph is built now
    assert vi.has_graph and len(vi.graph.hnsw) == 400
    vi.add(ids[400:], m[400:], defer=True)
    assert vi.deferred_rows() == 300 and len(vi.graph.hnsw) == 400
    assert finds_itself(vi, ids[400:], m[400:])  # tail rows: scored exactly beside the graph's candidates
    calls = finish(vi, 100)
    assert calls == 2 and vi.deferred_rows() == 0
    assert holds_every(vi, ids)  # the graph an eager index would hold: every id, once


def test_a_row_re_added_while_in_the_graph_and_the_tail_is_returned_once():
    m = rand(500, seed=4)
    ids = np.arange(500) + 1
    vi = VectorIndex(24, ann=ANN)
    vi.add(ids[:400], m[:400])
    vi.add(ids[400:], m[400:], defer=True)
    vi.add(ids[:1], m[:1], defer=True)  # id 1 again: its old row leaves the graph, the new one is in the tail
    got = vi.search(m[0], 20, min_cosine=None)
    assert [i for i, _ in got].count(1) == 1 and got[0][0] == 1


def test_a_removal_while_a_graph_is_built_starts_it_again_and_the_graph_holds_only_live_rows():
    m = rand(800, seed=5)
    ids = np.arange(800) + 1
    vi = VectorIndex(24, ann=ANN)
    vi.add(ids, m, defer=True)
    assert vi.catch_up_graph(300)
    vi.graph.sync()
    assert vi.remove([5, 6, 7]) == 3
    finish(vi, 300)
    assert holds_every(vi, np.setdiff1d(ids, [5, 6, 7]))
    assert all(i not in (5, 6, 7) for i, _ in vi.search(m[5], 10, min_cosine=None))


def test_an_own_write_after_deferred_rows_takes_the_tail_in_first():
    m = rand(600, seed=6)
    ids = np.arange(600) + 1
    vi = VectorIndex(24, ann=ANN)
    vi.add(ids[:400], m[:400])
    vi.add(ids[400:500], m[400:500], defer=True)
    vi.add(ids[500:], m[500:])  # this process's own notes: inserted now, the tail before them
    assert vi.deferred_rows() == 0 and holds_every(vi, ids)


@pytest.mark.parametrize("chunk", [1, 64, 10_000])
def test_any_chunk_size_ends_with_every_row_in_the_graph(chunk):
    m = rand(450, seed=7)
    ids = np.arange(450) * 3
    vi = VectorIndex(24, ann=ANN)
    for s in range(0, 450, 45):
        vi.add(ids[s:s + 45], m[s:s + 45], defer=True)
    finish(vi, chunk)
    assert holds_every(vi, ids) and vi.deferred_rows() == 0

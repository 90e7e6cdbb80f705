import threading

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine import vector_graph
from palimpsest_memory.packs.memory.engine.vector_graph import Ann
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex, l2_normalize


def rand(n, d, seed=0):
    return l2_normalize(np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32))


def held(x):
    """Vectors as the index holds and scores them (half.py, ADR 0030): normalised, rounded to float16, in float64."""
    return l2_normalize(np.atleast_2d(np.asarray(x, dtype=np.float32))).astype(np.float16).astype(np.float64)


def held_cos(a, b) -> float:
    return float(np.clip(held(a)[0] @ held(b)[0], -1.0, 1.0))


SELF = 1e-3  # a vector's cosine with itself once both are rounded to float16 (|1 - c| measured up to ~3e-4 at 8-d)


def test_exact_topk_matches_bruteforce():
    m = rand(500, 32)
    vi = VectorIndex(32)
    vi.add(np.arange(500) * 3, m)
    q = rand(1, 32, seed=1)[0]
    hits = vi.search(q, 10, min_cosine=None)
    brute = np.argsort(-(held(m) @ held(q)[0]))[:10] * 3
    assert [i for i, _ in hits] == list(brute)
    assert hits[0][1] == pytest.approx(float(np.max(held(m) @ held(q)[0])), rel=1e-5)
    assert hits[0][1] == pytest.approx(float(np.max(m @ q)), abs=2e-4)  # within half precision of float32


def test_min_cosine_filters():
    vi = VectorIndex(2)
    vi.add([1, 2], np.array([[1, 0], [0, 1]], dtype=np.float32))
    hits = vi.search(np.array([1.0, 0.05]), 5)
    assert [i for i, _ in hits] == [1]  # cos with id 2 ≈ 0.05 < 0.10


def test_normalises_input_and_zero_rows():
    vi = VectorIndex(2)
    vi.add([1, 2], np.array([[3, 4], [0, 0]], dtype=np.float32))
    (i, c), = vi.search(np.array([3.0, 4.0]), 5)
    assert i == 1 and c == pytest.approx(1.0, abs=SELF)


def test_growth_remove_update_allowed():
    vi = VectorIndex(8, initial_capacity=16)
    m = rand(100, 8)
    for j in range(100):  # one-by-one adds grow amortised
        vi.add([j], m[j])
    assert len(vi) == 100 and vi.rows.mat.shape[0] >= 100
    q = m[42]
    assert vi.search(q, 1)[0][0] == 42
    vi.remove([42])
    assert 42 not in [i for i, _ in vi.search(q, 100, min_cosine=None)]
    vi.add([7], q)  # update id 7 to the query vector
    assert vi.search(q, 1)[0][0] == 7
    assert len(vi) == 99
    assert [i for i, _ in vi.search(q, 5, allowed=np.array([3, 5]), min_cosine=None)] in ([3, 5], [5, 3])
    mask = np.zeros(200, dtype=bool)
    mask[5] = True
    assert [i for i, _ in vi.search(q, 5, allowed=mask, min_cosine=None)] == [5]


def test_compaction():
    vi = VectorIndex(4)
    m = rand(3000, 4)
    vi.add(range(3000), m)
    vi.remove(range(2500))
    assert vi.rows.n == 500
    assert vi.search(m[2999], 1)[0][0] == 2999


def test_score_ids_and_shape_errors():
    vi = VectorIndex(3)
    vi.add([1], np.array([[1, 0, 0]], dtype=np.float32))
    s = vi.score_ids(np.array([1.0, 0, 0]), [1, 2])
    assert s[0] == pytest.approx(1.0) and s[1] == 0.0
    with pytest.raises(ValueError):
        vi.add([1, 2], np.zeros((1, 3)))
    with pytest.raises(ValueError):
        vi.search(np.zeros(4), 1)


def test_narrow_scope_path_equals_mask_path():
    m = rand(400, 16, seed=3)
    vi = VectorIndex(16)
    vi.add(np.arange(400) + 1000, m)
    q = rand(1, 16, seed=4)[0]
    scope = np.arange(1000, 1400, 7)  # 58 ids: the narrow path
    mask = np.zeros(2000, dtype=bool)
    mask[scope] = True  # a bool mask always takes the full-matrix path
    a = vi.search(q, 10, allowed=scope, min_cosine=None)
    b = vi.search(q, 10, allowed=mask, min_cosine=None)
    assert [i for i, _ in a] == [i for i, _ in b]
    assert [c for _, c in a] == pytest.approx([c for _, c in b], abs=1e-6)
    assert vi.search(q, 10, allowed=[5, 6]) == []  # unknown ids


# -- the HNSW graph for large scans -------------------------------------------------------------------------
def _structured(n: int, dim: int = 64, rank: int = 12, seed: int = 1) -> np.ndarray:
    """Vectors with low-rank structure plus noise, like sentence embeddings."""
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, rank)) @ rng.normal(size=(rank, dim)) + 0.3 * rng.normal(size=(n, dim))).astype(
        np.float32)


ANN = Ann(min_rows=1000)


def test_graph_returns_exact_cosines_and_finds_the_exact_top():
    x = _structured(3000)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    assert idx.has_graph
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    found = []
    for q in _structured(50, seed=2):
        got = idx.search(q, 10, min_cosine=None)
        exact = idx.search_exact(q, 10, min_cosine=None)
        qn = q / np.linalg.norm(q)
        for i, c in got:  # every cosine returned is the true one
            assert c == pytest.approx(held_cos(xn[i], qn), abs=1e-5)
        kth = exact[-1][1]
        found.append(np.mean([c >= kth - 1e-6 for _, c in got]))
    assert np.mean(found) >= 0.98  # of the exact top 10 (by score: ties count)


def test_no_graph_below_its_threshold_and_masks_are_respected():
    x = _structured(3000)
    small = VectorIndex(64, ann=Ann(min_rows=5000))
    small.add(np.arange(3000), x)
    assert not small.has_graph
    q = _structured(1, seed=3)[0]
    assert small.search(q, 20) == small.search_exact(q, 20)
    big = VectorIndex(64, ann=ANN)
    big.add(np.arange(3000), x)
    allowed = np.zeros(3000, dtype=bool)
    allowed[::2] = True  # 1,500 rows allowed: still above min_rows, so through the graph
    got = big.search(q, 50, allowed=allowed, min_cosine=None)
    assert len(got) == 50 and all(i % 2 == 0 for i, _ in got)
    few = np.zeros(3000, dtype=bool)
    few[:40] = True  # 40 rows: below min_rows, an exact scan of just those
    assert big.search(q, 10, allowed=few, min_cosine=None) == big.search_exact(q, 10, allowed=few, min_cosine=None)


def test_graph_stays_in_step_with_adds_replacements_and_compaction():
    x = _structured(3000)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    extra = _structured(500, seed=4)
    idx.add(np.arange(3000, 3500), extra)  # inserted into the graph as they arrive
    for j in (0, 250, 499):
        assert idx.search(extra[j], 1)[0] == (3000 + j, pytest.approx(1.0, abs=SELF))
    idx.add([7], extra[:1])  # a replaced vector: the graph finds the new one, never the old
    assert idx.search(extra[0], 2, min_cosine=None)[0][1] == pytest.approx(1.0, abs=SELF)
    assert 7 not in [i for i, _ in idx.search(x[7], 5, min_cosine=None) if _ > 0.9999]
    idx.remove(range(0, 2000))  # more than a third dead: compaction moves rows (the graph is keyed by id)
    assert len(idx) == 1500
    for i in (2000, 2999, 3499):
        v = x[i] if i < 3000 else extra[i - 3000]
        assert idx.search(v, 1)[0] == (i, pytest.approx(1.0, abs=SELF))
    assert all(i >= 2000 for i, _ in idx.search(x[5], 30, min_cosine=None))


def test_a_saved_graph_restores_equal_and_a_mismatched_one_is_refused():
    x = _structured(3000)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    data = idx.graph_bytes()
    again = VectorIndex(64, ann=ANN)
    again.add(np.arange(3000), x, build=False)
    assert not again.has_graph
    assert again.restore_graph(data) and not again.graph_dirty
    for q in _structured(10, seed=5):
        assert again.search(q, 10) == idx.search(q, 10)
    fewer = VectorIndex(64, ann=ANN)
    fewer.add(np.arange(2000), x[:2000], build=False)
    assert not fewer.restore_graph(data) and not fewer.has_graph  # holds other ids: refused
    assert not again.restore_graph(b"not a graph") and again.has_graph  # unreadable: refused, nothing changed


@pytest.mark.parametrize("first_change", ["adds past the tail", "remove"])
def test_a_viewed_graph_searches_its_buffer_and_takes_a_copy_of_its_own_at_the_first_change(first_change):
    """``restore_graph(view=True)`` searches the saved bytes where they lie (usearch refuses to change a view). A few
    appended rows are its tail, scored beside it; a removal, or a tail past a tenth of the graph, reads the bytes into
    the graph's own memory, inserts the tail and lets the buffer go, then applies the change."""
    x = _structured(3000)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    buf = memoryview(bytearray(idx.graph_bytes()))
    again = VectorIndex(64, ann=ANN)
    again.add(np.arange(3000), x, build=False)
    assert again.restore_graph(buf, view=True) and again.graph.viewed and not again.graph_dirty
    for q in _structured(10, seed=5):
        assert again.search(q, 10) == idx.search(q, 10)
    if first_change == "adds past the tail":
        extra = _structured(301, seed=9)
        again.add(np.arange(5000, 5300), extra[:300])  # a tenth of the graph: its tail, the graph still viewed
        assert again.graph.viewed and again.graph.tail == (3000, 3300) and not again.graph_dirty
        assert len(again.graph.hnsw) == 3000
        assert again.search(extra[299], 1)[0] == (5299, pytest.approx(1.0, abs=SELF))
        again.add(np.array([5300]), extra[300:])  # past a tenth: a copy of its own, the tail inserted
        assert again.graph.tail is None and len(again.graph.hnsw) == 3301
        assert again.search(extra[0], 1)[0] == (5000, pytest.approx(1.0, abs=SELF))
    else:
        again.remove([7])
        assert 7 not in [i for i, _ in again.search(x[7], 20, min_cosine=None)]
    assert not again.graph.viewed and again.graph_dirty
    with pytest.raises(ValueError):  # released: the graph no longer reads it
        buf[0]
    rows = VectorIndex(64, ann=ANN)
    rows.add(np.arange(2999), x[:2999], build=False)
    assert rows.restore_graph(buf := memoryview(bytearray(idx.graph_bytes())), upto=2998, view=True) is False
    newer = _structured(301, seed=10)
    extended = VectorIndex(64, ann=ANN)
    extended.add(np.arange(3001), np.vstack([x, newer[:1]]), build=False)
    assert extended.restore_graph(buf, upto=2999, view=True) and extended.graph.viewed  # one newer row: a tail
    assert extended.graph.tail == (3000, 3001) and len(extended.graph.hnsw) == 3000 and not extended.graph_dirty
    assert extended.search(newer[0], 1)[0] == (3000, pytest.approx(1.0, abs=SELF))
    many = VectorIndex(64, ann=ANN)
    many.add(np.arange(3301), np.vstack([x, newer]), build=False)
    assert many.restore_graph(memoryview(bytearray(idx.graph_bytes())), upto=2999, view=True)
    assert not many.graph.viewed and many.graph.tail is None and len(many.graph.hnsw) == 3301  # too many for a tail: a copy


def test_a_tail_is_searched_beside_the_graph_under_filters_and_saved_inside_it():
    x, newer = _structured(3000), _structured(200, seed=11)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    tailed = VectorIndex(64, ann=ANN)
    tailed.add(np.arange(3000), x, build=False)
    assert tailed.restore_graph(memoryview(bytearray(idx.graph_bytes())), view=True)
    tailed.add(np.arange(3000, 3200), newer)
    assert tailed.graph.tail == (3000, 3200)
    found = []
    for q in _structured(30, seed=12) + 0.5 * np.vstack([newer[:30]]):  # near the graph's rows and near the tail's
        got, exact = tailed.search(q, 10, min_cosine=None), tailed.search_exact(q, 10, min_cosine=None)
        found.append(np.mean([c >= exact[-1][1] - 1e-6 for _, c in got]))
        odd = tailed.search(q, 10, allowed={i for i in range(3200) if i % 2}, min_cosine=None)
        assert odd and all(i % 2 for i, _ in odd)  # a filter holds for the tail's rows too
    assert np.mean(found) >= 0.98
    assert any(i >= 3000 for i, _ in tailed.search(newer[5], 10))
    saved = VectorIndex(64, ann=ANN)  # saving inserts the tail first: the saved graph holds every row
    saved.add(np.arange(3200), np.vstack([x, newer]), build=False)
    assert saved.restore_graph(memoryview(bytearray(tailed.graph_bytes())), view=True) and saved.graph.tail is None
    assert len(saved.graph.hnsw) == 3200


def test_background_graph_inserts_are_complete_before_any_read_and_match_a_synchronous_graph():
    """Inserts past the threshold run in a background thread; every read waits for them, so what a search sees
    never depends on timing."""
    x = _structured(3000)
    extra = _structured(600, seed=6)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)
    for start in range(0, 600, 200):  # three batches, each submitted while the previous may still run
        idx.add(np.arange(3000 + start, 3200 + start), extra[start:start + 200])
    assert idx.search(extra[599], 5)[0] == (3599, pytest.approx(1.0, abs=SELF))  # the last batch is searchable
    assert not idx.graph.pending and len(idx.graph.current) == 3600
    saved = VectorIndex(64, ann=ANN)
    saved.add(np.concatenate([np.arange(3000), np.arange(3000, 3600)]), np.vstack([x, extra]), build=False)
    assert saved.restore_graph(idx.graph_bytes())  # the bytes hold every insert



@pytest.mark.parametrize("threads", [1, 2, 8])
def test_background_inserts_on_any_number_of_usearch_threads_hold_every_row(threads):
    """``insert_threads`` (ADR 0025): however many usearch threads insert a batch, every row is in the graph
    before a read, under its own key with its own vector. (Not "each row is its own nearest neighbour through a
    search": on this clustered data a few rows in 10,000 are not, with one thread as with two, because the int8
    graph ranks near-ties its own way; which rows, depends on the threads' interleaving.)"""
    x = _structured(3000)
    extra = _structured(600, seed=8)
    idx = VectorIndex(64, ann=Ann(min_rows=1000, insert_threads=threads))
    idx.add(np.arange(3000), x)
    for start in range(0, 600, 200):
        idx.add(np.arange(3000 + start, 3200 + start), extra[start:start + 200])
    graph = idx.graph.hnsw
    assert len(graph) == 3600 and graph.contains(np.arange(3600)).all()
    held = l2_normalize(np.asarray(graph.get(np.arange(3000, 3600), dtype=np.float32)))
    closest = np.argmax(held @ l2_normalize(extra).T, axis=1)  # the input row each stored vector is nearest to
    assert (closest == np.arange(600)).all()
    assert idx.search(extra[599], 5)[0] == (3599, pytest.approx(1.0, abs=SELF))  # and the last batch is searchable

def test_an_ingest_waits_when_two_graph_inserts_are_already_queued():
    """At most two inserts are queued or running (ADR 0025): a third batch waits for the oldest, so an ingest that
    outruns its graph cannot pile up batches (and their vectors) in memory."""
    x = _structured(3000)
    extra = _structured(600, seed=9)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(3000), x)  # builds the graph at once
    gate = threading.Event()
    blocker = vector_graph._INSERTS.submit(gate.wait, 30)  # holds the one insert worker
    third = threading.Thread(target=idx.add, args=(np.arange(3400, 3600), extra[400:]))
    try:
        idx.add(np.arange(3000, 3200), extra[:200])
        idx.add(np.arange(3200, 3400), extra[200:400])  # two queued behind the blocker: neither call waited
        assert idx.graph.pending == 2
        third.start()
        third.join(0.5)
        assert third.is_alive()  # waits for the oldest queued insert, which waits for the worker
    finally:
        gate.set()  # a failure above must not leave the process's insert worker held
    third.join(30)
    assert not third.is_alive() and blocker.result() is True
    assert idx.search(extra[599], 1)[0][0] == 3599 and len(idx.graph.hnsw) == 3600 and not idx.graph.pending


def test_a_graph_saved_before_newer_rows_is_restored_and_extended():
    x = _structured(3000)
    idx = VectorIndex(64, ann=ANN)
    idx.add(np.arange(2800), x[:2800])
    data = idx.graph_bytes()
    later = VectorIndex(64, ann=ANN)
    later.add(np.arange(3000), x, build=False)
    assert later.count_upto(2799) == 2800
    assert later.restore_graph(data, upto=2799) and later.graph_dirty  # extended with rows 2800..2999
    assert later.saved_rows == 2800 and len(later.graph.current) == 3000
    assert later.search(x[2900], 1)[0] == (2900, pytest.approx(1.0, abs=SELF))
    other = VectorIndex(64, ann=ANN)
    other.add(np.arange(1, 3001), x, build=False)  # as many rows up to 2800, but other ids
    assert not other.restore_graph(data, upto=2800) and not other.has_graph


def test_a_mapped_matrix_is_copied_into_memory_only_where_every_recall_scans_it(tmp_path):
    rng = np.random.default_rng(3)
    m = l2_normalize(rng.standard_normal((40, 8)).astype(np.float32))
    m.astype(np.float16).tofile(tmp_path / "v.bin")
    ids = np.arange(1, 41, dtype=np.int64)
    for ann, mapped in ((Ann(min_rows=0), False), (Ann(min_rows=1000), False), (Ann(min_rows=20), True)):
        vi = VectorIndex(8, ann=ann)
        vi.adopt(ids, np.memmap(tmp_path / "v.bin", dtype=np.float16, mode="c", shape=(40, 8)))
        assert isinstance(vi.rows.mat, np.memmap) is mapped, ann
        assert [i for i, _ in vi.search(m[4], 3)][0] == 5  # the same answers either way

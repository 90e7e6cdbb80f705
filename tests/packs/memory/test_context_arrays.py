"""The context signals recall ranks with (adjusters.context, numpy columns) equal a readable dict version of the
ADR 0008 formulas, bit for bit, on random pools and threads."""
from collections.abc import Callable, Hashable, Mapping

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.memory.ranking import adjusters
from palimpsest_memory.packs.memory.engine.context_signals import ThreadLinks

N = 40  # note ids 0..N-1


# -- the formulas, one note at a time (the readable definition the columns must equal) ---------------------------
def neighbour_smoothing(scores: Mapping[int, float], neighbours: Callable[[int], tuple[int | None, int | None]],
                        alpha: float) -> dict[int, float]:
    """``s'_i = s_i + α · max(s_prev(i), s_next(i))``; missing scores count as 0; neighbours join the pool."""
    pool = {i: neighbours(i) for i in scores}
    for i, (p, n) in list(pool.items()):
        for j in (p, n):
            if j is not None and j not in pool:
                pool[j] = neighbours(j)
    out = {}
    for i, (p, n) in pool.items():
        best = max(scores.get(p, 0.0) if p is not None else 0.0, scores.get(n, 0.0) if n is not None else 0.0)
        out[i] = scores.get(i, 0.0) + alpha * best
    return out


def thread_propagation(scores: Mapping[int, float], thread_of: Callable[[int], Hashable | None], beta: float,
                       top: int) -> tuple[dict[int, float], dict[int, float]]:
    """Add ``β · T(thread)/max T`` to each note, ``T`` = mean of the thread's top-``top`` scores."""
    groups: dict[Hashable, list[float]] = {}
    th = {}
    for i, s in scores.items():
        th[i] = t = thread_of(i)
        if t is not None:
            groups.setdefault(t, []).append(s)
    tval = {t: sum(sorted(v, reverse=True)[:top]) / min(top, len(v)) for t, v in groups.items()}
    hi = max(tval.values(), default=0.0)
    feat = {i: (tval[t] / hi if (t is not None and hi > 0) else 0.0) for i, t in th.items()}
    return {i: s + beta * feat[i] for i, s in scores.items()}, feat


def reference(fused: Mapping[int, float], links: ThreadLinks, alpha: float, beta: float, top: int):
    """(scores, neighbour feature, thread feature): smoothing, then propagation."""
    base = dict(fused)
    scores, nb = dict(base), {}
    if alpha:
        sm = neighbour_smoothing(base, links.neighbours, 1.0)
        nb = {i: sm[i] - base.get(i, 0.0) for i in sm}
        scores = {i: base.get(i, 0.0) + alpha * nb[i] for i in sm}
    th = {}
    if beta:
        scores, th = thread_propagation(scores, links.thread_of, beta, top)
    return scores, nb, th


@st.composite
def pools(draw):  # type: ignore[no-untyped-def]
    threads = draw(st.lists(st.integers(0, 4), min_size=N, max_size=N))  # 0 = no thread
    ids = draw(st.lists(st.integers(0, N - 1), min_size=0, max_size=25, unique=True))
    scores = draw(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=len(ids), max_size=len(ids)))
    alpha = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    beta = draw(st.sampled_from([0.0, 0.3, 0.5]))
    top = draw(st.integers(1, 4))
    return threads, ids, scores, alpha, beta, top


def columns(links: ThreadLinks) -> tuple[np.ndarray, np.ndarray]:
    prev = np.array([-1 if links.neighbours(i)[0] is None else links.neighbours(i)[0] for i in range(N)])
    nxt = np.array([-1 if links.neighbours(i)[1] is None else links.neighbours(i)[1] for i in range(N)])
    return prev, nxt


@settings(max_examples=300, deadline=None)
@given(pools())
def test_columns_equal_the_formulas(case) -> None:  # type: ignore[no-untyped-def]
    threads, ids, scores, alpha, beta, top = case
    links = ThreadLinks()
    for i, t in enumerate(threads):
        links.add(i, t or None)
    prev, nxt = columns(links)
    ref, nb, th = reference(dict(zip(ids, scores)), links, alpha, beta, top)
    got = adjusters.context(dict(zip(ids, scores)), prev=prev, nxt=nxt, thread=np.array(threads), alpha=alpha,
                          beta=beta, top=top)
    assert got.ids.tolist() == sorted(ref)
    assert got.scores.tolist() == [ref[i] for i in got.ids.tolist()]  # exact, not approximate
    assert got.neighbour.tolist() == [nb.get(i, 0.0) for i in got.ids.tolist()]
    assert got.thread.tolist() == [th.get(i, 0.0) for i in got.ids.tolist()]


def test_score_is_base_plus_weighted_features() -> None:
    links = ThreadLinks()
    for i, t in [(1, "a"), (2, "a"), (3, "b")]:
        links.add(i, t)
    prev = np.array([-1, -1, 1, -1])
    nxt = np.array([-1, 2, -1, -1])
    thread = np.array([0, 1, 1, 2])
    got = adjusters.context({1: 1.0, 3: 0.4}, prev=prev, nxt=nxt, thread=thread, alpha=0.5, beta=0.5, top=3)
    assert got.ids.tolist() == [1, 2, 3]
    assert got.scores.tolist() == (got.base + 0.5 * got.neighbour + 0.5 * got.thread).tolist()
    score = dict(zip(got.ids.tolist(), got.scores.tolist()))
    assert score[2] > score[3]  # neighbour of the best hit, in the best thread
    assert score[2] == 0.5 * 1.0 + 0.5 * 1.0  # pulled in through its neighbour, its thread is the best
    off = adjusters.context({1: 1.0, 3: 0.4}, prev=prev, nxt=nxt, thread=thread, alpha=0.0, beta=0.0, top=3)
    assert dict(zip(off.ids.tolist(), off.scores.tolist())) == {1: 1.0, 3: 0.4}


def test_neighbour_smoothing_pulls_in_thread_neighbours() -> None:
    # thread a: 1 → 2 → 3; thread b: 10 alone (ids index the columns)
    prev = np.full(11, -1)
    nxt = np.full(11, -1)
    prev[2], prev[3], nxt[1], nxt[2] = 1, 2, 2, 3
    got = adjusters.context({1: 1.0, 10: 0.4}, prev=prev, nxt=nxt, thread=np.zeros(11, dtype=np.int64), alpha=0.5,
                          beta=0.0, top=3)
    out = dict(zip(got.ids.tolist(), got.scores.tolist()))
    assert out == {1: 1.0, 2: 0.5, 10: 0.4}  # 2 pulled in through its neighbour 1; 3 is not adjacent to a hit


def test_thread_propagation_by_the_mean_of_each_threads_best() -> None:
    none = np.full(5, -1)
    thread = np.array([0, 1, 1, 2, 0])  # notes 1, 2 in thread 1; 3 in thread 2; 4 in none
    got = adjusters.context({1: 1.0, 2: 0.8, 3: 0.9, 4: 0.95}, prev=none, nxt=none, thread=thread, alpha=0.0,
                          beta=0.5, top=3)
    feat = dict(zip(got.ids.tolist(), got.thread.tolist()))
    assert feat[1] == 1.0 and feat[3] == 1.0 and feat[4] == 0.0  # a: mean(1, .8) = .9, b: .9: both the max
    got = adjusters.context({1: 1.0, 2: 1.0, 3: 0.5}, prev=none, nxt=none, thread=thread, alpha=0.0, beta=0.5, top=3)
    feat = dict(zip(got.ids.tolist(), got.thread.tolist()))
    out = dict(zip(got.ids.tolist(), got.scores.tolist()))
    assert feat[3] == 0.5 and out[3] == 0.75 and feat[1] == 1.0 and out[1] == 1.5

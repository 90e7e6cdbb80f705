"""The columnar context stage recall runs equals the readable reference (context.apply_context), bit for bit."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from packs.memory.context import ContextConfig, ThreadLinks, apply_context
from packs.memory.context_arrays import context_scores

N = 40  # note ids 0..N-1


@st.composite
def pools(draw):  # type: ignore[no-untyped-def]
    threads = draw(st.lists(st.integers(0, 4), min_size=N, max_size=N))  # 0 = no thread
    ids = draw(st.lists(st.integers(0, N - 1), min_size=0, max_size=25, unique=True))
    scores = draw(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=len(ids), max_size=len(ids)))
    alpha = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    beta = draw(st.sampled_from([0.0, 0.3, 0.5]))
    top = draw(st.integers(1, 4))
    return threads, ids, scores, alpha, beta, top


@settings(max_examples=300, deadline=None)
@given(pools())
def test_columns_equal_the_reference(case) -> None:  # type: ignore[no-untyped-def]
    threads, ids, scores, alpha, beta, top = case
    links = ThreadLinks()
    for i, t in enumerate(threads):
        links.add(i, t or None)
    prev = np.array([-1 if links.neighbours(i)[0] is None else links.neighbours(i)[0] for i in range(N)])
    nxt = np.array([-1 if links.neighbours(i)[1] is None else links.neighbours(i)[1] for i in range(N)])
    ref = apply_context(dict(zip(ids, scores)), "q", links=links,
                        config=ContextConfig(neighbour_alpha=alpha, thread_beta=beta, thread_top=top))
    got = context_scores(np.array(ids, dtype=np.int64), np.array(scores), prev=prev, nxt=nxt,
                         thread=np.array(threads), alpha=alpha, beta=beta, top=top)
    assert got.ids.tolist() == sorted(ref.scores)
    assert got.scores.tolist() == [ref.scores[i] for i in got.ids.tolist()]  # exact, not approximate
    comps = ref.components
    assert got.neighbour.tolist() == [comps["neighbour"].get(i, 0.0) for i in got.ids.tolist()]
    assert got.thread.tolist() == [comps["thread"].get(i, 0.0) for i in got.ids.tolist()]

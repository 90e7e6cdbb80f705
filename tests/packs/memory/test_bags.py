"""A batch's bags as flat arrays (bags.py) are the bags ``expand_bag`` makes one note at a time, bit for bit: the same
terms in the same order with the same float sums, whatever the tokens, the links and the weight."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.memory.engine.bags import expanded
from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.threads import expand_bag

WORDS = st.sampled_from(["a", "b", "c", "dd", "e", "f", "g", "hh", "2023", "may"])


@st.composite
def batches(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(1, 12))
    ids = list(range(10, 10 + n))
    tokens = {i: draw(st.lists(WORDS, max_size=8)) for i in ids}
    notes = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n, unique=True))
    link = st.one_of(st.just(-1), st.sampled_from(ids))
    prev = [draw(link) for _ in notes]
    nxt = [draw(link) for _ in notes]
    weight = draw(st.sampled_from([0.0, 0.5, 0.3, 1.0, 0.25]))
    return tokens, np.array(notes, dtype=np.int64), np.array(prev), np.array(nxt), weight


@settings(max_examples=300, deadline=None)
@given(batches())
def test_flat_bags_equal_expand_bag_bit_for_bit(batch):  # type: ignore[no-untyped-def]
    tokens, notes, prev, nxt, weight = batch
    flat = expanded(notes, prev, nxt, tokens.__getitem__, weight)
    assert flat.counts.sum() == flat.codes.size == flat.weights.size
    for i, (j, p, n) in enumerate(zip(notes.tolist(), prev.tolist(), nxt.tolist())):
        want = expand_bag(tokens[j], [tokens[x] for x in (p, n) if x >= 0], weight)
        got = flat.bag(i)
        assert list(got) == list(want)  # the same terms, in the same order
        assert [float(v) for v in got.values()] == [float(v) for v in want.values()]  # exactly equal sums


@settings(max_examples=100, deadline=None)
@given(batches())
def test_an_index_fed_flat_bags_equals_one_fed_the_same_bags_as_dicts(batch):  # type: ignore[no-untyped-def]
    tokens, notes, prev, nxt, weight = batch
    flat = expanded(notes, prev, nxt, tokens.__getitem__, weight)
    a, b = BM25Index(), BM25Index()
    for index in (a, b):  # a row there before, replaced by the batch's
        index.add_weighted([int(notes[0])], [{"old": 1.0, "a": 2.0}])
    a.add_flat(notes, flat)
    b.add_weighted(notes.tolist(), [flat.bag(i) for i in range(notes.size)])
    assert a.digest() == b.digest()
    for q in ("a b", "dd may", "old", "hh 2023 c"):
        assert a.search(q, 5) == b.search(q, 5)

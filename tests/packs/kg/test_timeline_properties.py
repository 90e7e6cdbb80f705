"""Property tests: any order of dated assertions keeps a clean timeline, and every past belief stays answerable."""
from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.kg import pack as kg_pack_module
from palimpsest_memory.runtime.testing import open_test_runtime

steps = st.lists(st.tuples(st.sampled_from("ABCD"), st.integers(2000, 2030),
                           st.one_of(st.none(), st.integers(1, 5))), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_random_assertions_keep_a_valid_timeline_and_replayable_beliefs(seq):
    now = [datetime(2040, 1, 1)]
    rt = open_test_runtime(kg_pack_module, clock=lambda: now[0])
    try:
        beliefs = []
        for obj, year, length in seq:
            fact = {"subject": "S", "predicate": "p", "object": obj, "valid_from": str(year)}
            if length:
                fact["valid_to"] = str(year + length)
            rt.call("kg.assert_fact", fact)
            hist = rt.call("kg.fact_history", {"subject": "S", "predicate": "p"}).facts
            beliefs.append((now[0], [(f.object, f.valid_from, f.valid_to) for f in hist]))
            live = [f for f in hist if f.valid_to is None or f.valid_to > f.valid_from]
            for a, b in zip(live, live[1:]):  # non-overlapping, in order
                assert a.valid_to is not None and a.valid_to <= b.valid_from
                if a.superseded_by is not None:  # a link means the successor starts where it ends
                    succ = next(f for f in hist if f.fact_id == a.superseded_by)
                    assert succ.valid_from == a.valid_to
            for f in hist:
                at = f.valid_from + timedelta(days=1)
                if f.valid_to is None or at < f.valid_to:  # as_of agrees with the history
                    got = rt.call("kg.facts", {"subject": "S", "as_of": at}).facts
                    assert [g.object for g in got] == [f.object]
            now[0] += timedelta(days=1)
        for when, snapshot in beliefs:  # every past belief is still answerable with known_at
            hist = rt.call("kg.fact_history", {"subject": "S", "predicate": "p", "known_at": when}).facts
            assert [(f.object, f.valid_from, f.valid_to) for f in hist] == snapshot
    finally:
        rt.close()

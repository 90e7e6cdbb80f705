"""Recall's filters apply at the candidate stage, not after it (issue 22, item 1).

Each case stores one target note that passes a filter and a crowd of notes that match the query better but fail
that filter. The crowd is larger than the most candidates a leg may return (``candidates_max``), so if a leg
picked its top-k before filtering, the crowd would fill it and the later filter would leave nothing: the
target must still be the one answer, for every filter recall offers and for each leg alone.
"""
from datetime import timedelta

import pytest

from store_support import HASHING, T0, Clock

CROWD = 250  # > candidates_max (200 in packs/memory/defaults.toml): the crowd can fill any leg's top-k
QUERY = "harbour cranes"
TARGET = "harbour cranes were looked at by the night crew on a long and rainy tuesday evening in the docks"
LATER = timedelta(days=10)

# id → (recall filter, the target's fields, the crowd's fields, target created at, crowd created at, crowd fate)
CASES = {
    "namespace": ({"namespace": "small"}, {"namespace": "small"}, {"namespace": "big"}, T0, T0, None),
    "default namespace": ({}, {}, {"namespace": "big"}, T0, T0, None),
    "scope": ({"scope": "mine"}, {"scope": "mine"}, {"scope": "theirs"}, T0, T0, None),
    "scope set vs none": ({"scope": "mine"}, {"scope": "mine"}, {}, T0, T0, None),
    "kind": ({"kind": "decision"}, {"kind": "decision"}, {"kind": "problem"}, T0, T0, None),
    "kind none": ({"kind": "none"}, {"kind": "none"}, {"kind": "milestone"}, T0, T0, None),
    "memory_type": ({"memory_type": "semantic"}, {"memory_type": "semantic"}, {"memory_type": "episodic"},
                    T0, T0, None),
    "tags any": ({"tags": ["mine", "ours"]}, {"tags": ["ours"]}, {"tags": ["theirs"]}, T0, T0, None),
    "tags all": ({"tags": ["mine", "ours"], "tag_mode": "all"}, {"tags": ["mine", "ours", "x"]},
                 {"tags": ["mine"]}, T0, T0, None),
    "min_salience": ({"min_salience": 0.5}, {"salience": 0.6}, {"salience": 0.4}, T0, T0, None),
    "created_after": ({"created_after": (T0 + LATER / 2).isoformat()}, {}, {}, T0 + LATER, T0, None),
    "created_before": ({"created_before": (T0 + LATER / 2).isoformat()}, {}, {}, T0, T0 + LATER, None),
    "as_of": ({"as_of": (T0 + LATER / 2).isoformat()}, {}, {}, T0, T0 + LATER, None),
    "archived": ({}, {}, {}, T0, T0, "archive"),
    "superseded": ({}, {}, {}, T0, T0, "supersede"),
}


def crowd_notes(fields: dict) -> list[dict]:
    # short notes made of the query's words: higher BM25 (shorter) and higher cosine than the target
    return [{"content": f"{QUERY} {n}", "salience": 0.5, **fields} for n in range(CROWD)]


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.mark.parametrize("case", list(CASES))
def test_a_filter_holds_against_a_crowd_that_fails_it(make_pal_runtime, clock, case):
    flt, target_fields, crowd_fields, target_at, crowd_at, fate = CASES[case]
    rt = make_pal_runtime(config=HASHING, clock=clock)
    # copies: CASES is shared by every run of this test (both backends), so it must never be mutated
    crowd_fields, target_fields = dict(crowd_fields), dict(target_fields)
    crowd_ns = crowd_fields.pop("namespace", None)
    target_ns = target_fields.pop("namespace", None)

    clock.now = crowd_at
    crowd = rt.call("memory.remember_many", {"notes": crowd_notes(crowd_fields), "namespace": crowd_ns}).ids
    clock.now = target_at
    target = rt.call("memory.remember", {"content": TARGET, "salience": 0.5, **target_fields},
                     namespace=target_ns).note.id
    clock.now = T0 + 2 * LATER
    if crowd_ns == target_ns:  # the crowd really crowds: with no filter, a crowd note ranks above the target
        top = rt.call("memory.recall", {"query": QUERY, "limit": 1}, namespace=target_ns).results
        assert top and top[0].note.id in crowd
    if fate == "archive":
        assert rt.call("memory.archive", {"ids": crowd}).archived == sorted(crowd)
    elif fate == "supersede":
        newer = rt.call("memory.remember", {"content": "the yard was repaved in spring"}).note.id
        done = rt.call("memory.link_many", {"links": [
            {"source_id": newer, "target_id": old, "relation": "supersedes"} for old in crowd]})
        assert sorted(done.superseded) == sorted(crowd)

    for fusion in ("rrf", "keyword_only", "vector_only"):
        for limit in (1, 10):
            got = rt.call("memory.recall", {"query": QUERY, "limit": limit, "fusion": fusion, **flt},
                          namespace=target_ns).results
            assert [h.note.id for h in got] == [target], (fusion, limit)

"""What the reliability work found (issue 9), one regression test per finding.

Fixed ones pass. A finding still open would be a strict xfail: it fails today, documents the bug, and turns into
an XPASS failure the day it is fixed (the last one, note edges written through kg.link, is fixed: packs/memory/mirrors/graph_sync.py).
"""
import ast
import re
from pathlib import Path

import pytest

import rel_support
from rel_support import HASHING, KNOWN_ISSUES, _deep, memory_fingerprint, table_checksums
from palimpsest_memory.runtime import errors

CAL_EDGE = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00"]


@pytest.fixture
def rt(make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    ids = rt.call("memory.remember_many", {"notes": [{"content": "Alice chose Postgres for Orion"},
                                                     {"content": "Bob prefers DuckDB for analytics"}]}).ids
    rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Orion"})
    rt.ids = ids
    return rt


def rejected_cleanly(rt, verb, params, code="invalid_params"):
    before = table_checksums(rt.store.con), memory_fingerprint(rt)
    with pytest.raises(errors.PalimpsestError) as info:
        rt.call(verb, params)
    assert info.value.code == code, f"{verb} raised {info.value.code}: {info.value}"
    assert (table_checksums(rt.store.con), memory_fingerprint(rt)) == before
    return info.value


def _strict_xfails() -> tuple[set[str], set[str]]:
    """(every test defined here, those marked ``pytest.mark.xfail(..., strict=True)``), read from the source."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    tests = {f.name for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")}
    strict = set()
    for f in tree.body:
        if isinstance(f, ast.FunctionDef) and f.name in tests:
            for d in f.decorator_list:
                if (isinstance(d, ast.Call) and ast.unparse(d.func) == "pytest.mark.xfail"
                        and any(k.arg == "strict" and ast.literal_eval(k.value) is True for k in d.keywords)):
                    strict.add(f.name)
    return tests, strict


def test_known_issues_and_strict_xfails_here_are_the_same_set():
    """Each known issue names a strict-xfail test here, and each strict xfail here is a known issue: with no open
    finding both are empty, and a stray xfail (or an entry whose test was deleted or un-xfailed) fails this."""
    tests, strict = _strict_xfails()
    assert "test_kg_centrality_with_a_zero_weight_edge" in tests  # the source really was read
    pinned = set()
    for entry in KNOWN_ISSUES:
        prefix, typ, pattern, where = entry
        path, name = where.split("::")
        assert path == "tests/reliability/test_findings.py" and name in tests, entry
        re.compile(pattern)
        pinned.add(name)
    assert pinned == strict


def test_the_fuzz_oracle_explains_a_failure_only_by_a_matching_known_issue(monkeypatch):
    entry = ("kg.", "InternalError", r"zero-weight", "tests/reliability/test_findings.py::test_x")
    monkeypatch.setattr(rel_support, "KNOWN_ISSUES", [entry])
    boom = errors.InternalError("PageRank failed on a zero-weight edge")
    assert rel_support.explain_failure("kg.centrality", boom) == entry[3]
    assert rel_support.explain_failure("memory.centrality", boom) is None  # another verb
    assert rel_support.explain_failure("kg.centrality", errors.StorageError("zero-weight")) is None  # another type
    assert rel_support.explain_failure("kg.centrality", errors.InternalError("something else")) is None
    monkeypatch.setattr(rel_support, "KNOWN_ISSUES", [])
    assert rel_support.explain_failure("kg.centrality", boom) is None


# -- fixed (packs/memory/models/notes.py, packs/brain/models.py) ---------------------------------------------------
@pytest.mark.parametrize("when", CAL_EDGE)
@pytest.mark.parametrize("verb, params", [
    ("memory.remember", lambda w: {"content": "dated at the edge of the calendar", "occurred_at": w}),
    ("memory.remember_many", lambda w: {"notes": [{"content": "edge", "occurred_at": w}]}),
    ("memory.recall", lambda w: {"query": "Postgres", "created_after": w}),
    ("memory.recall", lambda w: {"query": "Postgres", "now": w}),
    ("memory.prune", lambda w: {"before": w}),
    ("memory.upsert_belief", lambda w: {"fact_key": "k", "content": "c", "occurred_at": w}),
])
def test_memory_tz_date_at_calendar_edge_is_invalid_params(rt, verb, params, when):
    """Was: an aware datetime that leaves years 1-9999 in UTC raised a raw OverflowError out of rt.call."""
    err = rejected_cleanly(rt, verb, params(when))
    assert "outside the years 1-9999" in err.message


@pytest.mark.parametrize("verb, params", [
    ("memory.remember", {"content": "bad \ud800 text"}),
    ("memory.remember", {"content": "fine", "tags": ["x\udfff"]}),
    ("memory.remember_many", {"notes": [{"content": "fine"}, {"content": "fine", "scope": "\ud800"}]}),
    ("memory.upsert_belief", {"fact_key": "k\ud800", "content": "c"}),
    ("memory.consolidate", {"source_ids": [1], "content": "\udc00"}),
    ("memory.recall", {"query": "Postgres \ud800"}),
    ("brain.feedback", {"recall_id": "\ud800", "note_id": 1, "signal": "useful"}),
])
def test_memory_lone_surrogate_is_invalid_params(rt, verb, params):
    """Was: a lone surrogate (e.g. a JSON "\\ud800" escape) reached DuckDB and came back as a storage_error."""
    err = rejected_cleanly(rt, verb, params)
    assert "lone surrogate" in err.message or "unicode string" in err.message


@pytest.mark.parametrize("verb, params", [
    ("memory.get", {"ids": [2 ** 63]}),
    ("memory.get", {"ids": [1, -(2 ** 63) - 1]}),
    ("memory.edges", {"memory_id": 2 ** 70}),
    ("memory.archive", {"ids": [2 ** 64]}),
    ("memory.link", {"source_id": 1, "target_id": 2 ** 63, "relation": "supports"}),
    ("memory.consolidate", {"source_ids": [2 ** 63], "content": "c"}),
    ("brain.feedback", {"recall_id": "r", "note_id": 2 ** 63, "signal": "useful"}),
])
def test_ids_beyond_64_bits_are_invalid_params(rt, verb, params):
    """Was: an id past BIGINT made DuckDB's cast fail: storage_error (HTTP 500) for a caller's mistake."""
    err = rejected_cleanly(rt, verb, params)
    assert "64-bit" in err.message


def test_ids_at_the_64_bit_edge_are_just_missing(rt):
    got = rt.call("memory.get", {"ids": [2 ** 63 - 1, -(2 ** 63), rt.ids[0]]})
    assert got.missing == [2 ** 63 - 1, -(2 ** 63)] and [n.id for n in got.notes] == [rt.ids[0]]


# -- open: packs/kg/** (not ours to edit) ------------------------------------------------------------------
@pytest.mark.parametrize("verb, params", [
    ("kg.assert_fact", {"subject": "Al\ud800ice", "predicate": "works_at", "object": "Orion"}),
    ("kg.upsert_entity", {"name": "x\udfff"}),
    ("kg.link", {"src": "e:1", "dst": "e:2", "relation": "supports", "properties": {"k\ud800": 1}}),
])
def test_kg_lone_surrogate_is_invalid_params(rt, verb, params):
    rejected_cleanly(rt, verb, params)


@pytest.mark.parametrize("when", CAL_EDGE)
def test_kg_tz_date_at_calendar_edge(rt, when):
    rejected_cleanly(rt, "kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Acme",
                                            "valid_from": when})


def test_kg_deep_json_properties(rt):
    rejected_cleanly(rt, "kg.link", {"src": "e:1", "dst": "e:2", "relation": "supports",
                                     "properties": _deep(3000, "dict")})


@pytest.mark.parametrize("via", ["kg", "memory"])
def test_kg_centrality_with_a_zero_weight_edge(rt, via):
    a, b = rt.ids
    c = rt.call("memory.remember", {"content": "Carol reviewed the Orion schema"}).note.id
    d = rt.call("memory.remember", {"content": "Dave signed off the Orion schema"}).note.id
    # the zero-weight edge's ends sort before the positive edge's ends
    rt.call("memory.link", {"source_id": a, "target_id": b, "relation": "supports", "weight": 0})
    rt.call("memory.link", {"source_id": c, "target_id": d, "relation": "supports", "weight": 1})
    res = (rt.call("kg.centrality", {"relations": ["supports"], "include_facts": False}) if via == "kg"
           else rt.call("memory.centrality", {}))
    # only c → d counts: two nodes, one edge, d ranked first (exact values: tests/packs/kg/test_pagerank_exact.py)
    if via == "kg":
        assert (res.nodes, res.edges) == (2, 1) and [n.node_id for n in res.top] == [f"m:{d}", f"m:{c}"]
    else:
        assert (res.notes, res.edges) == (2, 1) and [n.note_id for n in res.top] == [d, c]
    assert res.top[0].score == 1.0 and 0 < res.top[1].score < 1


def test_kg_graph_recall_text_is_capped(make_pal_runtime):
    rt = make_pal_runtime(config={**HASHING, "packs": {**HASHING["packs"], "kg": {"detect_max_text_length": 100}}})
    rt.call("kg.upsert_entity", {"name": "Alice"})
    with pytest.raises(errors.LimitExceeded):
        rt.call("kg.graph_recall", {"text": "Alice " * 100})


# -- fixed (packs/memory/remember.py) -------------------------------------------------------------------------
def test_a_full_batch_may_mention_more_entities_than_one_kg_call_takes(make_pal_runtime):
    """Was: remember_many sent all its texts to one kg.detect_entities_many and all mention links to one
    kg.link_many, so a legal batch failed with the kg's cap (3 400 notes naming 3 entities each is past the default
    kg.max_batch of 10 000 links). The kg calls are now chunked inside the same transaction."""
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing"}, "kg": {"max_batch": 1000}}})
    for name in ("Alice", "Orion", "Postgres"):
        rt.call("kg.upsert_entity", {"name": name})
    res = rt.call("memory.remember_many", {"notes": [{"content": f"Alice moved Orion to Postgres, step {i}"}
                                                     for i in range(1100)]})
    assert res.created == 1100
    (n,) = rt.store.con.execute("SELECT count(*) FROM kg.edges WHERE relation = 'mentions'").fetchone()
    assert n == 3300


# -- fixed: packs/memory/mirrors/graph_sync.py ------------------------------------------------------------------------------
def test_memory_graph_follows_note_edges_written_through_the_kg(rt):
    """An 'm:'-to-'m:' edge written or removed through kg.link / kg.link_many / kg.unlink reaches the live memory
    graph (it used to appear only after a restart rebuilt the graph from kg.edges)."""
    from rel_support import index_problems

    a, b = rt.ids
    eid = rt.call("kg.link", {"src": f"m:{a}", "dst": f"m:{b}", "relation": "supports"}).edge.id
    assert not index_problems(rt)
    assert [e.id for e in rt.call("memory.edges", {"memory_id": a}).edges] == [eid]
    rt.call("kg.link_many", {"links": [{"src": f"m:{b}", "dst": f"m:{a}", "relation": "related_to"},
                                       {"src": f"m:{a}", "dst": "e:1", "relation": "mentions"}]})
    assert not index_problems(rt)
    rt.call("kg.unlink", {"edge_id": eid})
    assert not index_problems(rt)
    assert {e.relation for e in rt.call("memory.edges", {"memory_id": a}).edges} == {"related_to"}

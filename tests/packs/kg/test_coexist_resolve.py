"""Semantic 4: many predicates and allow_coexisting; kg.resolve."""
from __future__ import annotations


def speak(kg, lang, **kw):
    return kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "speaks_language", "object": lang,
                                      "literal": True, **kw})


def test_many_predicate_values_coexist_and_resolve_picks_by_confidence(kg):
    kg.call("kg.define_predicate", {"name": "speaks_language", "cardinality": "many"})
    speak(kg, "English", confidence=0.7, source_id="n1")
    speak(kg, "French", confidence=0.9)
    res = speak(kg, "German", confidence=0.4)
    assert res.superseded == []
    facts = kg.call("kg.facts", {"subject": "Alice", "predicate": "speaks_language"}).facts
    assert sorted(f.object for f in facts) == ["English", "French", "German"]
    assert all(f.literal and f.object_id is None for f in facts)
    r = kg.call("kg.resolve", {"subject": "Alice", "predicate": "speaks_language"})
    assert r.value == "French"
    assert [e.fact.object for e in r.evidence] == ["French", "English", "German"]
    assert r.evidence[1].sources == ["n1"]
    assert speak(kg, "English").action == "evidence"
    preds = kg.call("kg.predicates", {}).predicates
    assert [(p.name, p.cardinality) for p in preds] == [("speaks_language", "many")]


def test_allow_coexisting_overrides_a_one_predicate(kg):
    kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta", "confidence": 0.5})
    res = kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Uni",
                                     "confidence": 0.8, "allow_coexisting": True})
    assert res.superseded == []
    facts = kg.call("kg.facts", {"subject": "Alice", "predicate": "works_at"}).facts
    assert sorted(f.object for f in facts) == ["Meta", "Uni"]
    assert kg.call("kg.resolve", {"subject": "Alice", "predicate": "works_at"}).value == "Uni"


def test_resolve_ties_break_on_latest_valid_from_then_latest_recorded(kg, clock):
    kg.call("kg.define_predicate", {"name": "likes", "cardinality": "many"})
    kg.call("kg.assert_fact", {"subject": "A", "predicate": "likes", "object": "x", "valid_from": "2020"})
    kg.call("kg.assert_fact", {"subject": "A", "predicate": "likes", "object": "y", "valid_from": "2021"})
    assert kg.call("kg.resolve", {"subject": "A", "predicate": "likes"}).value == "y"
    clock.tick()
    kg.call("kg.assert_fact", {"subject": "A", "predicate": "likes", "object": "z", "valid_from": "2021"})
    assert kg.call("kg.resolve", {"subject": "A", "predicate": "likes"}).value == "z"
    assert kg.call("kg.resolve", {"subject": "A", "predicate": "likes", "as_of": "2020-06"}).value == "x"


def test_resolve_with_nothing_valid_returns_no_winner(kg):
    kg.call("kg.assert_fact", {"subject": "A", "predicate": "p", "object": "x", "valid_from": "2020"})
    r = kg.call("kg.resolve", {"subject": "A", "predicate": "p", "as_of": "2019"})
    assert r.winner is None and r.evidence == []


def test_overlapping_same_value_intervals_merge(kg):
    kg.call("kg.define_predicate", {"name": "plays_for", "cardinality": "many"})
    f = {"subject": "P", "predicate": "plays_for", "object": "Club"}
    kg.call("kg.assert_fact", {**f, "valid_from": "1990", "valid_to": "1996"})
    res = kg.call("kg.assert_fact", {**f, "valid_from": "1994", "valid_to": "2001"})
    assert res.action == "evidence" and res.fact.valid_to.year == 2001
    assert [x.object for x in kg.call("kg.facts", {"subject": "P", "as_of": "1999"}).facts] == ["Club"]


def test_explicit_end_extension_stops_at_the_successor(kg):
    f = {"subject": "Q", "predicate": "works_at"}
    kg.call("kg.assert_fact", {**f, "object": "A", "valid_from": "2000", "valid_to": "2002"})
    b = kg.call("kg.assert_fact", {**f, "object": "B", "valid_from": "2005"}).fact
    res = kg.call("kg.assert_fact", {**f, "object": "A", "valid_from": "2001", "valid_to": "2010"})
    assert res.action == "evidence" and res.fact.valid_to.year == 2005 and res.fact.superseded_by == b.fact_id

"""Entities: resolution by name or alias, upsert, detection (word boundaries, CJK, cache invalidation)."""
from __future__ import annotations

import pytest

from palimpsest_memory.runtime import errors


def test_unknown_names_are_created_and_resolved_case_insensitively(kg):
    kg.call("kg.assert_fact", {"subject": "Alice  Smith", "predicate": "works_at", "object": "Meta",
                               "subject_kind": "person", "object_kind": "org"})
    ent = kg.call("kg.entity", {"name": "alice smith"})
    assert ent.entity.name == "Alice Smith" and ent.entity.kind == "person"
    assert [f.object for f in ent.facts] == ["Meta"]
    meta = kg.call("kg.entity", {"name": "META"})
    assert meta.entity.kind == "org" and [f.subject.name for f in meta.incoming] == ["Alice Smith"]
    kinds = {e.name: e.kind for e in kg.call("kg.entities", {}).entities}
    assert kinds == {"Alice Smith": "person", "Meta": "org"}
    assert [e.name for e in kg.call("kg.entities", {"kind": "org"}).entities] == ["Meta"]


def test_upsert_adds_aliases_and_kind_and_aliases_resolve(kg):
    first = kg.call("kg.upsert_entity", {"name": "International Business Machines", "kind": "org"})
    assert first.created
    again = kg.call("kg.upsert_entity", {"name": "international business machines", "aliases": ["IBM", "Big Blue"]})
    assert not again.created and again.entity.id == first.entity.id
    assert again.entity.aliases == ["Big Blue", "IBM"]  # by creation time, then text
    via_alias = kg.call("kg.upsert_entity", {"name": "ibm", "kind": "company"})
    assert via_alias.entity.id == first.entity.id and via_alias.entity.kind == "company"
    kg.call("kg.assert_fact", {"subject": "Bob", "predicate": "works_at", "object": "Big Blue"})
    assert kg.call("kg.entity", {"name": "IBM"}).incoming[0].subject.name == "Bob"
    kg.call("kg.upsert_entity", {"name": "Oracle"})
    with pytest.raises(errors.Conflict):
        kg.call("kg.upsert_entity", {"name": "Oracle", "aliases": ["IBM"]})


def test_detect_entities_word_boundaries_aliases_cjk(kg):
    kg.call("kg.upsert_entity", {"name": "New York", "kind": "place", "aliases": ["NYC"]})
    kg.call("kg.upsert_entity", {"name": "York", "kind": "place"})
    kg.call("kg.upsert_entity", {"name": "Al", "kind": "person"})
    kg.call("kg.upsert_entity", {"name": "東京", "kind": "place"})
    kg.call("kg.upsert_entity", {"name": "C++", "kind": "concept"})
    text = "Al moved from new  york to NYC, then York; Alice stayed. 東京に行った. She codes C++."
    res = kg.call("kg.detect_entities", {"text": text})
    got = [(m.name, m.matched) for m in res.matches]
    assert got == [("Al", "Al"), ("New York", "new  york"), ("New York", "NYC"), ("York", "York"),
                   ("東京", "東京"), ("C++", "C++")]
    m = res.matches[1]
    assert text[m.start:m.end] == "new  york" and m.node_id == f"e:{m.entity_id}"
    assert len(res.entity_ids) == 5


def test_detect_entities_many_equals_one_call_per_text(kg):
    kg.call("kg.upsert_entity", {"name": "Orion", "kind": "project", "aliases": ["the orion project"]})
    kg.call("kg.upsert_entity", {"name": "Ada", "kind": "person"})
    texts = ["Ada leads the Orion project", "nothing known here", "ORION, again: orion", "Ada"]
    many = kg.call("kg.detect_entities_many", {"texts": texts}).results
    assert many == [kg.call("kg.detect_entities", {"text": t}) for t in texts]
    assert [r.entity_ids for r in many][1] == []
    limit = kg._settings["kg"].detect_max_text_length
    with pytest.raises(errors.LimitExceeded) as exc:
        kg.call("kg.detect_entities_many", {"texts": ["ok", "x" * (limit + 1)]})
    assert exc.value.details["errors"][0]["loc"] == ["texts", "1"]
    with pytest.raises(errors.InvalidParams):
        kg.call("kg.detect_entities_many", {"texts": []})


def test_detector_cache_follows_commits_and_ignores_rollbacks(kg):
    assert kg.call("kg.detect_entities", {"text": "Zorro rides"}).matches == []
    kg.call("kg.upsert_entity", {"name": "Zorro"})
    assert [m.name for m in kg.call("kg.detect_entities", {"text": "Zorro rides"}).matches] == ["Zorro"]
    with pytest.raises(errors.InvalidParams):  # creates 'Diego' then fails: rolled back
        kg.call("kg.assert_facts", {"facts": [{"subject": "Diego", "predicate": "p", "object": "x"},
                                              {"subject": "Diego", "predicate": "p", "object": "x",
                                               "confidence": 3}]})
    assert kg.call("kg.detect_entities", {"text": "Diego"}).matches == []
    kg.call("kg.upsert_entity", {"name": "Zorro", "aliases": ["El Zorro", "Diego"]})
    assert [m.matched for m in kg.call("kg.detect_entities", {"text": "Diego is El Zorro"}).matches] == [
        "Diego", "El Zorro"]


def test_detect_rejects_too_long_text(kg):
    with pytest.raises(errors.LimitExceeded):
        kg.call("kg.detect_entities", {"text": "x" * 100001})


def test_entities_page_newest_first_by_a_keyset_cursor(kg):
    made = [kg.call("kg.upsert_entity", {"name": f"Person {i}", "kind": "person"}).entity.id for i in range(7)]
    kg.call("kg.upsert_entity", {"name": "Acme", "kind": "org"})
    seen, before = [], None
    while True:
        page = kg.call("kg.entities", {"kind": "person", "limit": 3, **({"before_id": before} if before else {})})
        assert len(page.entities) <= 3
        seen += [e.id for e in page.entities]
        if before is None:
            kg.call("kg.upsert_entity", {"name": "Late Person", "kind": "person"})  # must not shift the pages
        before = page.next_before_id
        if before is None:
            break
    assert seen == sorted(made, reverse=True)


def _page_all(kg, params, limit, between=None):
    seen, cursor = [], None
    while True:
        page = kg.call("kg.facts", {**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
        assert len(page.facts) <= limit
        seen += [f.fact_id for f in page.facts]
        if between is not None and cursor is None:
            between()
        cursor = page.next_cursor
        if cursor is None:
            return seen


@pytest.mark.parametrize("params", [{}, {"subject": "Ann"}, {"subject": "Ann", "include_superseded": True},
                                    {"predicate": "likes", "known_at": "2030-01-01"}])
def test_facts_page_by_a_keyset_cursor_in_valid_time_order(kg, params):
    kg.call("kg.define_predicate", {"name": "likes", "cardinality": "many"})
    for i in range(9):  # some with an unknown start (first in the order), two sharing a start
        start = None if i % 4 == 0 else f"2020-0{1 + i % 3}-01"
        kg.call("kg.assert_fact", {"subject": "Ann", "predicate": "likes", "object": f"thing {i}", "literal": True,
                                   **({"valid_from": start} if start else {})})
    whole = [f.fact_id for f in kg.call("kg.facts", {**params, "limit": 1000}).facts]
    assert len(whole) == 9
    late = lambda: kg.call("kg.assert_fact", {"subject": "Ann", "predicate": "likes", "object": "early",  # noqa: E731
                                              "literal": True, "valid_from": "1990-01-01"})
    seen = _page_all(kg, params, 2, between=late)  # an insert while paging neither repeats nor skips a fact
    assert [f for f in seen if f in whole] == whole and len(set(seen)) == len(seen)
    assert _page_all(kg, params, 4) == [f.fact_id for f in kg.call("kg.facts", {**params, "limit": 1000}).facts]


def test_facts_refuse_a_cursor_they_did_not_make(kg):
    with pytest.raises(errors.InvalidParams) as exc:
        kg.call("kg.facts", {"cursor": "not-a-cursor"})
    assert exc.value.details["errors"][0]["loc"] == ["cursor"]

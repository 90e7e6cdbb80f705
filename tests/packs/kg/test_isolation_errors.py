"""Semantics 8 and 9: namespaces are sealed; bad input is a typed error and writes nothing."""
from __future__ import annotations

import pytest

from palimpsest_memory.runtime import errors

from .conftest import counts


def test_namespaces_never_see_each_other(kg):
    kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta"}, namespace="a")
    link = kg.call("kg.link", {"src": "m:1", "dst": "m:2", "relation": "supports"}, namespace="a")
    kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Google", "namespace": "b"})
    assert [f.object for f in kg.call("kg.facts", {"subject": "Alice"}, namespace="a").facts] == ["Meta"]
    assert [f.object for f in kg.call("kg.facts", {"subject": "Alice"}, namespace="b").facts] == ["Google"]
    assert kg.call("kg.facts", {"subject": "Alice"}).facts == []  # default namespace
    assert kg.call("kg.edges", {"node_id": "m:1"}, namespace="b").edges == []
    assert len(kg.call("kg.edges", {"node_id": "m:1"}, namespace="a").edges) == 1
    assert kg.call("kg.detect_entities", {"text": "Meta and Alice"}, namespace="b").entity_ids != \
        kg.call("kg.detect_entities", {"text": "Meta and Alice"}, namespace="a").entity_ids
    assert [m.name for m in kg.call("kg.detect_entities", {"text": "Meta"}, namespace="b").matches] == []
    a_ent = kg.call("kg.entity", {"name": "Alice"}, namespace="a").entity
    with pytest.raises(errors.NotFound):
        kg.call("kg.entity", {"id": a_ent.id}, namespace="b")
    with pytest.raises(errors.NotFound):  # an entity node of another namespace cannot be linked
        kg.call("kg.link", {"src": a_ent.node_id, "dst": "m:9", "relation": "mentions"}, namespace="b")
    with pytest.raises(errors.NotFound):
        kg.call("kg.unlink", {"edge_id": link.edge.id}, namespace="b")
    with pytest.raises(errors.NotFound):
        kg.call("kg.retract_fact", {"fact_id": 1}, namespace="b")
    kg.call("kg.define_predicate", {"name": "works_at", "cardinality": "many"}, namespace="b")
    assert kg.call("kg.predicates", {}, namespace="a").predicates == []


FACT = {"subject": "Alice", "predicate": "works_at", "object": "Meta"}
BAD_FACTS = [
    ({**FACT, "subject": "   "}, ["subject"]),
    ({**FACT, "object": ""}, ["object"]),
    ({**FACT, "predicate": "Works At"}, ["predicate"]),
    ({**FACT, "valid_from": "2022", "valid_to": "2021"}, ["valid_to"]),
    ({**FACT, "valid_from": "2022", "valid_to": "2022"}, ["valid_to"]),
    ({**FACT, "valid_from": "yesterday"}, ["valid_from"]),
    ({**FACT, "confidence": 1.5}, ["confidence"]),
    ({**FACT, "confidence": -0.1}, ["confidence"]),
    ({**FACT, "subject_kind": "Person"}, ["subject_kind"]),
    ({**FACT, "bogus": 1}, ["bogus"]),
]


@pytest.mark.parametrize("params,loc", BAD_FACTS)
def test_bad_fact_is_rejected_with_its_field_and_writes_nothing(kg, params, loc):
    kg.call("kg.assert_fact", {"subject": "Zed", "predicate": "p", "object": "q"})
    before = counts(kg)
    with pytest.raises(errors.InvalidParams) as exc:
        kg.call("kg.assert_fact", params)
    assert exc.value.details["errors"][0]["loc"][-len(loc):] == loc
    assert counts(kg) == before


def test_one_bad_fact_rejects_the_whole_batch(kg):
    before = counts(kg)
    good = [{"subject": f"S{i}", "predicate": "p", "object": f"O{i}"} for i in range(5)]
    with pytest.raises(errors.InvalidParams) as exc:
        kg.call("kg.assert_facts", {"facts": [*good, {**FACT, "confidence": 2}]})
    assert exc.value.details["errors"][0]["loc"][:2] == ["facts", "5"]
    assert counts(kg) == before


def test_failure_after_writes_rolls_everything_back(kg):
    before = counts(kg)
    too_long = "x" * 5000
    with pytest.raises(errors.LimitExceeded):  # entities of the first items would be created first
        kg.call("kg.assert_facts", {"facts": [FACT, {**FACT, "object": too_long}]})
    assert counts(kg) == before
    kg.call("kg.upsert_entity", {"name": "IBM", "aliases": ["Big Blue"]})
    before = counts(kg)
    with pytest.raises(errors.Conflict):  # the new entity is written before the alias conflict is found
        kg.call("kg.upsert_entity", {"name": "Lenovo", "aliases": ["Legend", "big blue"]})
    assert counts(kg) == before
    with pytest.raises(errors.NotFound):
        kg.call("kg.entity", {"name": "Lenovo"})


@pytest.mark.parametrize("params,loc", [
    ({"src": "m:1", "dst": "m:1", "relation": "supports"}, ["dst"]),
    ({"src": "m:1", "dst": "m:2", "relation": "likes"}, ["relation"]),
    ({"src": "x:1", "dst": "m:2", "relation": "supports"}, ["src"]),
    ({"src": "e:abc", "dst": "m:2", "relation": "supports"}, ["src"]),
    ({"src": "m:1", "dst": "m:2", "relation": "supports", "weight": -1}, ["weight"]),
    ({"src": "m:1", "dst": "m:2", "relation": "supports", "valid_from": "2022", "valid_to": "2020"}, ["valid_to"]),
])
def test_bad_link_is_rejected_and_writes_nothing(kg, params, loc):
    before = counts(kg)
    with pytest.raises(errors.InvalidParams) as exc:
        kg.call("kg.link", params)
    assert exc.value.details["errors"][0]["loc"][-1:] == loc
    assert counts(kg) == before


def test_link_many_with_one_bad_node_writes_nothing(kg):
    before = counts(kg)
    with pytest.raises(errors.NotFound) as exc:
        kg.call("kg.link_many", {"links": [{"src": "m:1", "dst": "m:2", "relation": "mentions"},
                                           {"src": "m:1", "dst": "e:999", "relation": "mentions"}]})
    assert exc.value.details["errors"][0]["loc"] == ["links", 1, "dst"]
    assert counts(kg) == before


def test_limits_and_lookups_are_typed_errors(kg):
    with pytest.raises(errors.LimitExceeded):
        kg.call("kg.assert_facts", {"facts": [FACT] * 10001})
    with pytest.raises(errors.InvalidParams):
        kg.call("kg.assert_facts", {"facts": []})
    with pytest.raises(errors.NotFound):
        kg.call("kg.retract_fact", {"fact_id": 42})
    with pytest.raises(errors.NotFound):
        kg.call("kg.fact_history", {"subject": "Nobody", "predicate": "p"})
    with pytest.raises(errors.LimitExceeded):
        kg.call("kg.graph_recall", {"entities": [], "max_depth": 99})
    fid = kg.call("kg.assert_fact", FACT).fact.fact_id
    kg.call("kg.retract_fact", {"fact_id": fid})
    with pytest.raises(errors.Conflict):
        kg.call("kg.retract_fact", {"fact_id": fid})

"""Semantics 1, 2, 3, 5, 6, 7: supersession, late-arriving facts, evidence, bi-temporal views, retraction."""
from __future__ import annotations

from datetime import datetime


def works(kg, obj, **kw):
    return kg.call("kg.assert_fact", {"subject": "Alice", "predicate": "works_at", "object": obj, **kw})


def objects(kg, **kw):
    return [f.object for f in kg.call("kg.facts", {"subject": "Alice", "predicate": "works_at", **kw}).facts]


def history(kg, **kw):
    return kg.call("kg.fact_history", {"subject": "Alice", "predicate": "works_at", **kw}).facts


def test_new_object_supersedes_and_links(kg, clock):
    meta = works(kg, "Meta", valid_from="2020").fact
    clock.tick()
    res = works(kg, "Google", valid_from="2023-06")
    assert res.action == "created"
    assert [f.fact_id for f in res.superseded] == [meta.fact_id]
    old = res.superseded[0]
    assert old.valid_to == datetime(2023, 6, 1) and old.superseded_by == res.fact.fact_id
    assert objects(kg, as_of="2021") == ["Meta"]
    assert objects(kg, as_of="2023-05") == ["Meta"]  # before the June change
    assert objects(kg, as_of="2024") == ["Google"]
    assert objects(kg) == ["Google"]
    assert [(f.object, f.valid_from, f.valid_to) for f in history(kg)] == [
        ("Meta", datetime(2020, 1, 1), datetime(2023, 6, 1)), ("Google", datetime(2023, 6, 1), None)]


def test_late_arriving_fact_is_inserted_into_the_timeline(kg, clock):
    works(kg, "Meta", valid_from="2020")
    clock.tick()
    google = works(kg, "Google", valid_from="2023-06").fact
    clock.tick()
    res = works(kg, "Startup", valid_from="2021-06")
    assert res.fact.valid_from == datetime(2021, 6, 1) and res.fact.valid_to == datetime(2023, 6, 1)
    assert res.fact.superseded_by == google.fact_id
    assert [f.object for f in res.superseded] == ["Meta"]
    h = history(kg)
    assert [(f.object, f.valid_from, f.valid_to) for f in h] == [
        ("Meta", datetime(2020, 1, 1), datetime(2021, 6, 1)),
        ("Startup", datetime(2021, 6, 1), datetime(2023, 6, 1)),
        ("Google", datetime(2023, 6, 1), None)]
    assert h[0].superseded_by == res.fact.fact_id
    assert h[2].version_id == google.version_id  # Google untouched: same version
    assert objects(kg, as_of="2022") == ["Startup"]


def test_fact_older_than_everything_goes_first_and_is_closed_by_its_successor(kg, clock):
    meta = works(kg, "Meta", valid_from="2020").fact
    clock.tick()
    res = works(kg, "School", valid_from="2015")
    assert res.superseded == []
    assert res.fact.valid_to == datetime(2020, 1, 1) and res.fact.superseded_by == meta.fact_id
    assert [f.object for f in history(kg)] == ["School", "Meta"]
    assert objects(kg, as_of="2016") == ["School"] and objects(kg, as_of="2021") == ["Meta"]


def test_same_start_different_object_replaces_the_old_value(kg, clock):
    works(kg, "Meta", valid_from="2020")
    clock.tick()
    works(kg, "Amazon", valid_from="2020")
    assert objects(kg, as_of="2021") == ["Amazon"]
    h = history(kg)
    assert h[0].object == "Meta" and h[0].valid_to == h[0].valid_from  # an empty interval, kept in history


def test_reasserting_the_current_object_adds_evidence_not_a_version(kg, clock):
    first = works(kg, "Meta", valid_from="2020", confidence=0.6, source_id="n1").fact
    clock.tick()
    again = works(kg, "meta", confidence=0.5, source_id="n2")
    assert again.action == "evidence" and again.fact.fact_id == first.fact_id
    assert again.fact.evidence_count == 2 and again.fact.confidence == 0.6
    assert abs(again.fact.combined_confidence - (1 - 0.4 * 0.5)) < 1e-9
    clock.tick()
    inside = works(kg, "Meta", valid_from="2022")  # a start inside Meta's interval: still the same fact
    assert inside.action == "evidence" and inside.fact.evidence_count == 3
    assert len(kg.call("kg.fact_history", {"subject": "Alice", "predicate": "works_at",
                                           "include_versions": True}).versions) == 1
    res = kg.call("kg.resolve", {"subject": "Alice", "predicate": "works_at"})
    assert res.evidence[0].sources == ["n1", "n2"]


def test_same_object_known_to_start_earlier_extends_the_fact(kg, clock):
    works(kg, "Meta", valid_from="2020")
    clock.tick()
    google = works(kg, "Google", valid_from="2023-06").fact
    clock.tick()
    res = works(kg, "Google", valid_from="2023-01")
    assert res.action == "extended" and res.fact.fact_id == google.fact_id
    assert res.fact.valid_from == datetime(2023, 1, 1)
    assert [(f.object, f.valid_to) for f in history(kg)] == [("Meta", datetime(2023, 1, 1)), ("Google", None)]


def test_known_at_answers_what_we_believed_then(kg, clock):
    works(kg, "Meta", valid_from="2020")
    before_google = clock.tick()
    clock.tick()
    works(kg, "Google", valid_from="2023-06")
    before_startup = clock.tick()
    clock.tick()
    works(kg, "Startup", valid_from="2021-06")
    assert objects(kg, known_at=before_google) == ["Meta"]  # Meta as current, then
    assert objects(kg, known_at=before_google, as_of="2024") == ["Meta"]
    assert objects(kg, known_at=before_startup, as_of="2022") == ["Meta"]  # Startup not yet known
    assert objects(kg, as_of="2022") == ["Startup"]
    old = history(kg, known_at=before_startup)
    assert [(f.object, f.valid_to) for f in old] == [("Meta", datetime(2023, 6, 1)), ("Google", None)]
    versions = kg.call("kg.fact_history", {"subject": "Alice", "predicate": "works_at",
                                           "include_versions": True}).versions
    assert sorted(v.object for v in versions) == ["Google", "Meta", "Meta", "Meta", "Startup"]
    assert [v.valid_to for v in versions if v.object == "Meta"] == [
        None, datetime(2023, 6, 1), datetime(2021, 6, 1)]  # three beliefs about Meta, none lost


def test_retraction_leaves_current_answers_but_not_history_or_earlier_views(kg, clock):
    works(kg, "Meta", valid_from="2020")
    clock.tick()
    google = works(kg, "Google", valid_from="2023-06").fact
    believed = clock.tick()
    clock.tick()
    res = kg.call("kg.retract_fact", {"fact_id": google.fact_id})
    assert res.fact.retracted_at == clock.now
    assert objects(kg) == ["Meta"]  # Meta's end was inferred from Google: it is reopened
    assert [(f.object, f.retracted_at is not None) for f in history(kg)] == [("Meta", False), ("Google", True)]
    assert objects(kg, known_at=believed) == ["Google"]
    assert objects(kg, known_at=believed, as_of="2021") == ["Meta"]


def test_retraction_in_the_middle_heals_the_chain(kg, clock):
    works(kg, "Meta", valid_from="2020")
    clock.tick()
    google = works(kg, "Google", valid_from="2023-06").fact
    clock.tick()
    startup = works(kg, "Startup", valid_from="2021-06").fact
    clock.tick()
    res = kg.call("kg.retract_fact", {"fact_id": startup.fact_id})
    assert len(res.healed) == 1
    meta = history(kg)[0]
    assert meta.valid_to == datetime(2023, 6, 1) and meta.superseded_by == google.fact_id
    assert objects(kg, as_of="2022") == ["Meta"]


def test_explicit_valid_to_ends_without_successor(kg, clock):
    res = works(kg, "Meta", valid_from="2020", valid_to="2022-03-01")
    assert res.fact.valid_to == datetime(2022, 3, 1) and res.fact.superseded_by is None
    assert objects(kg, as_of="2021") == ["Meta"]
    assert objects(kg, as_of="2023") == [] and objects(kg) == []
    clock.tick()
    nxt = works(kg, "Google", valid_from="2023")  # after a gap: nothing to close
    assert nxt.superseded == []
    assert history(kg)[0].superseded_by is None


def test_undated_change_starts_now(kg, clock):
    works(kg, "Meta")
    clock.tick()
    res = works(kg, "Google")
    assert res.fact.valid_from == clock.now
    assert res.superseded[0].valid_to == clock.now and res.superseded[0].valid_from is None
    assert objects(kg, as_of="2000") == ["Meta"]


def test_batch_applies_in_order_with_the_same_semantics(kg):
    res = kg.call("kg.assert_facts", {"facts": [
        {"subject": "Bob", "predicate": "lives_in", "object": "Paris", "valid_from": "2010"},
        {"subject": "Bob", "predicate": "lives_in", "object": "Berlin", "valid_from": "2015"},
        {"subject": "Bob", "predicate": "lives_in", "object": "Rome", "valid_from": "2012"},
        {"subject": "Bob", "predicate": "lives_in", "object": "Berlin", "valid_from": "2016"},
    ]})
    assert [o.action for o in res.outcomes] == ["created", "created", "created", "evidence"]
    assert res.outcomes[1].superseded == [res.outcomes[0].fact_id]
    assert res.outcomes[2].superseded == [res.outcomes[0].fact_id]
    h = kg.call("kg.fact_history", {"subject": "Bob", "predicate": "lives_in"}).facts
    assert [(f.object, f.valid_from.year, f.valid_to and f.valid_to.year) for f in h] == [
        ("Paris", 2010, 2012), ("Rome", 2012, 2015), ("Berlin", 2015, None)]
    assert all(f.version_id for f in h)

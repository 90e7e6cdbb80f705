"""A fact's source that names a note (``m:<id>``) must be a note of the fact's namespace (issue 46, low fault):
kg.assert_fact accepted a missing, forgotten or other namespace's note, and such a fact outlived the forget of the
note it names. The kg asks the memory pack, owner of the ``m:`` nodes, as kg.link does (``kg_missing_nodes``);
free-text sources are kept as given. Both backends; a refused call leaves the store unchanged."""
from __future__ import annotations

import pytest

from palimpsest_memory.runtime import errors

from store_support import HASHING

from .conftest import counts


@pytest.fixture
def rt(make_pal_runtime):  # type: ignore[no-untyped-def]
    return make_pal_runtime(config=HASHING)


def fact(subject: str, source: str | None) -> dict:
    return {"subject": subject, "predicate": "lives_in", "object": "Paris", "source_id": source}


def test_a_source_note_must_exist_in_the_namespace(rt) -> None:  # type: ignore[no-untyped-def]
    here = rt.call("memory.remember", {"content": "Ann moved to Paris"}).note.id
    there = rt.call("memory.remember", {"content": "Bea moved to Oslo"}, namespace="other").note.id
    gone = rt.call("memory.remember", {"content": "Cy moved to Rome"}).note.id
    rt.call("memory.forget", {"ids": [gone], "reason": "test"})
    assert rt.call("kg.assert_fact", fact("Ann", f"m:{here}")).action == "created"
    before = counts(rt)
    for source in (f"m:{there}", f"m:{gone}", "m:987654321"):
        with pytest.raises(errors.NotFound, match=f"source {source} does not exist") as err:
            rt.call("kg.assert_fact", fact("Dee", source))
        assert err.value.details["errors"][0]["loc"] == ["source_id"]
        assert counts(rt) == before, "a refused fact leaves the store unchanged"
    # free text is a source as given
    assert rt.call("kg.assert_fact", fact("Eve", "chat 2024-05-01, line 12")).action == "created"
    assert rt.call("kg.assert_fact", fact("Flo", "doc:readme")).action == "created"


def test_one_bad_source_refuses_the_whole_batch(rt) -> None:  # type: ignore[no-untyped-def]
    ok = rt.call("memory.remember", {"content": "a note"}).note.id
    before = counts(rt)
    with pytest.raises(errors.NotFound) as err:
        rt.call("kg.assert_facts", {"facts": [fact("Ann", f"m:{ok}"), fact("Bob", None), fact("Cy", "m:424242")]})
    assert err.value.details["errors"][0]["loc"][-2:] == [2, "source_id"]
    assert counts(rt) == before


def test_a_fact_sourced_by_a_note_goes_with_the_notes_forget(rt) -> None:  # type: ignore[no-untyped-def]
    note = rt.call("memory.remember", {"content": "Gus moved to Lima"}).note.id
    rt.call("kg.assert_fact", fact("Gus", f"m:{note}"))
    assert rt.call("kg.facts", {"subject": "Gus"}).facts
    rt.call("memory.forget", {"ids": [note], "reason": "test"})
    assert not rt.call("kg.facts", {"subject": "Gus", "include_superseded": True}).facts

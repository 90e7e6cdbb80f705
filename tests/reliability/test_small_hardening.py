"""Smaller faults of the second hardening round (issue 16.12), each through the product's own entry points."""
from __future__ import annotations

import math

import pytest

from rel_support import HASHING, ISOLATED_ENV
from palimpsest_memory.runtime import Runtime, errors


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = Runtime.open(tmp_path / "h.duckdb", config=HASHING, env=ISOLATED_ENV)
    yield runtime
    runtime.close()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused_anywhere_in_params_not_stored_as_null(rt, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="NaN or infinite"):
        rt.call("kg.link", {"src": "m:1", "dst": "m:2", "relation": "supports", "properties": {"score": [1.0, bad]}})
    assert rt.call("kg.list_edges", {}).edges == []
    with pytest.raises(errors.InvalidParams, match="NaN or infinite"):
        rt.call("memory.remember", {"content": "zebra crossing", "salience": bad})
    assert rt.call("memory.recall", {"query": "zebra crossing"}).results == []


def test_reembed_with_an_unknown_model_is_the_callers_error_and_changes_nothing(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("memory.remember", {"content": "a note"})
    before = rt.store.con.execute("SELECT count(*) FROM memory.vectors").fetchone()
    with pytest.raises(errors.InvalidParams, match="no embedder named 'nope'") as err:
        rt.call("memory.reembed", {"model": "nope"})
    assert err.value.exit_code == 2 and "hashing" in err.value.details["known"]
    assert rt.store.con.execute("SELECT count(*) FROM memory.vectors").fetchone() == before


def test_a_token_file_is_read_and_an_empty_or_missing_one_is_a_config_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.adapters.cli_servers import _token

    good = tmp_path / "token"
    good.write_text("s3cret\n")
    assert _token(None, str(good)) == "s3cret"
    (tmp_path / "empty").write_text("\n")
    for path in (tmp_path / "empty", tmp_path / "missing"):
        with pytest.raises(errors.ConfigError):
            _token(None, str(path))


def test_consolidation_candidates_refuse_a_similarity_that_joins_everything(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 16.11: min_similarity = -1 joined every pair in a Python loop for a minute; now a typed refusal."""
    config = {**HASHING, "packs": {"memory": {**HASHING["packs"]["memory"], "graph": {"consolidation_max_pairs": 50}}}}
    with Runtime.open(tmp_path / "c.duckdb", config=config, env=ISOLATED_ENV) as rt:
        rt.call("memory.remember_many", {"notes": [{"content": f"note number {i} about apples"} for i in range(20)]})
        with pytest.raises(errors.LimitExceeded, match="more than 50 pairs"):
            rt.call("memory.consolidation_candidates", {"min_similarity": -1})
        found = rt.call("memory.consolidation_candidates", {"min_similarity": 0.99})
        assert found.considered == 20


def test_kg_links_to_notes_of_another_namespace_or_of_none_are_not_found(rt) -> None:  # type: ignore[no-untyped-def]
    """Issue 16.9: kg.link accepted any m: id; the memory pack now answers which notes exist."""
    mine = rt.call("memory.remember", {"content": "a note of mine"}, namespace="a").note.id
    also = rt.call("memory.remember", {"content": "another note of mine"}, namespace="a").note.id
    theirs = rt.call("memory.remember", {"content": "a note of theirs"}, namespace="b").note.id
    for dst in (f"m:{theirs}", "m:987654321", "m:not-a-number"):
        with pytest.raises(errors.NotFound, match=dst):
            rt.call("kg.link", {"src": f"m:{mine}", "dst": dst, "relation": "supports"}, namespace="a")
        with pytest.raises(errors.NotFound) as err:
            rt.call("kg.link_many", {"links": [{"src": f"m:{mine}", "dst": f"m:{also}", "relation": "supports"},
                                               {"src": dst, "dst": f"m:{mine}", "relation": "supports"}]},
                    namespace="a")
        assert err.value.details["errors"][0]["loc"] == ["links", 1, "src"]
    assert rt.call("kg.list_edges", {}, namespace="a").edges == []
    assert rt.call("kg.link", {"src": f"m:{mine}", "dst": f"m:{also}", "relation": "supports"}, namespace="a").created

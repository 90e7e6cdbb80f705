"""A forged pagination cursor is invalid_params, never a storage_error (issue 46, item 6): the id in it is checked
to be a 64-bit integer and its time to have no zone before the database sees either (1e308 and 2**70 reached
DuckDB, which refused them as a failed query)."""
from __future__ import annotations

import base64
import json

import pytest

from palimpsest_memory.runtime import errors


def forged(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


LIST = [{"o": "id", "d": False, "k": None, "i": 1e308}, {"o": "id", "d": False, "k": None, "i": 2**70},
        {"o": "id", "d": False, "k": None, "i": -(2**64)}, {"o": "id", "d": False, "k": None, "i": True},
        {"o": "occurred_at", "d": False, "k": "0001-01-01T00:00:00+05:00", "i": 1}]
FACTS = [{"v": None, "i": 1e308}, {"v": None, "i": 2**70}, {"v": "9999-12-31T23:59:59-05:00", "i": 1}]


@pytest.mark.parametrize("cursor", LIST, ids=[str(c["i"]) + str(c["k"]) for c in LIST])
def test_a_forged_memory_list_cursor_is_invalid_params(rt, cursor) -> None:  # type: ignore[no-untyped-def]
    for i in range(3):
        rt.call("memory.remember", {"content": f"note {i}"})
    params = {"cursor": forged(cursor), **({"order": "occurred_at"} if cursor["o"] == "occurred_at" else {})}
    with pytest.raises(errors.InvalidParams, match="cursor is not a next_cursor"):
        rt.call("memory.list", params)
    page = rt.call("memory.list", {"limit": 2})  # a real cursor still pages
    assert len(rt.call("memory.list", {"limit": 2, "cursor": page.next_cursor}).notes) == 1


@pytest.mark.parametrize("cursor", FACTS, ids=[str(c["i"]) + str(c["v"]) for c in FACTS])
def test_a_forged_kg_facts_cursor_is_invalid_params(rt, cursor) -> None:  # type: ignore[no-untyped-def]
    rt.call("kg.assert_fact", {"subject": "Ann", "predicate": "likes", "object": "tea"})
    with pytest.raises(errors.InvalidParams, match="cursor is not a next_cursor"):
        rt.call("kg.facts", {"cursor": forged(cursor)})


# [99, None]: a table index past the pack's tables (7 was one, until the memory pack had eight: ADR 0039)
@pytest.mark.parametrize("cursor", [[0, [2**70]], [99, None], [0, [1, 2, 3]], [0, [[1]]], ["0", None]])
def test_a_forged_export_cursor_is_invalid_params(rt, cursor) -> None:  # type: ignore[no-untyped-def]
    rt.call("memory.remember", {"content": "one note"})
    raw = base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode()
    with pytest.raises(errors.InvalidParams, match="cursor is not a next_cursor"):
        rt.call("memory.export_records", {"cursor": raw}, internal=True)

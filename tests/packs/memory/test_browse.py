"""memory.list and memory.count (issue 17, item 1): every filter agrees with a plain reading of the notes, pages
never repeat or skip a note even while notes are added, and bad cursors are typed errors."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest_memory.runtime import errors

T0 = datetime(2026, 1, 1)
FILTERS = st.fixed_dictionaries({}, optional={
    "scope": st.sampled_from(["a", "b"]), "kind": st.sampled_from(["decision", "none"]),
    "memory_type": st.sampled_from(["episodic", "semantic"]), "tags": st.lists(st.sampled_from(["x", "y"]),
                                                                                  min_size=1, max_size=2),
    "tag_mode": st.sampled_from(["any", "all"]), "min_salience": st.sampled_from([0.3, 0.6]),
    "occurred_after": st.integers(0, 20).map(lambda d: (T0 + timedelta(days=d)).isoformat()),
    "occurred_before": st.integers(0, 20).map(lambda d: (T0 + timedelta(days=d)).isoformat()),
    "include_archived": st.booleans(), "include_superseded": st.booleans()})


def seed(rt):  # type: ignore[no-untyped-def]
    notes = []
    for i in range(24):
        n = {"content": f"note {i} on topic {i % 5}", "scope": "ab"[i % 2], "kind": ["decision", "none"][i % 3 == 0],
             "memory_type": ["episodic", "semantic"][i % 4 == 0], "tags": [["x"], ["y"], ["x", "y"], []][i % 4],
             "salience": [0.2, 0.5, 0.9][i % 3], "occurred_at": (T0 + timedelta(days=(i * 7) % 20)).isoformat()}
        notes.append(n)
    ids = rt.call("memory.remember_many", {"notes": notes}).ids
    rt.call("memory.archive", {"ids": ids[:3]})
    rt.call("memory.link", {"source_id": ids[5], "target_id": ids[4], "relation": "supersedes"})
    return ids


def reference(rt, f: dict) -> list[int]:  # type: ignore[no-untyped-def]
    """The same filters, read plainly from memory.get of every note."""
    everything = rt.call("memory.get", {"ids": list(range(1, 200))}).notes
    archived = {r[0] for r in rt.store.con.execute("SELECT id FROM memory.notes WHERE archived_at IS NOT NULL").fetchall()}
    out = []
    for n in everything:
        tags = set(n.tags)
        want = set(f.get("tags", []))
        if (("scope" in f and n.scope != f["scope"]) or ("kind" in f and n.kind != f["kind"])
                or ("memory_type" in f and n.memory_type != f["memory_type"])
                or (want and (not tags & want if f.get("tag_mode", "any") == "any" else not want <= tags))
                or ("min_salience" in f and n.salience < f["min_salience"])
                or ("occurred_after" in f and n.occurred_at < datetime.fromisoformat(f["occurred_after"]))
                or ("occurred_before" in f and n.occurred_at >= datetime.fromisoformat(f["occurred_before"]))
                or (not f.get("include_archived") and n.id in archived)
                or (not f.get("include_superseded") and n.superseded_by is not None)):
            continue
        out.append(n.id)
    return sorted(out)


def pages(rt, params: dict, limit: int) -> list[list[int]]:  # type: ignore[no-untyped-def]
    got, cursor = [], None
    while True:
        page = rt.call("memory.list", {**params, "limit": limit, **({"cursor": cursor} if cursor else {})})
        got.append([n.id for n in page.notes])
        cursor = page.next_cursor
        if cursor is None:
            return got


@pytest.fixture(scope="module")
def store():  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.testing import open_test_runtime

    rt = open_test_runtime(config={"packs": {"memory": {"embedder": "hashing"}}})
    seed(rt)
    yield rt
    rt.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(f=FILTERS, limit=st.integers(1, 30), order=st.sampled_from(["id", "occurred_at"]), desc=st.booleans())
def test_list_and_count_agree_with_a_plain_reading_in_every_order(store, f, limit, order, desc) -> None:  # type: ignore[no-untyped-def]
    expected = reference(store, f)
    got = pages(store, {**f, "order": order, "descending": desc}, limit)
    flat = [i for p in got for i in p]
    assert sorted(flat) == expected and len(set(flat)) == len(flat)
    assert all(len(p) <= limit for p in got)
    notes = store.call("memory.get", {"ids": flat}).notes if flat else []
    by_id = {n.id: n for n in notes}
    keys = [(by_id[i].occurred_at, i) if order == "occurred_at" else (i,) for i in flat]
    assert keys == sorted(keys, reverse=desc)
    assert store.call("memory.count", f).count == len(expected)


def test_pages_neither_repeat_nor_skip_while_notes_are_added(make_pal_runtime) -> None:  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing"}}}, discover=True)
    first = rt.call("memory.remember_many", {"notes": [{"content": f"early note {i}"} for i in range(10)]}).ids
    page = rt.call("memory.list", {"limit": 4})
    seen = [n.id for n in page.notes]
    rt.call("memory.remember", {"content": "a late note"})
    while page.next_cursor:
        page = rt.call("memory.list", {"limit": 4, "cursor": page.next_cursor})
        seen += [n.id for n in page.notes]
    assert seen[:10] == first and len(seen) == 11 and len(set(seen)) == 11
    assert rt.call("memory.count", {}, namespace="elsewhere").count == 0
    assert rt.call("memory.list", {}, namespace="elsewhere").notes == []


@pytest.mark.parametrize("cursor", ["garbage!", "e30", "eyJvIjogIm9jY3VycmVkX2F0IiwgImQiOiBmYWxzZSwgImsiOiBudWxsLCAiaSI6IDF9"])
def test_a_cursor_that_is_not_this_listings_is_invalid_params(store, cursor) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="cursor"):
        store.call("memory.list", {"cursor": cursor, "order": "id"})


def test_pal_memory_list_and_recall_read_at_80_columns(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(tmp_path / "w.duckdb"), COLUMNS="80",
               PALIMPSEST__packs__memory__embedder="hashing")

    def pal(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    long = "We chose Postgres for Orion because of strict transactions across invoices and payments"
    pal("memory", "remember", long, "--scope", "orion", "--kind", "decision")
    pal("memory", "remember", "Ben moved to the Vega team in April", "--scope", "vega")
    for out in (pal("memory", "list"), pal("memory", "recall", "Postgres Orion")):
        assert max(len(line) for line in out.splitlines()) <= 80, out
        assert "transactions" in out and "orion" in out and "decision" in out
    assert "count: 1" in pal("memory", "count", "--scope", "vega")

"""Idempotency keys (issue 16.3): a retried write runs once, a reused key for another call is a conflict, the key
commits and rolls back with the call, read-only calls ignore keys."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from runtime_fakes import store_pack

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.testing import open_test_runtime


def rows(rt) -> int:  # type: ignore[no-untyped-def]
    return rt.call("store.count").n


def keys(rt) -> int:  # type: ignore[no-untyped-def]
    return rt.store.con.execute("SELECT count(*) FROM _palimpsest.idempotency").fetchone()[0]


@pytest.fixture
def rt(tmp_path):  # type: ignore[no-untyped-def]
    runtime = open_test_runtime(store_pack(tmp_path), path=str(tmp_path / "i.duckdb"))
    yield runtime
    runtime.close()


def test_a_retried_write_runs_once_and_returns_the_first_result(rt) -> None:  # type: ignore[no-untyped-def]
    first = rt.call("store.add", {"text": "a"}, idempotency_key="k-1")
    again = rt.call("store.add", {"text": "a"}, idempotency_key="k-1")
    assert first.model_dump() == again.model_dump() == {"n": 1}
    assert rows(rt) == 1 and keys(rt) == 1
    assert rt.call("store.add", {"text": "a"}, idempotency_key="k-2").n == 2  # a new key is a new call


def test_a_key_reused_for_another_call_is_a_conflict_and_writes_nothing(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("store.add", {"text": "a"}, idempotency_key="k")
    for params, ns in (({"text": "b"}, None), ({"text": "a"}, "other")):
        with pytest.raises(errors.Conflict, match="already used"):
            rt.call("store.add", params, namespace=ns, idempotency_key="k")
    assert rows(rt) == 1


def test_the_key_rolls_back_with_a_failed_call_so_the_retry_runs(rt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InternalError):
        rt.call("store.add_then_fail", {"text": "a"}, idempotency_key="k")
    assert keys(rt) == 0 and rows(rt) == 0
    assert rt.call("store.add", {"text": "a"}, idempotency_key="k").n == 1


def test_read_only_calls_ignore_keys_and_bad_keys_are_invalid(rt) -> None:  # type: ignore[no-untyped-def]
    assert rt.call("store.count", idempotency_key="k").n == 0
    assert keys(rt) == 0
    with pytest.raises(errors.InvalidParams, match="idempotency key"):
        rt.call("store.add", {"text": "a"}, idempotency_key="has space")
    assert rows(rt) == 0


def test_keys_expire_after_idempotency_hours(tmp_path) -> None:  # type: ignore[no-untyped-def]
    now = [datetime(2026, 1, 1)]
    path = str(tmp_path / "e.duckdb")
    with open_test_runtime(store_pack(tmp_path), path=path, clock=lambda: now[0]) as rt:
        rt.call("store.add", {"text": "a"}, idempotency_key="k")
    now[0] += timedelta(hours=25)
    with open_test_runtime(store_pack(tmp_path), path=path, clock=lambda: now[0]) as rt:
        assert keys(rt) == 0
        assert rt.call("store.add", {"text": "a"}, idempotency_key="k").n == 2

"""The call option ``consistency`` through HTTP (issue 14, ADR 0016): ``X-Palimpsest-Consistency: strong`` makes a
server on a shared store catch up with other processes' commits before it answers; a bad value is a typed error."""
from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from palimpsest_memory.runtime.adapters.http import create_app  # noqa: E402
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available  # noqa: E402


def test_an_unknown_consistency_is_invalid_params_and_changes_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with open_test_runtime(path=str(tmp_path / "m.duckdb")) as rt:
        client = TestClient(create_app(rt, token=""), raise_server_exceptions=False)
        bad = client.post("/v1/verbs/memory.remember", json={"content": "kept?"},
                          headers={"X-Palimpsest-Consistency": "sometimes"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_params"
        assert "consistency" in bad.json()["error"]["message"]
        assert rt.call("memory.count", {}).count == 0
        ok = client.post("/v1/verbs/memory.remember", json={"content": "kept"},
                         headers={"X-Palimpsest-Consistency": "strong"})  # a single-process store: a no-op
        assert ok.status_code == 200 and rt.call("memory.count", {}).count == 1


@pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
def test_strong_sees_another_process_s_commit_at_once(pal_postgres) -> None:  # type: ignore[no-untyped-def]
    url = pal_postgres.fresh()
    try:
        with open_test_runtime(path=url) as served, open_test_runtime(path=url) as other:
            served.store.unfollow()  # no wake-ups: only a catch-up brings the other process's note
            client = TestClient(create_app(served, token=""), raise_server_exceptions=False)
            served.call("memory.recall", {"query": "kiln"})  # the server now holds the namespace's mirrors
            other.call("memory.remember", {"content": "the kiln fires on Thursdays"})

            def hits(**headers: str) -> list:
                got = client.post("/v1/verbs/memory.recall", json={"query": "kiln Thursdays"}, headers=headers)
                assert got.status_code == 200, got.text
                return got.json()["result"]["results"]

            assert hits() == []  # eventual: the server's mirrors have not followed yet
            assert [h["note"]["content"] for h in hits(**{"X-Palimpsest-Consistency": "strong"})] == [
                "the kiln fires on Thursdays"]
    finally:
        pal_postgres.drop(url)

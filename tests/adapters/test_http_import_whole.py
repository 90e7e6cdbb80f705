"""POST /v1/import is all or nothing and answers bad files in the one JSON error shape (issue 46, F5 and item 6): a
key repeated in a later batch, a body that is not UTF-8, a header whose packs is null, a line nested too deeply —
each a 400 with ``{"ok": false, "error": {...}}`` (they were plain-text 500s or partial writes), the store as it
was, and the good file, sent again, imported whole."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from palimpsest_memory.runtime import Runtime, exportfile  # noqa: E402
from palimpsest_memory.runtime.adapters.http import create_app  # noqa: E402
from palimpsest_memory.runtime.portable import PAGE  # noqa: E402

CONFIG = {"packs": {"memory": {"embedder": "hashing"}}}
NOTES = PAGE + 300


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.testing import ISOLATED_ENV

    tmp = tmp_path_factory.mktemp("http_import")
    rt = Runtime.open(tmp / "src.db", discover_packs=True, config=CONFIG, env=ISOLATED_ENV)
    try:
        rt.call("memory.remember_many", {"notes": [{"content": f"note {i} by the lock gates"} for i in range(NOTES)]})
        with (tmp / "x.jsonl").open("w", encoding="utf-8") as out:
            exportfile.export_namespace(rt, out)
    finally:
        rt.close()
    return (tmp / "x.jsonl").read_bytes()


@pytest.fixture
def client(tmp_path):  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.testing import ISOLATED_ENV

    rt = Runtime.open(tmp_path / "pal.db", discover_packs=True, config=CONFIG, env=ISOLATED_ENV)
    try:
        yield TestClient(create_app(rt, max_body_bytes=64 << 20), raise_server_exceptions=False), rt
    finally:
        rt.close()


def repeated(good: bytes) -> bytes:
    lines = good.splitlines(keepends=True)
    lines[PAGE + 50] = lines[1]  # the first note again, in the second batch
    return b"".join(lines)


def header(good: bytes, **change: object) -> bytes:
    lines = good.splitlines(keepends=True)
    lines[0] = (json.dumps({**json.loads(lines[0]), **change}) + "\n").encode()
    return b"".join(lines)


BAD = {
    "a key repeated in a later batch": (repeated, "repeats line 2"),
    "not UTF-8": (lambda g: g.replace(b"note 7 by", b"caf\xe9 note 7 by"), "not UTF-8"),
    "packs null": (lambda g: header(g, packs=None), "packs must be an object"),
    "nested too deeply": (lambda g: g.replace(b'{"end"', b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b'}\n{"end"'),
                          "nested too deeply"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_import_is_a_json_400_and_writes_nothing_and_the_retry_succeeds(client, good, case):  # type: ignore[no-untyped-def]
    http, rt = client
    mangle, message = BAD[case]
    resp = http.post("/v1/import?namespace=dst", content=mangle(good), headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["ok"] is False and body["error"]["code"] == "invalid_params" and message in body["error"]["message"]
    assert rt.call("memory.count", {}, namespace="dst").count == 0
    resp = http.post("/v1/import?namespace=dst", content=good, headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["result"]["imported"]["memory"]["note"] == NOTES
    assert rt.call("memory.count", {}, namespace="dst").count == NOTES

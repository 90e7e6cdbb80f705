"""`pal serve` as a real process on both backends: `HEAD /` answers like GET without a body (issue 42, bug 6: it
answered 405), `/healthz` says the store is reachable (and 503 in the one error shape when it is not), and the
Origin check compares the port when the Origin has none (issue 46: `http://localhost` passed for a server on any
port)."""
from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from test_adapters_both_backends import Served, backend_of, target  # noqa: E402,F401 - target: the store fixture

from palimpsest_memory.runtime.testing import postgres_available  # noqa: E402

pytestmark = pytest.mark.both_backends  # `target` is a store of each backend (the test plugin parametrises it)

PING = json.dumps({"content": "an origin test"})


def ask(url: str, method: str, path: str, headers: dict[str, str] | None = None,
        body: str | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        con.request(method, path, body=body, headers=headers or {})
        res = con.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        con.close()


def test_head_answers_like_get_without_a_body_and_healthz_says_the_store_is_reachable(target: str) -> None:
    server = Served(target, "serve", "--port", "0")
    try:
        for path in ("/", "/docs"):
            got, got_headers, page = ask(server.url, "GET", path)
            status, headers, body = ask(server.url, "HEAD", path)
            assert (status, body) == (200, b""), (path, status, body)
            assert got == 200 and page and headers["content-type"] == got_headers["content-type"]
            assert headers["content-length"] == str(len(page))
        status, headers, body = ask(server.url, "GET", "/healthz")
        assert status == 200 and headers["content-type"] == "application/json", body
        assert json.loads(body) == {"ok": True, "verb": "healthz",
                                    "result": {"store": "reachable", "backend": backend_of(target)}}
        status, _, body = ask(server.url, "HEAD", "/healthz")
        assert (status, body) == (200, b"")
    finally:
        err = server.stop()
    assert server.proc.returncode == 0, err


def test_healthz_needs_no_token_and_tells_nothing_else(tmp_path) -> None:
    served = Served(str(tmp_path / "s.duckdb"), "serve", "--port", "0", "--token-file", _token_file(tmp_path))
    try:
        status, _, body = ask(served.url, "GET", "/healthz")
        assert status == 200 and json.loads(body)["result"] == {"store": "reachable", "backend": "duckdb"}
        assert str(tmp_path) not in body.decode()  # no path of the store for a caller without the token
        status, _, body = ask(served.url, "POST", "/v1/verbs/memory.count", {"Content-Type": "application/json"}, "{}")
        assert status == 401, body  # everything else still needs it
    finally:
        served.stop()


def _token_file(tmp_path) -> str:
    path = tmp_path / "token"
    path.write_text("s3cret-token-for-the-test")
    return str(path)


@pytest.mark.skipif(not postgres_available(), reason="needs the PostgreSQL test server")
def test_healthz_answers_503_in_the_error_shape_when_the_store_is_gone(pal_postgres) -> None:
    url = pal_postgres.fresh()
    server = Served(url, "serve", "--port", "0")
    try:
        assert ask(server.url, "GET", "/healthz")[0] == 200
        pal_postgres.drop(url)  # WITH (FORCE): the server's connection is cut and there is nothing to reconnect to
        status, headers, body = ask(server.url, "GET", "/healthz")
        assert status == 503 and headers["content-type"] == "application/json", body
        answer = json.loads(body)
        assert answer["ok"] is False and set(answer["error"]) == {"code", "message", "verb", "details"}
        assert answer["error"]["code"] == "store_unavailable" and "not reachable" in answer["error"]["message"]
        assert "password" not in body.decode()
    finally:
        server.stop()


def test_an_origin_without_a_port_is_the_scheme_default_port(tmp_path) -> None:
    server = Served(str(tmp_path / "o.duckdb"), "serve", "--port", "0")
    port = urlsplit(server.url).port
    host = {"Host": f"127.0.0.1:{port}"}
    plain, as_json = {"Content-Type": "text/plain"}, {"Content-Type": "application/json"}  # text/plain: a form's CSRF
    try:
        refused = ["http://localhost", "http://127.0.0.1", "https://localhost", "http://[::1]",
                   f"http://localhost:{port + 1}", "null", f"http://localhost:{port}/path", "http://localhost:abc"]
        for origin in refused:
            status, _, body = ask(server.url, "POST", "/v1/verbs/memory.remember", {**host, **plain, "Origin": origin}, PING)
            assert status == 403 and json.loads(body)["error"]["details"] == {"reason": "origin"}, (origin, body)
        for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", f"HTTP://LOCALHOST:{port}",
                       f"http://[::1]:{port}"):
            status, _, body = ask(server.url, "POST", "/v1/verbs/memory.remember", {**host, **as_json, "Origin": origin}, PING)
            assert status == 200, (origin, body)
    finally:
        server.stop()

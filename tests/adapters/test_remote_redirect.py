"""The ``--server`` client sends its bearer token only to the origin it was given (issue 46, low fault): urllib's
redirect handler copied every header to wherever a redirect pointed. The two HTTP servers here stand for things
outside the process (a proxy that redirects, another host), so they are small stdlib servers, not palimpsest."""
from __future__ import annotations

import http.server
import json
import threading
from typing import Any, Iterator

import pytest

from palimpsest_memory.runtime.adapters.remote import RemoteClient


class Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every request with a verb's success shape, noting the Authorization header it got; or, with a
    ``redirect_to`` set on the server, answers 302 to that URL (urllib follows a POST's 302 as a GET; it does not
    follow a POST's 307)."""

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self.do_POST()

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        self.server.seen.append(self.headers.get("Authorization"))  # type: ignore[attr-defined]
        target = self.server.redirect_to  # type: ignore[attr-defined]
        if target:
            self.send_response(302)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"ok": True, "verb": "memory.count", "result": {"count": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def serve() -> Any:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.seen, server.redirect_to = [], None  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def servers() -> Iterator[tuple[Any, Any]]:
    a, b = serve(), serve()
    yield a, b
    for s in (a, b):
        s.shutdown()
        s.server_close()


def url(server: Any, host: str = "127.0.0.1") -> str:
    return f"http://{host}:{server.server_address[1]}"


def test_a_redirect_to_another_origin_does_not_carry_the_token(servers) -> None:  # type: ignore[no-untyped-def]
    first, elsewhere = servers
    first.redirect_to = url(elsewhere)  # another port: another origin
    got = RemoteClient(url(first), token="s3cret", timeout=10).call("memory.count", {})
    assert got == {"count": 0}
    assert first.seen == ["Bearer s3cret"] and elsewhere.seen == [None]


def test_a_redirect_within_the_origin_keeps_it(servers) -> None:  # type: ignore[no-untyped-def]
    first, _ = servers
    hops = {"n": 0}
    first.redirect_to = url(first)
    original = Recorder.do_POST

    def once(self: Recorder) -> None:  # redirect the first request only, to the same origin
        hops["n"] += 1
        self.server.redirect_to = url(first) if hops["n"] == 1 else None  # type: ignore[attr-defined]
        original(self)

    Recorder.do_POST = once  # type: ignore[method-assign]
    try:
        RemoteClient(url(first), token="s3cret", timeout=10).call("memory.count", {})
    finally:
        Recorder.do_POST = original  # type: ignore[method-assign]
    assert first.seen == ["Bearer s3cret", "Bearer s3cret"]

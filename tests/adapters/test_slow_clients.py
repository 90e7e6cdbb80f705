"""`pal serve` bounds what clients hold open: a request must arrive within read_timeout, and connections beyond
max_connections are closed at once (issue 16, item 4). A real server process, real sockets on loopback."""
from __future__ import annotations

import socket
import time
import urllib.request
from urllib.parse import urlsplit

import pytest

pytest.importorskip("uvicorn", reason="the 'http' extra is not installed")
from conftest import ServerProcess, child_env  # noqa: E402

READ_TIMEOUT = 4.0
LIMIT = 8


def open_socket(host: str, port: int, first_bytes: bytes) -> socket.socket:
    s = socket.create_connection((host, port), timeout=5)
    if first_bytes:
        s.sendall(first_bytes)
    return s


def closed_by_server(s: socket.socket, wait: float) -> bool:
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def test_half_sent_requests_are_dropped_and_extra_connections_refused(tmp_path) -> None:
    env = child_env(PALIMPSEST__adapters__read_timeout=str(READ_TIMEOUT),
                    PALIMPSEST__adapters__max_connections=str(LIMIT))
    server = ServerProcess(tmp_path / "pal.db", "http", env=env)
    try:
        url = urlsplit(server.url)
        host, port = url.hostname, url.port
        head = f"POST /v1/verbs/example.note HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
        body = (f"POST /v1/verbs/example.note HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                "Content-Length: 100000\r\n\r\n{\"text\": \"").encode()
        slow = [open_socket(host, port, head if i % 2 else body) for i in range(LIMIT)]
        time.sleep(0.3)
        extra = [open_socket(host, port, b"") for _ in range(4)]
        states = [closed_by_server(s, 0.3) for s in extra]
        assert all(states), f"connections beyond the limit stay open: {states}"
        dropped = [closed_by_server(s, 0.1) for s in slow]
        assert not any(dropped), f"slow clients were dropped before their time: {dropped}"
        time.sleep(READ_TIMEOUT)
        assert all(closed_by_server(s, 2.0) for s in slow), "half-sent requests outlived read_timeout"
        for s in slow + extra:
            s.close()
        # the server still serves a well-behaved client
        req = urllib.request.Request(server.url + "/v1/verbs/example.note", data=b'{"text": "hi"}', method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
    finally:
        server.stop()

"""Writes through HTTP and `--server` are safe to retry (issue 16.3): the Idempotency-Key header runs a write
once, the client sends a key with every call, and a lost answer is reported as an unknown outcome with the key."""
from __future__ import annotations

import socket
import threading

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from fastapi.testclient import TestClient  # noqa: E402

from palimpsest_memory.runtime import errors  # noqa: E402
from palimpsest_memory.runtime.adapters.http import create_app  # noqa: E402
from palimpsest_memory.runtime.adapters.remote import RemoteClient  # noqa: E402


def test_the_same_idempotency_key_runs_a_write_once(fake_rt) -> None:  # type: ignore[no-untyped-def]
    client = TestClient(create_app(fake_rt), raise_server_exceptions=False)
    first = client.post("/v1/verbs/example.note", json={"text": "once"}, headers={"Idempotency-Key": "retry-1"})
    again = client.post("/v1/verbs/example.note", json={"text": "once"}, headers={"Idempotency-Key": "retry-1"})
    assert first.status_code == again.status_code == 200
    assert first.json()["result"] == again.json()["result"]
    notes = client.post("/v1/verbs/example.notes", json={"limit": 10}).json()["result"]["notes"]
    assert [n["text"] for n in notes] == ["once"]
    other = client.post("/v1/verbs/example.note", json={"text": "twice"}, headers={"Idempotency-Key": "retry-1"})
    assert other.status_code == 409 and other.json()["error"]["code"] == "conflict"


def test_a_lost_answer_is_an_unknown_outcome_naming_the_key() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    seen: list[bytes] = []

    def swallow() -> None:  # reads the request and never answers
        conn, _ = listener.accept()
        seen.append(conn.recv(65536))
        threading.Event().wait(3)
        conn.close()

    threading.Thread(target=swallow, daemon=True).start()
    port = listener.getsockname()[1]
    client = RemoteClient(f"http://127.0.0.1:{port}", token="", timeout=0.5)
    with pytest.raises(errors.StorageError, match="unknown outcome") as err:
        client.call("example.note", {"text": "x"}, idempotency_key="my-key")
    assert err.value.details["reason"] == "unknown_outcome" and err.value.details["idempotency_key"] == "my-key"
    assert b"Idempotency-Key: my-key" in seen[0]
    listener.close()


def test_the_client_sends_a_fresh_key_with_every_call() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(2)
    seen: list[bytes] = []

    def answer_twice() -> None:
        for _ in range(2):
            conn, _ = listener.accept()
            seen.append(conn.recv(65536))
            body = b'{"ok": true, "verb": "example.note", "result": {"id": 1, "text": "x"}}'
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
            conn.close()

    threading.Thread(target=answer_twice, daemon=True).start()
    client = RemoteClient(f"http://127.0.0.1:{listener.getsockname()[1]}", token="", timeout=5)
    client.call("example.note", {"text": "x"})
    client.call("example.note", {"text": "x"})
    keys = [next(line for line in raw.split(b"\r\n") if line.lower().startswith(b"idempotency-key")) for raw in seen]
    assert len(set(keys)) == 2
    listener.close()

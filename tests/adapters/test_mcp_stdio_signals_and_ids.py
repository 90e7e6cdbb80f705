"""`pal mcp` over stdio, as a real process on both backends: it stops on SIGTERM/SIGINT while its client still
holds stdin open (issue 42, bug 2: alive 20 s after each, until the client closed the pipe), and it answers a
request whatever its id (issue 46: a float, bool, null, list or object id was never answered)."""
from __future__ import annotations

import signal
import subprocess

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

from conftest import run_cli, child_env  # noqa: E402
from rawmcp import HASHING, RawMcp  # noqa: E402
from test_adapters_both_backends import target  # noqa: E402,F401 - the both-backends store fixture

from palimpsest_memory.runtime import storage  # noqa: E402

EXIT_LIMIT = 60.0  # seconds: the bug kept the process alive for as long as stdin stayed open


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_pal_mcp_stops_on_a_signal_while_stdin_is_open(target: str, sig: signal.Signals) -> None:
    server = RawMcp(target)
    try:
        assert server.initialize()["result"]["serverInfo"]["name"] == "palimpsest"
        assert server.call(2, "memory_remember", {"content": "kept before the signal"})["result"]["isError"] is False
        server.proc.send_signal(sig)  # stdin stays open: the client has not gone away
        try:
            code = server.proc.wait(timeout=EXIT_LIMIT)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"pal mcp still runs {EXIT_LIMIT} s after {sig.name} with stdin open") from None
        assert code == 0
    finally:
        err = server.close()
    assert [s for s in storage.live_servers(target) if s["pid"] == server.proc.pid] == [], err  # unannounced
    # the store was closed cleanly: another process opens it and finds the note
    proc = run_cli("--db", target, "--json", "memory", "count", env=child_env(**HASHING))
    assert proc.returncode == 0 and '"count": 1' in proc.stdout, proc.stderr


def test_pal_mcp_answers_every_request_id(target: str) -> None:
    """JSON-RPC ids are strings or numbers: a float id is answered under that id; a bool, null, list or object is
    not an id, so the answer is invalid request (-32600) with id null. Either way the server goes on serving."""
    server = RawMcp(target)
    try:
        server.initialize()
        for msg_id in (1.5, 2.0, -3.25, "s", 7):
            answer = server.request(msg_id, "tools/list")
            assert answer["id"] == msg_id and type(answer["id"]) is type(msg_id), answer
            assert "memory_recall" in {t["name"] for t in answer["result"]["tools"]}
        answer = server.call(4.5, "memory_remember", {"content": "a float id still writes"})
        assert answer["id"] == 4.5 and answer["result"]["isError"] is False, answer
        for msg_id in (True, False, None, [1], {"a": 1}, "1e400"):
            if msg_id == "1e400":  # a number JSON can hold and Python reads as infinity
                server.send('{"jsonrpc": "2.0", "id": 1e400, "method": "tools/list", "params": {}}')
                answer = server.answer()
            else:
                answer = server.request(msg_id, "tools/list")
            assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": answer["error"]
                              ["message"]}} and "string or a number" in answer["error"]["message"], answer
        assert server.request(8, "tools/list", {})["id"] == 8  # still serving
        # a cancellation naming a float id reaches the SDK as a notification it understands (no answer, no crash)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9.5}})
        assert server.request(10, "tools/list")["id"] == 10
    finally:
        err = server.close()
    assert server.proc.returncode == 0, err

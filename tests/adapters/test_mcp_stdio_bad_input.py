"""MCP over stdio answers every line, bad ones with a JSON-RPC error, and keeps serving (issue 16, item 10)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

HERE = Path(__file__).resolve().parent


class Server:
    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, str(HERE / "launch.py"), str(db), "stdio"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
        self.lines: Queue[str] = Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line)

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def answer(self, timeout: float = 30) -> dict:
        try:
            return json.loads(self.lines.get(timeout=timeout))
        except Empty:
            raise AssertionError("the server did not answer") from None

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        self.proc.wait(timeout=30)


def request(msg_id: int, method: str, params: dict | None = None) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})


def test_bad_lines_get_json_rpc_errors_and_the_server_keeps_serving(tmp_path) -> None:
    server = Server(tmp_path / "pal.db")
    try:
        server.send(request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "1"}}))
        assert server.answer()["id"] == 1
        server.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        server.send("this is not json")
        err = server.answer()
        assert err["id"] is None and err["error"]["code"] == -32700

        deep = {"text": "x"}
        for _ in range(300):
            deep = {"d": deep}
        server.send(request(7, "tools/call", {"name": "example_note", "arguments": deep}))
        err = server.answer()
        assert err["id"] == 7 and err["error"]["code"] in (-32602, -32600, -32700)

        server.send('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "example_note", '
                    '"arguments": {"text": "\\ud800"}}}')
        err = server.answer()
        assert err["id"] == 8 and err["error"]["code"] == -32602 and "surrogate" in err["error"]["message"]

        server.send("[" * 100_000)
        assert server.answer()["error"]["code"] == -32700

        server.send(request(9, "tools/list"))
        listed = server.answer()
        assert listed["id"] == 9 and {t["name"] for t in listed["result"]["tools"]} == {"example_note",
                                                                                         "example_notes"}
    finally:
        server.close()

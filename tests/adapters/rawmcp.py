"""A raw JSON-RPC line client of a real ``pal mcp`` process over stdio: the tests that need exact bytes, ids the
SDK's client would never send, or signals sent while stdin is still open."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from queue import Empty, Queue
from typing import Any

from conftest import REPO, child_env

PAL = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]
ANSWER_LIMIT = 120.0  # seconds a test waits for one answer before it fails (a bound, not a speed check)
HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}


class RawMcp:
    """``pal --db TARGET mcp ARGS`` (or the whole ``command`` line given, e.g. one an app's configuration holds);
    ``send`` writes one line, ``answer`` reads one."""

    def __init__(self, target: str, *args: str, env: dict[str, str] | None = None,
                 command: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(command or [*PAL, "--db", target, "mcp", *args], cwd=REPO,
                                     env=env or child_env(**HASHING),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: Queue[bytes] = Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line)

    def send(self, message: Any) -> None:
        text = message if isinstance(message, str) else json.dumps(message)
        self.proc.stdin.write(text.encode() + b"\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]

    def answer_bytes(self, timeout: float = ANSWER_LIMIT) -> bytes:
        try:
            return self.lines.get(timeout=timeout)
        except Empty:
            raise AssertionError(f"no answer within {timeout} s") from None

    def answer(self, timeout: float = ANSWER_LIMIT) -> dict:
        return json.loads(self.answer_bytes(timeout))

    def request(self, msg_id: Any, method: str, params: dict | None = None) -> dict:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params or {}})
        return self.answer()

    def initialize(self) -> dict:
        first = self.request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "raw", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return first

    def call(self, msg_id: Any, tool: str, arguments: dict) -> dict:
        return self.request(msg_id, "tools/call", {"name": tool, "arguments": arguments})

    def close(self) -> str:
        """Close stdin, wait for the exit (killing it past the bound), and return what it printed on stderr."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=ANSWER_LIMIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=ANSWER_LIMIT)
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
        return err

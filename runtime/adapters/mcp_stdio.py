"""MCP over stdio with every line answered: a line the SDK cannot take gets a JSON-RPC error, not silence.

The SDK's stdio transport hands a line it cannot validate to the server as an exception, which logs it and
answers nothing, so a client waits forever (non-JSON, nesting past the parser's limit, a lone UTF-16 surrogate
escape). Here each line is checked first; a bad one is answered on stdout with the JSON-RPC error the HTTP
transport would give (parse error -32700 with id null, or invalid request -32600 / invalid params -32602 with
the request's id when it can be read), and only good lines reach the SDK.
As the SDK does, fd 0 and fd 1 are diverted while serving (stray prints go to stderr, never onto the wire).

Request ids (issue 46): JSON-RPC allows a string or a number. The SDK takes strings and integers only and drops
anything else in silence, so a request whose id is a float is handed to it under a private string id and answered
under its own; an id that is a bool, null, list or object is not an id, and gets invalid request (-32600) with id
null, as JSON-RPC says when the id cannot be told.

stdin is read by a daemon thread of its own, not the SDK's worker thread: a read blocked on an open stdin cannot
be cancelled, and the interpreter waits for non-daemon threads at exit, so SIGTERM/SIGINT would close the store
and then hang until the client closed stdin (issue 42, bug 2).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import sys
import threading
import uuid
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any, AsyncIterator

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from mcp.server.stdio import stdio_server

from palimpsest_memory.runtime import hostile_value

MAX_DEPTH = 64  # a whole message: the runtime refuses params nested deeper anyway (dispatch.MAX_PARAMS_DEPTH)


def line_problem(line: str) -> tuple[int, str, Any] | None:
    """``(JSON-RPC error code, message, id)`` for a line that must not reach the SDK, else None."""
    try:
        message = json.loads(line)
    except RecursionError:
        return -32700, "Parse error: nested too deeply", None
    except ValueError as exc:
        return -32700, f"Parse error: {exc}", None
    msg_id = message.get("id") if isinstance(message, dict) else None
    if not valid_id(msg_id):
        if isinstance(message, dict) and "method" in message and "id" in message:
            return -32600, f"Invalid Request: the id must be a string or a number, not {_json_type(msg_id)}", None
        msg_id = None
    problem = hostile_value(message, max_depth=MAX_DEPTH)
    if problem is not None:
        return -32602, f"Invalid params: {problem[1]}", msg_id
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - whatever the SDK would have choked on
        return -32600, f"Invalid Request: {type(exc).__name__}: {str(exc)[:300]}", msg_id
    return None


def valid_id(msg_id: Any) -> bool:
    """A JSON-RPC request id: a string or a number (a bool is not a number here, as in JSON; 1e400, which Python
    reads as infinity, could not be written back as JSON)."""
    if isinstance(msg_id, float):
        return math.isfinite(msg_id)
    return isinstance(msg_id, (str, int)) and not isinstance(msg_id, bool)


def _json_type(value: Any) -> str:
    return {bool: "a boolean", type(None): "null", list: "an array", dict: "an object",
            float: "a number too large to write back"}.get(type(value), "that")


class FloatIds:
    """Float request ids, handed to the SDK as private strings and put back in its answers."""

    def __init__(self) -> None:
        self._prefix = f"palimpsest-float-id-{uuid.uuid4().hex}-"
        self._count = itertools.count()
        self._held: dict[str, float] = {}

    def inward(self, line: str) -> str:
        """The line the SDK gets: a float id (or a cancellation naming one) replaced by a private string."""
        message = json.loads(line)
        if not isinstance(message, dict):
            return line
        changed = False
        if isinstance(message.get("id"), float):
            message["id"] = self._hold(message["id"])
            changed = True
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("requestId"), float):
            params["requestId"] = self._find(params["requestId"])
            changed = True
        return json.dumps(message) + "\n" if changed else line

    def outward(self, text: str) -> str:
        """The SDK's line as the client gets it: its float id back in place of the private one."""
        if self._prefix not in text:
            return text
        message = json.loads(text)
        if isinstance(message, dict) and message.get("id") in self._held:
            message["id"] = self._held.pop(message["id"])
        return json.dumps(message, separators=(",", ":")) + "\n"

    def _hold(self, value: float) -> str:
        token = f"{self._prefix}{next(self._count)}"
        self._held[token] = value
        return token

    def _find(self, value: float) -> Any:
        return next((token for token, held in self._held.items() if held == value), value)


class _ThreadLines:
    """The text lines of a binary file descriptor, read by a daemon thread (see the module docstring)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        send, receive = anyio.create_memory_object_stream[str](16)
        token = anyio.lowlevel.current_token()
        fd = self._fd

        def pump() -> None:
            try:
                with TextIOWrapper(os.fdopen(fd, "rb"), encoding="utf-8", errors="replace") as lines:
                    for line in lines:
                        anyio.from_thread.run(send.send, line, token=token)
            except Exception:  # noqa: BLE001 - the loop has ended (a signal, the client gone): nobody to hand to
                pass
            finally:
                try:
                    anyio.from_thread.run_sync(send.close, token=token)
                except Exception:  # noqa: BLE001 - same: the loop is gone
                    pass

        threading.Thread(target=pump, name="mcp-stdin", daemon=True).start()
        async with receive:
            async for line in receive:
                yield line


class _CheckedLines:
    """The lines of ``source`` that the SDK can take; the others are answered through ``out`` here."""

    def __init__(self, source: Any, out: Any, lock: anyio.Lock, floats: FloatIds) -> None:
        self._source, self._out, self._lock, self._floats = source, out, lock, floats

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                continue
            problem = line_problem(line)
            if problem is None:
                yield self._floats.inward(line)
                continue
            code, message, msg_id = problem
            reply = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})
            async with self._lock:
                await self._out.write(reply + "\n")
                await self._out.flush()


class _LockedOut:
    """stdout shared by the SDK's writer and ours: one whole line at a time."""

    def __init__(self, out: Any, lock: anyio.Lock, floats: FloatIds) -> None:
        self._out, self._lock, self._floats = out, lock, floats

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._out.write(self._floats.outward(text))

    async def flush(self) -> None:
        await self._out.flush()


@asynccontextmanager
async def checked_stdio_server() -> AsyncIterator[tuple[Any, Any]]:
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    with open(os.devnull, "rb") as null:
        os.dup2(null.fileno(), 0)
    os.dup2(2, 1)  # stray output of handlers goes to stderr, never onto the protocol
    try:
        raw_out = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
        lock, floats = anyio.Lock(), FloatIds()
        wire = _CheckedLines(_ThreadLines(wire_in), raw_out, lock, floats)
        async with stdio_server(stdin=wire,  # type: ignore[arg-type]
                                stdout=_LockedOut(raw_out, lock, floats)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)

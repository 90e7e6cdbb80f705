"""MCP over stdio with every line answered: a line the SDK cannot take gets a JSON-RPC error, not silence.

The SDK's stdio transport hands a line it cannot validate to the server as an exception, which logs it and
answers nothing, so a client waits forever (non-JSON, nesting past the parser's limit, a lone UTF-16 surrogate
escape). Here each line is checked first; a bad one is answered on stdout with the JSON-RPC error the HTTP
transport would give (parse error -32700 with id null, or invalid request -32600 / invalid params -32602 with
the request's id when it can be read), and only good lines reach the SDK.
As the SDK does, fd 0 and fd 1 are diverted while serving (stray prints go to stderr, never onto the wire).
"""
from __future__ import annotations

import json
import os
import sys
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any, AsyncIterator

import anyio
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
    if not isinstance(msg_id, (str, int)) or isinstance(msg_id, bool):
        msg_id = None
    problem = hostile_value(message, max_depth=MAX_DEPTH)
    if problem is not None:
        return -32602, f"Invalid params: {problem[1]}", msg_id
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - whatever the SDK would have choked on
        return -32600, f"Invalid Request: {type(exc).__name__}: {str(exc)[:300]}", msg_id
    return None


class _CheckedLines:
    """The lines of ``source`` that the SDK can take; the others are answered through ``out`` here."""

    def __init__(self, source: Any, out: Any, lock: anyio.Lock) -> None:
        self._source, self._out, self._lock = source, out, lock

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            if not line.strip():
                continue
            problem = line_problem(line)
            if problem is None:
                yield line
                continue
            code, message, msg_id = problem
            reply = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})
            async with self._lock:
                await self._out.write(reply + "\n")
                await self._out.flush()


class _LockedOut:
    """stdout shared by the SDK's writer and ours: one whole line at a time."""

    def __init__(self, out: Any, lock: anyio.Lock) -> None:
        self._out, self._lock = out, lock

    async def write(self, text: str) -> None:
        async with self._lock:
            await self._out.write(text)

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
        stdin = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
        raw_out = anyio.wrap_file(TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
        lock = anyio.Lock()
        async with stdio_server(stdin=_CheckedLines(stdin, raw_out, lock),  # type: ignore[arg-type]
                                stdout=_LockedOut(raw_out, lock)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)

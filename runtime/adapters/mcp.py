"""``pal mcp``: the verb catalog as MCP tools, on the official SDK's low-level server (the optional ``mcp`` extra).

One tool per public verb, named with dots as underscores (``memory.recall`` → ``memory_recall``), described by the
verb's docstring, with the params model's JSON schema as input schema and the result model's as output schema.
Sub-handlers are never listed and a call to one is refused. A success answers the one success shape
``{"ok": true, "verb", "result"}`` as text (and the result as structured content); an error is a tool error
result whose text is the one JSON error shape.

One MCP server serves one client session, for one actor: ``pal mcp --actor NAME`` makes every tool call for
that actor (``Runtime.call(actor=)``), so recall ranks with the brain profile bound to it.

An MCP session is a thread by default: a writing verb with a ``thread`` param (``memory.remember``) called
without one gets ``mcp-<id>``, one label per client session (per server over stdio, per transport session
id over streamable HTTP), so what an agent remembers in one session is
linked as neighbours (ADR 0008); a ``thread`` the client passes wins.

``python -m runtime.adapters.mcp [--db PATH] [--http] [--actor NAME]`` serves the configured packs without the CLI.
"""
from __future__ import annotations

import argparse
import functools
import json
import logging
import sys
import uuid
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server

from runtime import PalimpsestError, Runtime, VerbSpec, __version__, errors
from runtime.adapters.mcp_stdio import checked_stdio_server
from runtime.adapters.serving import (
    AdapterSettings, Guard, ServerInfo, bind_socket, check_bind, explain_locked, is_loopback, loopback_hosts,
    run_uvicorn, stop_on_signals, success, tool_name, url_of,
)

log = logging.getLogger("palimpsest.mcp")


def tool_for(spec: VerbSpec) -> types.Tool:
    return types.Tool(
        name=tool_name(spec.full_name), title=spec.full_name, description=spec.doc or spec.full_name,
        input_schema=spec.params_model.model_json_schema(),
        output_schema=spec.result_model.model_json_schema(mode="serialization"),
        annotations=types.ToolAnnotations(read_only_hint=not spec.writes, open_world_hint=False),
    )


def error_result(exc: PalimpsestError) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(exc.to_dict()))], is_error=True)


def _refusal(runtime: Runtime, name: str) -> PalimpsestError:
    """Why a tool name is not callable: a sub-handler (refused) or no such tool."""
    for spec in runtime.verbs(include_subhandlers=True):
        if name in (spec.full_name, tool_name(spec.full_name)):
            if spec.visibility.value != "public":
                return errors.Forbidden(f"{spec.full_name} is a sub-handler of pack {spec.pack!r}; it is not exposed "
                                        "over MCP", verb=spec.full_name)
            return errors.VerbNotFound(f"no tool named {name!r}; did you mean {tool_name(spec.full_name)!r}?",
                                       verb=spec.full_name)
    known = sorted(tool_name(s.full_name) for s in runtime.verbs())
    return errors.VerbNotFound(f"no tool named {name!r}", details={"known": known})


def build_server(runtime: Runtime, *, actor: str | None = None) -> Server:
    """A low-level MCP server over an open runtime (the catalog is read once, when built); every tool call is
    made for ``actor``."""
    runtime.check_actor(actor)  # a bad --actor fails the start, not every call
    public = {tool_name(spec.full_name): spec for spec in runtime.verbs()}
    tools = [tool_for(spec) for spec in public.values()]
    inputs = {tool.name: tool.input_schema for tool in tools}
    server_thread = f"mcp-{uuid.uuid4().hex[:12]}"  # stdio: this server serves one client session
    session_threads: dict[str, str] = {}  # streamable HTTP: the transport's session id → its thread

    def session_thread(ctx: Any) -> str:
        # The SDK builds its per-request context around a connection, which carries the transport's session id
        # when there is one (streamable HTTP); otherwise the whole server is one session.
        conn = getattr(getattr(ctx, "session", None), "_connection", None)
        sid = getattr(conn, "session_id", None)
        if not sid:
            return server_thread
        return session_threads.setdefault(sid, f"mcp-{uuid.uuid4().hex[:12]}")

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = public.get(params.name)
        if spec is None:
            return error_result(_refusal(runtime, params.name))
        arguments = dict(params.arguments or {})
        named = arguments.get("actor")
        if actor is not None and named is not None and named != actor:
            # the server is bound to one actor: a client may not act for another through a verb's own field
            return error_result(errors.Forbidden(
                f"this MCP server acts for {actor!r}; the call names actor {named!r}", verb=spec.full_name,
                details={"errors": [{"loc": ["actor"], "msg": "another actor than the server's"}]}))
        if spec.writes and "thread" in spec.params_model.model_fields and arguments.get("thread") is None:
            arguments["thread"] = session_thread(ctx)  # an MCP session is a thread unless the client names one
        call = functools.partial(runtime.call, spec.full_name, arguments, actor=actor)
        try:
            result = await anyio.to_thread.run_sync(call)
        except PalimpsestError as exc:
            return error_result(exc)
        except Exception as exc:  # a bug: still the one error shape; the traceback goes to the log
            log.exception("%s failed", spec.full_name)
            return error_result(errors.InternalError(f"unexpected {type(exc).__name__}: {exc}", verb=spec.full_name))
        data = result.model_dump(mode="json")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(success(spec.full_name, data)))],
                                    structured_content=data)

    return Server("palimpsest", version=__version__, instructions="palimpsest memory: one tool per verb.",
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=lambda name: inputs.get(name))


def serve_stdio(runtime: Runtime, *, actor: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes it (stdout carries only the protocol)."""
    server = build_server(runtime, actor=actor)

    async def main() -> None:
        async with checked_stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with stop_on_signals(), ServerInfo(runtime.path, "mcp-stdio", None):
        anyio.run(main)


def serve_http(runtime: Runtime, *, host: str | None = None, port: int | None = None, token: str | None = None,
               actor: str | None = None) -> None:
    """Serve MCP over streamable HTTP (loopback unless a token is set) until interrupted; every client's calls
    are made for ``actor``."""
    settings = AdapterSettings.from_config(runtime.config)
    host = host or settings.host
    token = settings.token if token is None else token
    check_bind(host, token)
    sock = bind_socket(host, settings.mcp_port if port is None else port)
    url = url_of(sock, settings.mcp_path)
    app = build_server(runtime, actor=actor).streamable_http_app(
        streamable_http_path=settings.mcp_path, host=host, max_request_body_size=settings.max_body_bytes)
    guarded = Guard(app, token=token, max_body_bytes=settings.max_body_bytes,
                    allowed_hosts=loopback_hosts(sock.getsockname()[1]) if is_loopback(host) else None)
    with stop_on_signals(), ServerInfo(runtime.path, "mcp-http", url):
        print(f"palimpsest: serving MCP for {runtime.path} at {url}", file=sys.stderr, flush=True)
        run_uvicorn(guarded, sock, settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.adapters.mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database file (default from config)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--actor", help="who every tool call is made for")
    args = parser.parse_args(argv)
    try:
        with Runtime.open(args.db) as runtime:
            if args.http:
                serve_http(runtime, host=args.host, port=args.port, actor=args.actor)
            else:
                serve_stdio(runtime, actor=args.actor)
    except PalimpsestError as exc:
        exc = explain_locked(exc)
        print(json.dumps(exc.to_dict()), file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``pal mcp``: the verb catalog as MCP tools, on the official SDK's low-level server (the optional ``mcp`` extra).

One tool per public verb, named with dots as underscores (``memory.recall`` → ``memory_recall``), described by the
verb's docstring, with the params model's JSON schema as input schema and the result model's as output schema.
Sub-handlers are never listed and a call to one is refused. A success answers the one success shape
``{"ok": true, "verb", "result"}`` as text (and the result as structured content); an error is a tool error
result whose text is the one JSON error shape.

One MCP server serves one client session, for one actor: ``pal mcp --actor NAME`` makes every tool call for
that actor (``Runtime.call(actor=)``), so recall ranks with the brain profile bound to it; ``pal -n NAME mcp``
makes them in that namespace (a call naming another one is refused, as for any call that names two).

An MCP session is a thread by default: a writing verb with a ``thread`` param (``memory.remember``) called
without one gets ``mcp-<id>``, one label per client session (per server over stdio, per transport session
id over streamable HTTP), so what an agent remembers in one session is
linked as neighbours (ADR 0008); a ``thread`` the client passes wins.

``python -m palimpsest_memory.runtime.adapters.mcp [--db PATH] [--http] [--actor NAME] [-n NAME]`` serves the
configured packs without the CLI.
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

from palimpsest_memory.runtime import McpTool, PalimpsestError, VerbSpec, __version__, errors
from palimpsest_memory.runtime.adapters.mcp_share import SharedMemory
from palimpsest_memory.runtime.adapters.mcp_stdio import checked_stdio_server
from palimpsest_memory.runtime.adapters.mcp_tools import ToolView, tool_view
from palimpsest_memory.runtime.adapters.serving import (
    AdapterSettings, Guard, bind_socket, check_bind, explain_locked, is_loopback, loopback_hosts,
    result_data, run_uvicorn, announce, stop_on_signals, tool_name, url_of,
)

log = logging.getLogger("palimpsest.mcp")


def tool_for(spec: VerbSpec, view: McpTool | None = None, *, core: bool = False,
             output_schema: bool = True) -> ToolView:
    """The MCP tool of a verb, with the way its calls and answers pass (:mod:`mcp_tools`). Its description is the
    params model's docstring when it has one (written for an agent: what the tool is for and when to call it),
    else the first paragraph of the verb's docstring; the input schema is the params model's, compacted (no
    titles, ``X | None`` as ``X``); the output schema (the result model's) only when asked, since it is most of a
    tool's size and a client needs it only to validate the structured result."""
    schema = spec.params_model.model_json_schema()
    description = " ".join((schema.pop("description", None) or first_paragraph(spec.doc) or spec.full_name).split())
    return tool_view(spec, view, core=core, output_schema=output_schema, description=description,
                     input_schema=compact_schema(schema))


def first_paragraph(doc: str) -> str:
    return " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc else ""


def compact_schema(schema: Any) -> Any:
    """A JSON schema without what an agent does not read: ``title`` keywords, ``default: null``, and the
    ``anyOf [X, null]`` pydantic writes for an optional field (a field left out is already "not given")."""
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {name: compact_schema(sub) for name, sub in value.items()}
        else:
            out[key] = compact_schema(value)
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1 and len(kept) < len(options):
            del out["anyOf"]
            out = {**kept[0], **out}
    return out


def error_result(exc: PalimpsestError) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(exc.to_dict()))], is_error=True)


def _refusal(runtime: Any, name: str, listed: Any = None) -> PalimpsestError:
    """Why a tool name is not callable: a sub-handler (refused), a verb this server does not list, or no such
    tool."""
    listed = set(listed) if listed is not None else {tool_name(s.full_name) for s in runtime.verbs()}
    for spec in runtime.verbs(include_subhandlers=True):
        if name in (spec.full_name, tool_name(spec.full_name)):
            if spec.visibility.value != "public":
                return errors.Forbidden(f"{spec.full_name} is a sub-handler of pack {spec.pack!r}; it is not exposed "
                                        "over MCP", verb=spec.full_name)
            if tool_name(spec.full_name) not in listed:
                return errors.VerbNotFound(f"tool {tool_name(spec.full_name)!r} is not served here (start the "
                                           "server with --tools all, or name it in --tools)", verb=spec.full_name)
            return errors.VerbNotFound(f"no tool named {name!r}; did you mean {tool_name(spec.full_name)!r}?",
                                       verb=spec.full_name)
    known = sorted(listed)
    return errors.VerbNotFound(f"no tool named {name!r}", details={"known": known})


CORE = "core"
ALL = "all"
INSTRUCTIONS = """palimpsest is your long-term memory: it keeps what you are told across conversations.

- Save what will matter later with memory_remember: decisions and why, preferences, facts about people and
  projects, problems and their fixes. One idea per note, written so it makes sense alone ("We chose Postgres for
  Orion because invoices need strict transactions", not "ok, that one"). Give a scope (the project or topic) and
  an occurred_at when the event did not happen just now.
- Before answering a question about past work, people or preferences, call memory_recall with a short natural
  question; use memory_explain when you need the reasons and the facts behind an answer. An empty result means
  nothing was saved about it: say so rather than guess.
- When something changes, do not delete the old note: memory_update records a new version (the old one stays in
  the history), memory_archive hides a note that is wrong or no longer wanted.
- Facts that change over time (who works where, which database a project uses) go to kg_assert_fact with a
  valid_from date; a new value for the same subject and predicate closes the old one. kg_facts answers "what is
  true now / on that date"; kg_fact_history shows every value over time.
- Times are ISO 8601 in UTC (2026-03-01 or 2026-03-01T14:30:00Z)."""


def mcp_views(catalog: Any) -> tuple[dict[str, McpTool], set[str]]:
    """What the loaded packs say of their verbs as tools (the ``palimpsest_mcp_tools`` hook, ADR 0035): each
    described verb's :class:`McpTool`, and the packs that implement the hook."""
    contributed = catalog.contributions("palimpsest_mcp_tools")
    return {t.verb: t for tools in contributed.values() for t in tools}, set(contributed)


def select_tools(specs: list[VerbSpec], choice: str | list[str] | None, catalog: Any) -> list[VerbSpec]:
    """The tools to list: ``core`` (the core tools the packs contribute, plus every tool of a pack that does not
    implement the hook: a pack you installed shows up whole), ``all``, or verb / tool names (comma-separated text or
    a list). An unknown name is a ConfigError that lists the known ones."""
    by_name = {s.full_name: s for s in specs} | {tool_name(s.full_name): s for s in specs}
    choice = CORE if choice is None else choice
    if isinstance(choice, str) and choice.strip() == ALL:
        return specs
    if isinstance(choice, str) and choice.strip() == CORE:
        views, describing = mcp_views(catalog)
        wanted = [s.full_name for s in specs
                  if (s.full_name in views and views[s.full_name].core) or s.pack not in describing]
    else:
        names = [n.strip() for n in choice.split(",")] if isinstance(choice, str) else list(choice)
        names = [n for n in names if n]
        unknown = [n for n in names if n not in by_name]
        if unknown or not names:
            raise errors.ConfigError(f"--tools: unknown tool(s) {', '.join(unknown) or '(none given)'}; use core, "
                                     f"all, or names from: {', '.join(sorted(s.full_name for s in specs))}",
                                     details={"unknown": unknown})
        wanted = names
    chosen: dict[str, VerbSpec] = {}
    for n in wanted:
        chosen.setdefault(by_name[n].full_name, by_name[n])
    return list(chosen.values())


def build_server(runtime: Any, *, actor: str | None = None, tools: str | list[str] | None = ALL,
                 output_schemas: bool | None = None, namespace: str | None = None) -> Server:
    """A low-level MCP server over an open runtime, or a :class:`Forwarder` to a ``pal serve`` (the catalog is read
    once, when built); every tool call is made for ``actor``, in ``namespace`` (default: the store's). ``tools``:
    see :func:`select_tools`; ``output_schemas``: list each tool's output schema (default ``[mcp] output_schemas``)."""
    runtime.check_actor(actor)  # a bad --actor fails the start, not every call
    config = getattr(runtime, "config", {}) or {}
    chosen = select_tools(runtime.verbs(), tools, runtime.catalog)
    if output_schemas is None:
        output_schemas = bool((config.get("mcp") or {}).get("output_schemas", False))
    core = tools is None or (isinstance(tools, str) and tools.strip() == CORE)  # core: McpTool.params apply
    described, _ = mcp_views(runtime.catalog)
    views = {tool_name(spec.full_name): tool_for(spec, described.get(spec.full_name), core=core,
                                                 output_schema=output_schemas)
             for spec in chosen}
    public = {name: view.spec for name, view in views.items()}
    tool_list = [view.tool for view in views.values()]
    inputs = {tool.name: tool.input_schema for tool in tool_list}
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
        return types.ListToolsResult(tools=tool_list)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        view = views.get(params.name)
        if view is None:
            return error_result(_refusal(runtime, params.name, public))
        spec = view.spec
        try:
            arguments, detail = view.arguments(params.arguments or {})
        except PalimpsestError as exc:
            return error_result(exc)
        named = arguments.get("actor")
        if actor is not None and named is not None and named != actor:
            # the server is bound to one actor: a client may not act for another through a verb's own field
            return error_result(errors.Forbidden(
                f"this MCP server acts for {actor!r}; the call names actor {named!r}", verb=spec.full_name,
                details={"errors": [{"loc": ["actor"], "msg": "another actor than the server's"}]}))
        if spec.writes and "thread" in spec.params_model.model_fields and arguments.get("thread") is None:
            arguments["thread"] = session_thread(ctx)  # an MCP session is a thread unless the client names one
        call = functools.partial(runtime.call, spec.full_name, arguments, actor=actor, namespace=namespace)
        try:
            result = await anyio.to_thread.run_sync(call)
        except PalimpsestError as exc:
            return error_result(exc)
        except Exception as exc:  # a bug: still the one error shape; the traceback goes to the log
            log.exception("%s failed", spec.full_name)
            return error_result(errors.InternalError(f"unexpected {type(exc).__name__}: {exc}", verb=spec.full_name))
        return view.answer(result_data(result), detail)

    return Server("palimpsest", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=lambda name: inputs.get(name))


def serve_from_cli(session: Any, *, over_http: bool, host: str | None, port: int | None, token: str | None,
                   actor: str | None, tools: str | None) -> None:
    """``pal mcp``: open (or forward), then serve over stdio or streamable HTTP."""
    target = SharedMemory(session.db, session.server)
    try:
        if over_http:
            serve_http(target, host=host, port=port, token=token, actor=actor, tools=tools,
                       namespace=session.namespace)
        else:
            serve_stdio(target, actor=actor, tools=tools, namespace=session.namespace)
    finally:
        target.close()


def serve_stdio(runtime: Any, *, actor: str | None = None, tools: str | list[str] | None = ALL,
                namespace: str | None = None) -> None:
    """Serve MCP over stdin/stdout until the client closes it (stdout carries only the protocol)."""
    server = build_server(runtime, actor=actor, tools=tools, namespace=namespace)

    async def main() -> None:
        async with checked_stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    with stop_on_signals(), _info(runtime, "mcp-stdio", None):
        anyio.run(main)


def _info(runtime: Any, kind: str, url: str | None) -> Any:
    """Announce this server through the store; nothing when forwarding (the server it forwards to did)."""
    return announce(runtime, kind, url)


def serve_http(runtime: Any, *, host: str | None = None, port: int | None = None, token: str | None = None,
               actor: str | None = None, tools: str | list[str] | None = ALL, namespace: str | None = None) -> None:
    """Serve MCP over streamable HTTP (loopback unless a token is set) until interrupted; every client's calls
    are made for ``actor``, in ``namespace``."""
    settings = AdapterSettings.from_config(runtime.config)
    host = host or settings.host
    token = settings.token if token is None else token
    check_bind(host, token)
    sock = bind_socket(host, settings.mcp_port if port is None else port)
    url = url_of(sock, settings.mcp_path)
    app = build_server(runtime, actor=actor, tools=tools, namespace=namespace).streamable_http_app(
        streamable_http_path=settings.mcp_path, host=host, max_request_body_size=settings.max_body_bytes)
    guarded = Guard(app, token=token, max_body_bytes=settings.max_body_bytes,
                    allowed_hosts=loopback_hosts(sock.getsockname()[1]) if is_loopback(host) else None)
    with stop_on_signals(), _info(runtime, "mcp-http", url):
        print(f"palimpsest: serving MCP for {runtime.path or runtime.url} at {url}", file=sys.stderr, flush=True)
        run_uvicorn(guarded, sock, settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palimpsest_memory.runtime.adapters.mcp",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database file (default from config)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--actor", help="who every tool call is made for")
    parser.add_argument("-n", "--namespace", help="the namespace of every tool call (default: the store's)")
    parser.add_argument("--tools", default=CORE, help="core (default), all, or comma-separated tool names")
    parser.add_argument("--server", help="forward every call to this `pal serve` URL")
    args = parser.parse_args(argv)
    try:
        target = SharedMemory(args.db, args.server)
        try:
            if args.http:
                serve_http(target, host=args.host, port=args.port, actor=args.actor, tools=args.tools,
                           namespace=args.namespace)
            else:
                serve_stdio(target, actor=args.actor, tools=args.tools, namespace=args.namespace)
        finally:
            target.close()
    except PalimpsestError as exc:
        exc = explain_locked(exc)
        print(json.dumps(exc.to_dict()), file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

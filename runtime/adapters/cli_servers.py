"""``pal serve`` and ``pal mcp``: the commands that serve the memory (HTTP; MCP over stdio or HTTP), and ``pal mcp
install``, which writes that MCP server into an agent app's configuration (:mod:`mcp_install`).

Fixed commands of their own module (cli.COMMAND_MODULES), so that ``pal --help`` imports neither adapter: each is
imported when its command runs, with a clear message when its optional extra is missing.
"""
from __future__ import annotations

import sys
from typing import Annotated, Any, Callable, Optional

import typer

from palimpsest_memory.runtime import errors


def _extra(module: str, extra: str) -> Any:
    """Import an adapter that needs an optional extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(f"palimpsest_memory.runtime.adapters.{module}")
    except ImportError as exc:
        needs = {"http": "fastapi uvicorn", "mcp": "mcp"}[extra]  # no brackets: the terminal renderer eats them
        raise errors.ConfigError(f"this command needs palimpsest's optional extra {extra!r} ({exc.name or exc} is "
                                 f"missing): pip install {needs}", details={"extra": extra}) from None


def _token(token: str | None, token_file: str | None) -> str | None:
    """The bearer token: from --token-file, else --token / PALIMPSEST_TOKEN (warning when it was typed on the
    command line, where every local user can read it in the process list)."""
    if token_file:
        try:
            token = open(token_file, encoding="utf-8").read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise errors.ConfigError(f"cannot read --token-file {token_file}: {exc}") from None
        if not token:
            raise errors.ConfigError(f"--token-file {token_file} is empty")
        return token
    if token and any(a == "--token" or a.startswith("--token=") for a in sys.argv):
        print("palimpsest: a token given with --token shows in the process list; use PALIMPSEST_TOKEN or "
              "--token-file", file=sys.stderr)
    return token


# the bearer-token options, one definition for both servers (read by _token)
TokenOption = Annotated[Optional[str], typer.Option(
    "--token", envvar="PALIMPSEST_TOKEN", show_envvar=True,
    help="Require this bearer token (needed on a non-loopback host; for `pal mcp`, only with --http). Visible in "
         "the process list: prefer the variable or --token-file.")]
TokenFileOption = Annotated[Optional[str], typer.Option("--token-file", help="Read the bearer token from this file.")]


def register(app: typer.Typer, session: Callable[[], Any]) -> None:
    @app.command("serve")
    def serve_cmd(
        host: Optional[str] = typer.Option(None, "--host", help="Interface (default [adapters] host, loopback)."),
        port: Optional[int] = typer.Option(None, "--port", help="Port (default [adapters] http_port; 0 = any free)."),
        token: TokenOption = None,
        token_file: TokenFileOption = None,
    ) -> None:
        """Serve every public verb over HTTP (POST /v1/verbs/{verb}, resource routes, OpenAPI at /docs).

        Each request names its actor with the X-Palimpsest-Actor header (the global --actor is the default)."""
        http = _extra("http", "http")
        s = session()
        http.serve(s.runtime(), host=host, port=port, token=_token(token, token_file), actor=s.actor)

    mcp_app = typer.Typer(add_completion=False)  # its help is the callback's docstring

    @mcp_app.callback(invoke_without_command=True)
    def mcp_cmd(
        ctx: typer.Context,
        over_http: bool = typer.Option(False, "--http", help="Streamable HTTP on loopback instead of stdio."),
        host: Optional[str] = typer.Option(None, "--host", help="Interface for --http (default [adapters] host)."),
        port: Optional[int] = typer.Option(None, "--port", help="Port for --http (default [adapters] mcp_port)."),
        token: TokenOption = None,
        token_file: TokenFileOption = None,
        actor: Optional[str] = typer.Option(None, "--actor", help="Who every tool call is made for (one server per "
                                                                  "client session; default: the global --actor)."),
        tools: Optional[str] = typer.Option(None, "--tools", help="Which tools to list: 'core' (the small set the "
                                                                  "packs name), 'all', or names "
                                                                  "(memory.recall,kg.facts)."),
    ) -> None:
        """Serve the memory as MCP tools (stdio by default).

        When another process holds the database and serves it over HTTP (`pal serve`), or --server / PALIMPSEST_SERVER
        names one, the tools forward their calls to that server instead.

        `pal mcp install CLIENT` writes this server into an agent app's configuration."""
        if ctx.invoked_subcommand is not None:  # pal mcp [--actor A] [--tools T] install ...: install reads them
            if over_http or host or port is not None or token_file:
                raise errors.InvalidParams("pal mcp install writes a stdio server: --http, --host, --port and "
                                           "--token-file are not used there",
                                           details={"errors": [{"loc": ["--http"], "msg": "not for install"}]})
            return
        mcp = _extra("mcp", "mcp")
        s = session()
        actor = s.own_actor(actor)  # the global --actor, given here or before the command (cli.py)
        mcp.serve_from_cli(s, over_http=over_http, host=host, port=port, token=_token(token, token_file),
                           actor=actor, tools=tools)

    @mcp_app.command("install")
    def mcp_install_cmd(
        ctx: typer.Context,
        client: str = typer.Argument(..., help="The agent app: claude-desktop, claude-code, cursor or vscode."),
        scope: Optional[str] = typer.Option(None, "--scope", help="user (every project; the default) or project "
                                                                  "(the file in this folder; not for "
                                                                  "claude-desktop)."),
        name: str = typer.Option("palimpsest", "--name", help="The server's name in the app's configuration."),
        print_only: bool = typer.Option(False, "--print", help="Print the entry as JSON and write nothing."),
        actor: Optional[str] = typer.Option(None, "--actor", help="Who the server's tool calls are made for "
                                                                  "(default: the global --actor)."),
        tools: Optional[str] = typer.Option(None, "--tools", help="The server's --tools: core, all, or names."),
    ) -> None:
        """Write this pal's MCP server into an agent app's configuration, keeping the file's other servers.

        The entry starts this pal by its absolute path, with the --db, -n and --actor in effect.

        The old file is kept as FILE.bak; running the command again updates the one entry."""
        from palimpsest_memory.runtime.adapters import mcp_install

        s = session()
        given = ctx.parent.params if ctx.parent is not None else {}  # `pal mcp --actor A install`: the same
        line = mcp_install.server_line(s.db, s.namespace, s.own_actor(actor or given.get("actor")),
                                       tools or given.get("tools"))
        report = mcp_install.install(client, scope, name, line, print_only=print_only)
        if print_only:
            print(f"palimpsest: nothing written; this entry goes under {report['key']!r} in {report['file']}",
                  file=sys.stderr)
            print(mcp_install.snippet(report), end="")
        elif s.as_json:
            s.show(report)
        else:
            print(f"palimpsest: {mcp_install.describe(report)}")

    app.add_typer(mcp_app, name="mcp")

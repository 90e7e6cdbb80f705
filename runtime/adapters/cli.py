"""``pal``: the command line, generated from the verb catalog.

The fixed commands (packs, verbs, describe, call) are written once; every public verb also gets its own
command, ``pal <pack> <verb> ARGS --options``, built from its params model, so a new verb needs no CLI edit.
"""
from __future__ import annotations

import json
import sys
from typing import Any, Optional

import typer

from runtime import PalimpsestError, Runtime, errors, load_catalog
from runtime.adapters import cli_data
from runtime.adapters.params import make_command
from runtime.adapters.render import print_error, print_json, print_result, print_table
from runtime.adapters.serving import explain_locked

app = typer.Typer(help="palimpsest: a local-first memory runtime for AI agents.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)


class Session:
    """What the root options set up, shared with every command; the runtime opens on first use."""

    def __init__(self, db: str | None, namespace: str | None, as_json: bool, server: str | None = None,
                 actor: str | None = None, idempotency_key: str | None = None) -> None:
        self.db, self.namespace, self.as_json, self.server, self.actor = db, namespace, as_json, server, actor
        self.idempotency_key = idempotency_key
        self._rt: Runtime | None = None

    def runtime(self) -> Runtime:
        if self._rt is None:
            try:
                self._rt = Runtime.open(self.db)
            except errors.StorageError as exc:  # locked by a server? say which process and how to reach it
                raise explain_locked(exc) from None
        return self._rt

    def run(self, verb: str, params: dict[str, Any], internal: bool = False) -> None:
        if self.server:  # a server holds the database: send the call there (stdlib client, no extra needed)
            from runtime.adapters.remote import RemoteClient

            if self.db:  # the server holds its own database: say so rather than ignore --db
                print(f"palimpsest: --db {self.db} is not used: the call goes to the server at {self.server}, which "
                      "holds its own database", file=sys.stderr)
            data = RemoteClient(self.server).call(verb, params, namespace=self.namespace, actor=self.actor,
                                                  internal=internal, idempotency_key=self.idempotency_key)
        else:
            result = self.runtime().call(verb, params, namespace=self.namespace, actor=self.actor, internal=internal,
                                         idempotency_key=self.idempotency_key)
            data = result.model_dump(mode="json")
        print_json(data) if self.as_json else print_result(data)

    def close(self) -> None:
        if self._rt is not None:
            self._rt.close()


@app.callback()
def root(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(None, "--db", envvar="PALIMPSEST_DB", help="Database file (default from config)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace for the call."),
    actor: Optional[str] = typer.Option(None, "--actor", envvar="PALIMPSEST_ACTOR",
                                        help="Who the call is made for: recall ranks with the brain profile bound "
                                             "to this actor (default: the namespace's)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    server: Optional[str] = typer.Option(None, "--server", envvar="PALIMPSEST_SERVER",
                                         help="Send verb calls to a running `pal serve` at this URL."),
    idempotency_key: Optional[str] = typer.Option(
        None, "--idempotency-key", help="Run a write at most once per key: a retry with the same key returns the "
                                        "first answer (calls through --server get a fresh key unless given)."),
) -> None:
    session = Session(db, namespace, as_json, server, actor, idempotency_key)
    _current.append(session)
    ctx.call_on_close(session.close)


_catalog_cache: list[Any] = []


def _catalog() -> Any:
    """The catalog, loaded once per process (build_cli and the fixed commands share it)."""
    if not _catalog_cache:
        _catalog_cache.append(load_catalog()[0])
    return _catalog_cache[0]


_load_failure: list[PalimpsestError] = []  # why the catalog could not load (a config error, say)
_current: list[Session] = []  # the session of the running command (typer's context is not importable)


def _session() -> Session:
    return _current[-1]


@app.command("packs")
def packs_cmd() -> None:
    """List the loaded packs (and the ones that could not load, with why)."""
    catalog = _catalog()
    rows = [{"pack": p.name, "version": p.version, "requires": ", ".join(p.requires) or "-",
             "verbs": sum(1 for v in p.verbs.values() if v.visibility.value == "public"), "status": "loaded"}
            for p in catalog.packs.values()]
    rows += [{"pack": n, "version": "", "requires": "", "verbs": 0, "status": f"not loaded: {why}"}
             for n, why in catalog.unavailable.items()]
    print_json(rows) if _session().as_json else print_table(rows, title="packs")


@app.command("verbs")
def verbs_cmd(all_: bool = typer.Option(False, "--all", help="Include sub-handlers (marked).")) -> None:
    """List verbs: name, speech act, visibility, summary."""
    catalog = _catalog()
    rows = [{"verb": v.full_name, "act": v.act.value, "visibility": v.visibility.value, "summary": v.summary}
            for v in catalog.verbs(include_subhandlers=all_)]
    if _session().as_json:
        print_json(rows)
    elif rows:
        print_table(rows, title="verbs")
    else:
        print("no verbs: no pack is loaded (see `pal packs`)")


@app.command("describe")
def describe_cmd(verb: str) -> None:
    """Show a verb's documentation and the JSON schema of its params and result."""
    catalog = _catalog()
    spec = catalog.get(verb)
    print_json({"verb": spec.full_name, "act": spec.act.value, "visibility": spec.visibility.value,
                "doc": spec.doc, "params": spec.params_model.model_json_schema(),
                "result": spec.result_model.model_json_schema()})


@app.command("call")
def call_cmd(
    verb: str,
    params_json: Optional[str] = typer.Option(None, "--json", help="Params as a JSON object."),
    param: list[str] = typer.Option([], "-p", "--param", help="key=value (value parsed as JSON when it can be)."),
    internal: bool = typer.Option(False, "--internal", help="Allow calling a sub-handler (debugging)."),
) -> None:
    """Call any verb with JSON params or -p key=value pairs."""
    params: dict[str, Any] = {}
    if params_json:
        try:
            params = json.loads(params_json)
        except json.JSONDecodeError as exc:
            raise errors.InvalidParams(f"--json is not valid JSON: {exc}", verb=verb) from None
        except RecursionError:
            raise errors.InvalidParams("--json is nested too deeply", verb=verb) from None
    for item in param:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise errors.InvalidParams(f"-p expects key=value, got {item!r}", verb=verb)
        try:
            params[key] = json.loads(raw)
        except json.JSONDecodeError:
            params[key] = raw
        except RecursionError:
            raise errors.InvalidParams(f"-p {key}: the value is nested too deeply", verb=verb) from None
    _session().run(verb, params, internal=internal)


def _extra(module: str, extra: str) -> Any:
    """Import an adapter that needs an optional extra, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(f"runtime.adapters.{module}")
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


@app.command("serve")
def serve_cmd(
    host: Optional[str] = typer.Option(None, "--host", help="Interface (default [adapters] host, loopback)."),
    port: Optional[int] = typer.Option(None, "--port", help="Port (default [adapters] http_port; 0 = any free)."),
    token: Optional[str] = typer.Option(None, "--token", envvar="PALIMPSEST_TOKEN", show_envvar=True,
                                        help="Require this bearer token (needed for a non-loopback host). "
                                             "Visible in the process list: prefer the variable or --token-file."),
    token_file: Optional[str] = typer.Option(None, "--token-file", help="Read the bearer token from this file."),
) -> None:
    """Serve every public verb over HTTP (POST /v1/verbs/{verb}, resource routes, OpenAPI at /docs).

    Each request names its actor with the X-Palimpsest-Actor header (the global --actor is the default)."""
    http = _extra("http", "http")
    session = _session()
    http.serve(session.runtime(), host=host, port=port, token=_token(token, token_file), actor=session.actor)


@app.command("mcp")
def mcp_cmd(
    over_http: bool = typer.Option(False, "--http", help="Streamable HTTP on loopback instead of stdio."),
    host: Optional[str] = typer.Option(None, "--host", help="Interface for --http (default [adapters] host)."),
    port: Optional[int] = typer.Option(None, "--port", help="Port for --http (default [adapters] mcp_port)."),
    token: Optional[str] = typer.Option(None, "--token", envvar="PALIMPSEST_TOKEN", show_envvar=True,
                                        help="Require this bearer token with --http (visible in the process "
                                             "list: prefer the variable or --token-file)."),
    token_file: Optional[str] = typer.Option(None, "--token-file", help="Read the bearer token from this file."),
    actor: Optional[str] = typer.Option(None, "--actor", help="Who every tool call is made for (one server per "
                                                              "client session; default: the global --actor)."),
) -> None:
    """Serve every public verb as an MCP tool (stdio by default)."""
    mcp = _extra("mcp", "mcp")
    session = _session()
    runtime = session.runtime()
    actor = actor or session.actor
    if over_http:
        mcp.serve_http(runtime, host=host, port=port, token=_token(token, token_file), actor=actor)
    else:
        mcp.serve_stdio(runtime, actor=actor)


def build_cli() -> typer.Typer:
    """The full command tree: fixed commands plus one group per pack with one command per public verb."""
    try:
        catalog = _catalog()
    except PalimpsestError as exc:  # still offer the fixed commands; a pack's command then reports this error
        _load_failure.append(exc)
        return app
    for pack in catalog.packs.values():
        public = [v for v in pack.verbs.values() if v.visibility.value == "public"]
        if not public:
            continue
        sub = typer.Typer(help=f"Verbs of the {pack.name} pack (v{pack.version}).", no_args_is_help=True)
        for spec in public:
            fn = make_command(spec.params_model, spec.full_name,
                              lambda params, verb=spec.full_name: _session().run(verb, params))
            sub.command(spec.name.replace("_", "-"), help=spec.doc or None, short_help=spec.summary or None)(fn)
        app.add_typer(sub, name=pack.name)
    catalog.register_cli_commands(app, _session)  # e.g. the memory pack's `pal import locomo FILE`
    cli_data.register(app, _session)  # pal export / backup / restore (ADR 0018)
    return app


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pal`` console script; exit codes come from the error classes."""
    cli = build_cli()
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        cli(args=args, prog_name="pal", standalone_mode=False)
    except PalimpsestError as exc:
        print_error(exc, as_json)
        return exc.exit_code
    except (typer.Exit, typer.Abort) as exc:
        return getattr(exc, "exit_code", 130)
    except Exception as exc:  # typer's usage errors (bad option, missing argument) carry show() and exit_code
        if _load_failure and "No such command" in str(exc):
            # `pal memory recall` when the packs could not load: the reason, not "no such command"
            print_error(_load_failure[0], as_json)
            return _load_failure[0].exit_code
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            return int(exc.exit_code)
        raise
    return 0


def run() -> None:
    """Console-script wrapper: exit with main()'s code."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()

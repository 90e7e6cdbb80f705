"""``pal``: the command line, generated from the verb catalog.

The fixed commands (packs, verbs, describe, call, info, serve, mcp, config) are written once; every public verb also
gets its own command, ``pal <pack> <verb> ARGS --options``, built from its params model, so a new verb needs no CLI
edit. Packs add commands of their own through the ``palimpsest_register_commands`` hook, and a module of fixed
commands is added by naming it in :data:`COMMAND_MODULES` (it defines ``register(app, session)``).

Every command goes through :class:`Session`: with ``--server URL`` (or ``PALIMPSEST_SERVER``) every call is sent to
that running ``pal serve``, never to a local file. ``--json`` prints the result as JSON.

Global options anywhere (issue 41): ``--db``, ``--namespace``/``-n``, ``--actor``, ``--server``,
``--idempotency-key`` and ``--json`` may stand before or after the command words; :mod:`cli_args` moves them to
the front before typer parses the line (its docstring has the rules).

Startup: ``pal --help``, ``pal --version`` and the fixed commands never load the packs (no numpy, DuckDB or
embedder); the catalog is loaded only when a command needs it (issue 20, item 4).
"""
from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, Optional

import typer

from palimpsest_memory.runtime import DISTRIBUTION, __version__, errors
from palimpsest_memory.runtime.adapters.cli_args import command_word, hoist_root_options, split_json_flag
from palimpsest_memory.runtime.errors import PalimpsestError

if TYPE_CHECKING:
    from palimpsest_memory.runtime import Runtime

# Modules of extra fixed commands, imported when the CLI is built: each defines ``register(app, session)`` where
# ``app`` is the root typer.Typer and ``session()`` returns the running command's Session.
COMMAND_MODULES: tuple[str, ...] = (
    "palimpsest_memory.runtime.adapters.cli_servers",  # pal serve / mcp
    "palimpsest_memory.runtime.adapters.cli_data",  # pal export / backup / restore (ADR 0018)
    "palimpsest_memory.runtime.adapters.cli_config",  # pal config show (ADR 0035)
)

FIXED = {"packs", "verbs", "describe", "call", "info", "check-pack", "serve", "mcp", "config"}

app = typer.Typer(help="palimpsest: a local-first memory runtime for AI agents.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False,
                  epilog="Each pack's verbs are a command group (pal PACK --help); packs may add commands of "
                         "their own. The options above (--db, -n, --json, ...) may also follow the command; a text "
                         "argument given as '-' is read from stdin.")


class Session:
    """What the root options set up, shared with every command; the runtime opens on first use.

    Pack commands use :meth:`call` (local or through ``--server``, the same JSON data either way), :meth:`show`
    to print a result as every command does, and :meth:`runtime` only for work that must run in-process."""

    def __init__(self, db: str | None, namespace: str | None, as_json: bool, server: str | None = None,
                 actor: str | None = None, idempotency_key: str | None = None) -> None:
        self.db, self.namespace, self.as_json, self.server, self.actor = db, namespace, as_json, server, actor
        self.idempotency_key = idempotency_key
        self.actor_given = actor is not None  # given on the command line (root() says), not by PALIMPSEST_ACTOR
        self._rt: Runtime | None = None
        self._client: Any = None

    def runtime(self) -> "Runtime":
        """The local runtime (``--db``). With ``--server`` there is none: the server holds the database."""
        if self.server:
            raise errors.ConfigError(f"this command runs in-process and cannot go through --server {self.server}; "
                                     "run it where the database is, without --server")
        if self._rt is None:
            from palimpsest_memory.runtime import Runtime
            from palimpsest_memory.runtime.adapters.serving import explain_locked

            try:
                self._rt = Runtime.open(self.db)
            except errors.StorageError as exc:  # locked by a server? say which process and how to reach it
                raise explain_locked(exc) from None
        return self._rt

    def client(self) -> Any:
        """The ``--server`` client (stdlib only)."""
        if self._client is None:
            from palimpsest_memory.runtime.adapters.remote import RemoteClient

            if self.db:  # the server holds its own database: say so rather than ignore --db
                print(f"palimpsest: --db {self.db} is not used: calls go to the server at {self.server}, which "
                      "holds its own database", file=sys.stderr)
            self._client = RemoteClient(self.server)  # type: ignore[arg-type]
        return self._client

    def call(self, verb: str, params: dict[str, Any], internal: bool = False) -> Any:
        """Run one verb, here or on the server; returns the result's JSON data (timestamps in UTC)."""
        if self.server:
            return self.client().call(verb, params, namespace=self.namespace, actor=self.actor, internal=internal,
                                      idempotency_key=self.idempotency_key)
        from palimpsest_memory.runtime.adapters.serving import result_data

        result = self.runtime().call(verb, params, namespace=self.namespace, actor=self.actor, internal=internal,
                                     idempotency_key=self.idempotency_key)
        return result_data(result)

    def own_actor(self, own: str | None) -> str | None:
        """The actor of a command with an ``--actor`` of its own (``pal mcp``, the brain's verbs): that option,
        else the global one, and who the call is made for either way. Both given on the line with different
        values is a usage error, as for any global option given twice."""
        if own is not None and self.actor_given and self.actor is not None and own != self.actor:
            raise errors.InvalidParams(f"--actor is given twice with different values: {self.actor!r} (the "
                                       f"global option) and {own!r} (after the command); give it once",
                                       details={"errors": [{"loc": ["--actor"], "msg": "given twice"}]})
        if own is not None:
            self.actor = own
        return self.actor

    def show(self, data: Any) -> None:
        from palimpsest_memory.runtime.adapters.render import print_json, print_result

        print_json(data) if self.as_json else print_result(data)

    def run(self, verb: str, params: dict[str, Any], internal: bool = False) -> None:
        from palimpsest_memory.runtime.adapters.cli_results import exit_if_missing

        data = self.call(verb, params, internal=internal)
        self.show(data)
        exit_if_missing(verb, data, self.as_json)  # ids asked for and not found: exit 3

    def verbs(self) -> list[dict[str, Any]]:
        """The public verbs (name, act, summary), from the server with ``--server``, else the local catalog."""
        if self.server:
            return [{"verb": v["verb"], "act": v.get("act", ""), "visibility": "public",
                     "summary": v.get("summary", "")} for v in self.client().verbs()]
        return [{"verb": v.full_name, "act": v.act.value, "visibility": v.visibility.value, "summary": v.summary}
                for v in _catalog().verbs()]

    def close(self) -> None:
        if self._rt is not None:
            self._rt.close()


def _version(value: bool) -> None:
    if value:
        print(f"{DISTRIBUTION} {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    db: Optional[str] = typer.Option(None, "--db", envvar="PALIMPSEST_DB", help="Database file (default from config)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace for the call."),
    actor: Optional[str] = typer.Option(None, "--actor", envvar="PALIMPSEST_ACTOR",
                                        help="Who the call is made for: recall ranks with the brain profile bound "
                                             "to this actor (default: the namespace's)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text (also accepted after the "
                                                       "command)."),
    server: Optional[str] = typer.Option(None, "--server", envvar="PALIMPSEST_SERVER",
                                         help="Send every call to a running `pal serve` at this URL."),
    idempotency_key: Optional[str] = typer.Option(
        None, "--idempotency-key", help="Run a write at most once per key: a retry with the same key returns the "
                                        "first answer (calls through --server get a fresh key unless given)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    session = Session(db, namespace, as_json or _json_requested[0], server, actor, idempotency_key)
    # --actor on the line, not PALIMPSEST_ACTOR: a command's own --actor must agree with it (own_actor)
    session.actor_given = getattr(ctx.get_parameter_source("actor"), "name", "") == "COMMANDLINE"
    _current.append(session)
    ctx.call_on_close(session.close)


_catalog_cache: list[Any] = []
_load_failure: list[PalimpsestError] = []  # why the catalog could not load (a config error, say)
_current: list[Session] = []  # the session of the running command (typer's context is not importable)
_json_requested = [False]  # --json given after the command word (main() takes it out of the arguments)


def _catalog() -> Any:
    """The catalog, loaded once per process (build_cli and the fixed commands share it)."""
    if not _catalog_cache:
        from palimpsest_memory.runtime import load_catalog

        _catalog_cache.append(load_catalog()[0])
    return _catalog_cache[0]


def _session() -> Session:
    return _current[-1]


@app.command("packs")
def packs_cmd() -> None:
    """List the loaded packs (and the ones that could not load, with why)."""
    session = _session()
    if session.server:  # what the server serves: its verbs, grouped by pack
        counts: dict[str, int] = {}
        for v in session.verbs():
            counts[v["verb"].split(".", 1)[0]] = counts.get(v["verb"].split(".", 1)[0], 0) + 1
        rows = [{"pack": p, "version": "", "requires": "", "verbs": n, "status": f"served by {session.server}"}
                for p, n in counts.items()]
    else:
        catalog = _catalog()
        rows = [{"pack": p.name, "version": p.version, "requires": ", ".join(p.requires) or "-",
                 "verbs": sum(1 for v in p.verbs.values() if v.visibility.value == "public"), "status": "loaded"}
                for p in catalog.packs.values()]
        rows += [{"pack": n, "version": "", "requires": "", "verbs": 0, "status": f"not loaded: {why}"}
                 for n, why in catalog.unavailable.items()]
    from palimpsest_memory.runtime.adapters.render import print_json, print_table

    print_json(rows) if session.as_json else print_table(rows, title="packs")


@app.command("verbs")
def verbs_cmd(all_: bool = typer.Option(False, "--all", help="Include sub-handlers (marked).")) -> None:
    """List verbs: name, speech act, visibility, summary."""
    from palimpsest_memory.runtime.adapters.render import print_json, print_table

    session = _session()
    if all_ and not session.server:
        rows = [{"verb": v.full_name, "act": v.act.value, "visibility": v.visibility.value, "summary": v.summary}
                for v in _catalog().verbs(include_subhandlers=True)]
    else:
        rows = session.verbs()
    if session.as_json:
        print_json(rows)
    elif rows:
        print_table(rows, title="verbs")
    else:
        print("no verbs: no pack is loaded (see `pal packs`)")


@app.command("describe")
def describe_cmd(verb: str) -> None:
    """Show a verb's documentation and the JSON schema of its params and result."""
    from palimpsest_memory.runtime.adapters.render import print_json

    spec = _catalog().get(verb)
    print_json({"verb": spec.full_name, "act": spec.act.value, "visibility": spec.visibility.value,
                "bulk": spec.bulk, "doc": spec.doc, "params": spec.params_model.model_json_schema(),
                "result": spec.result_model.model_json_schema()})


@app.command("call")
def call_cmd(
    verb: str,
    params_json: Optional[str] = typer.Option(None, "--params", help="Params as a JSON object ('-': read it "
                                                                      "from stdin)."),
    param: list[str] = typer.Option([], "-p", "--param", help="key=value (value parsed as JSON when it can be)."),
    internal: bool = typer.Option(False, "--internal", help="Allow calling a sub-handler (debugging)."),
) -> None:
    """Call any verb with --params JSON and/or -p key=value pairs."""
    params: dict[str, Any] = {}
    if params_json:
        if params_json == "-":
            from palimpsest_memory.runtime.adapters.params import read_stdin

            params_json = read_stdin("params", verb)
        try:
            params = json.loads(params_json)
        except json.JSONDecodeError as exc:
            raise errors.InvalidParams(f"--params is not valid JSON: {exc}", verb=verb) from None
        except RecursionError:
            raise errors.InvalidParams("--params is nested too deeply", verb=verb) from None
        if not isinstance(params, dict):
            raise errors.InvalidParams("--params must be a JSON object", verb=verb)
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


@app.command("info")
def info_cmd() -> None:
    """Which database is in use: its path, backend and size, the packs, the namespaces and the embedder."""
    from palimpsest_memory.runtime.adapters.info import gather

    session = _session()
    data = gather(session)
    if session.as_json:
        session.show(data)
        return
    from palimpsest_memory.runtime.adapters.info import print_info

    print_info(data)


@app.command("check-pack")
def check_pack_cmd(name: str = typer.Argument(..., help="The pack's name (its entry point name).")) -> None:
    """Check an installed pack as palimpsest's contract tests check the built-in ones (docstrings, params,
    descriptions, migrations shipped as package data, a database opens); exit 1 when a check fails."""
    from palimpsest_memory.runtime.adapters.check import check_pack
    from palimpsest_memory.runtime.adapters.render import print_json, print_table

    session = _session()
    rows = check_pack(name)
    if session.as_json:
        print_json(rows)
    else:
        print_table([{**r, "ok": "ok" if r["ok"] else "FAIL"} for r in rows], title=f"check-pack {name}",
                    keep=("ok",))
    if not all(r["ok"] for r in rows):
        raise typer.Exit(1)


def _register_modules() -> None:
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app, _session)


_register_modules()


def _pack_names() -> list[str]:
    """The installed packs' names, from their entry points, without importing them (for ``pal --help``)."""
    from importlib.metadata import entry_points

    return sorted({ep.name for ep in entry_points(group="palimpsest.packs")})


def _add_pack_stubs() -> None:
    """``pal --help`` lists each pack's group by its entry point name; its verbs load only when asked for."""
    taken = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    for name in _pack_names():
        if name in taken:
            continue
        app.command(name, help=f"The {name} pack's verbs: pal {name} --help.",
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(lambda: None)


def build_cli() -> typer.Typer:
    """The full command tree: fixed commands plus one group per pack with one command per public verb."""
    from palimpsest_memory.runtime.adapters.params import make_command
    from palimpsest_memory.runtime.adapters.pictures import picture_command

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
            own = "actor" in spec.params_model.model_fields  # the verb's --actor is the global one (own_actor)
            fn = picture_command(spec, lambda verb, params, own=own: _session().call(verb, _verb_params(own, params)),
                                 lambda verb, params, own=own: _session().run(verb, _verb_params(own, params))
                                 ) or make_command(spec.params_model, spec.full_name,  # ^ with --svg FILE
                                                   lambda params, verb=spec.full_name, own=own:
                                                   _session().run(verb, _verb_params(own, params)))
            sub.command(spec.name.replace("_", "-"), help=spec.doc or None, short_help=spec.summary or None)(fn)
        app.add_typer(sub, name=pack.name)
        _groups[pack.name] = sub
    catalog.register_cli_commands(app, _session, _groups)  # e.g. `pal import locomo FILE`, `pal kg history`
    return app


_groups: dict[str, typer.Typer] = {}


def _verb_params(takes_actor: bool, params: dict[str, Any]) -> dict[str, Any]:
    """A generated verb command's params: a verb with an ``actor`` param gets the one ``--actor`` (its own option
    or the global one), so the option means the same before and after the command."""
    if takes_actor:
        actor = _session().own_actor(params.get("actor"))
        if actor is not None:
            params = {**params, "actor": actor}
    return params


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pal`` console script; exit codes come from the error classes."""
    args = list(sys.argv[1:] if argv is None else argv)
    args, as_json = split_json_flag(args)
    _json_requested[0] = as_json
    word = command_word(args)
    if word is None or word in FIXED or word in {c.name for c in app.registered_commands}:
        if word is None:
            _add_pack_stubs()  # `pal --help`: list the packs without loading them
        cli = app
    else:
        cli = build_cli()
    try:
        command = typer.main.get_command(cli)
        from palimpsest_memory.runtime.adapters.cli_help import literal_help

        literal_help(command)  # "[adapters] host" is text, not a Rich style tag
        args = hoist_root_options(command, args)
        rc = command.main(args=args, prog_name="pal", standalone_mode=False)  # a typer.Exit(n) comes back as n
    except PalimpsestError as exc:
        from palimpsest_memory.runtime.adapters.render import print_error

        print_error(exc, as_json)
        return exc.exit_code
    except (typer.Exit, typer.Abort) as exc:
        return getattr(exc, "exit_code", 130)
    except Exception as exc:  # typer's usage errors (bad option, missing argument) carry show() and exit_code
        if _load_failure and "No such command" in str(exc):
            # `pal memory recall` when the packs could not load: the reason, not "no such command"
            from palimpsest_memory.runtime.adapters.render import print_error

            print_error(_load_failure[0], as_json)
            return _load_failure[0].exit_code
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            return int(exc.exit_code)
        raise
    return rc if isinstance(rc, int) else 0


def run() -> None:
    """Console-script wrapper: exit with main()'s code."""
    raise SystemExit(main())


if __name__ == "__main__":
    run()

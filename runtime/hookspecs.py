"""The hooks the runtime itself calls. Packs implement them with ``@hookimpl``; a pack may add its own specs.

A function marked ``@hookimpl`` whose name is not a known hook is an error at load time (pluggy's
``check_pending``), so a misspelled hook never silently does nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from palimpsest_memory.runtime.contributions import HttpRoute, McpTool, WebPage
    from palimpsest_memory.runtime.dispatch import CallInfo

PROJECT = "palimpsest"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def palimpsest_dispatch(call: "CallInfo") -> Any:
    """Run one verb call and return its validated result model.

    The runtime's own implementation executes the handler inside the call's transaction. A tracer may wrap this
    hook (``@hookimpl(wrapper=True)``): code before ``yield`` sees ``call.verb``, ``call.params``,
    ``call.namespace`` and ``call.actor``; ``yield`` returns the result (or raises the call's error). It is for
    tracing only: a wrapper must not change params or results. Packs that react to what another pack did
    subscribe to its declared events (ADR 0015). With no wrapper installed the runtime skips pluggy entirely.
    """


@hookspec
def palimpsest_register_commands(cli: Any, invocation: Any, groups: Any) -> None:
    """Add commands to the ``pal`` command line (llm-style), e.g. ``pal import locomo FILE``.

    ``cli`` is the root ``typer.Typer``; add commands or sub-apps to it. ``groups`` maps each loaded pack's name to
    its verb group (``groups["kg"]`` is ``pal kg``), to add a command beside the generated ones; an implementation
    may leave this argument out. ``invocation()`` returns the running command's session:
    ``.call(verb, params)`` runs a verb locally or through ``--server`` and returns its JSON data (timestamps in
    UTC), ``.show(data)`` prints it as every command does (JSON with ``--json``), ``.server`` is the server URL
    or None, ``.namespace``, ``.actor``, ``.as_json``; ``.runtime()`` is the local Runtime (``--db``), for work
    that must run in-process (it raises a ConfigError under ``--server``).
    Commands must do their work through verbs (``session.call(...)``), never behind them, so they work through a
    server too.
    """


# -- what a pack adds to the adapters (ADR 0035). Each is called once per adapter start, through
# Catalog.contributions, which checks the result and keeps who returned it: a pack names only its own verbs.
@hookspec
def palimpsest_mcp_tools() -> "list[McpTool]":
    """How the pack's verbs show to an agent over MCP: which are core tools (``pal mcp`` lists them by default),
    with which parameters, names and answer shape. A pack that does not implement this hook has all its public
    verbs in the core set; one that returns no core tool has none there (its verbs stay reachable with
    ``--tools all`` or by name)."""


@hookspec
def palimpsest_http_routes() -> "list[HttpRoute]":
    """Resource-style routes of ``pal serve`` onto the pack's verbs (``GET /v1/kg/{ns}/history/...``), beside the
    ``POST /v1/verbs/<verb>`` route every public verb has. A route whose verb is not loaded is not mounted."""


@hookspec
def palimpsest_web_pages() -> "list[WebPage]":
    """Pages the pack adds to the web view (``pal serve``'s ``/``): a script per page, served with the view."""

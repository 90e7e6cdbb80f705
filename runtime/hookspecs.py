"""The hooks the runtime itself calls. Packs implement them with ``@hookimpl``; a pack may add its own specs.

A function marked ``@hookimpl`` whose name is not a known hook is an error at load time (pluggy's
``check_pending``), so a misspelled hook never silently does nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from runtime.dispatch import CallInfo

PROJECT = "palimpsest"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec(firstresult=True)
def palimpsest_dispatch(call: "CallInfo") -> Any:
    """Run one verb call and return its validated result model.

    The runtime's own implementation executes the handler inside the call's transaction. Packs observe calls
    by wrapping this hook (``@hookimpl(wrapper=True)``): code before ``yield`` sees ``call.verb``,
    ``call.params``, ``call.namespace`` and ``call.actor``; ``yield`` returns the result (or raises the call's error).
    A wrapper that wants to record something uses ``call.defer(verb, params)``: the deferred call runs after
    the outermost call has committed, in a write transaction of its own, so read-only verbs stay read-only.
    """


@hookspec
def palimpsest_close(runtime: Any) -> None:
    """Called by ``Runtime.close`` while the database is still open, once per runtime.

    A pack that keeps writes in memory (the brain's pending serve ledger) writes them here, through a verb
    (``runtime.call(verb, params, internal=True)``). An exception is logged and stops neither the close nor the
    other packs' close hooks (the runtime calls each implementation on its own).
    """


@hookspec
def palimpsest_register_commands(cli: Any, invocation: Any) -> None:
    """Add commands to the ``pal`` command line (llm-style), e.g. ``pal import locomo FILE``.

    ``cli`` is the root ``typer.Typer``; add commands or sub-apps to it. ``invocation()`` returns the running
    command's session, with ``.runtime()`` (the Runtime honouring ``--db``), ``.namespace``, ``.actor`` and
    ``.as_json``.
    Commands must do their work through verbs (``session.runtime().call(...)``), never behind them.
    """

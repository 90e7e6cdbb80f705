"""Help text shown as written: ``pal … --help`` renders through Rich, whose markup takes ``[word]`` for a style tag
and drops it, so "(default [adapters] host, loopback)" came out as "(default  host, loopback)" (issue 42, bug 4).
Every help string of the command tree (fixed commands, generated verbs, packs' own commands) is escaped once,
just before click renders it, so no author has to remember to."""
from __future__ import annotations

from typing import Any


def literal_help(command: Any) -> None:
    """Escape Rich markup in the help, short help and epilog of ``command``, its params and its subcommands (click
    objects, built afresh for each run of the CLI)."""
    try:
        from rich.markup import escape
        from typer import core
    except ImportError:  # no Rich: click prints the text as it is
        return
    if not getattr(core, "HAS_RICH", False):
        return
    seen: set[int] = set()

    def walk(cmd: Any) -> None:
        if id(cmd) in seen:
            return
        seen.add(id(cmd))
        for attr in ("help", "short_help", "epilog"):
            text = getattr(cmd, attr, None)
            if isinstance(text, str):
                setattr(cmd, attr, escape(text))
        for param in getattr(cmd, "params", ()):
            if isinstance(getattr(param, "help", None), str):
                param.help = escape(param.help)
        for sub in (getattr(cmd, "commands", None) or {}).values():
            walk(sub)

    walk(command)

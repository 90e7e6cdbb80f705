"""``pal kg history SUBJECT PREDICATE``: a fact's timeline, one line per value, as the demo prints it."""
from __future__ import annotations

from typing import Any, Callable

import typer

from palimpsest_memory.runtime import hookimpl


@hookimpl
def palimpsest_register_commands(cli: typer.Typer, invocation: Callable[[], Any], groups: dict[str, Any]) -> None:
    group = groups.get("kg")
    if group is None:
        return

    @group.command("history")
    def history(subject: str = typer.Argument(..., help="The subject: an entity name or alias."),
                predicate: str = typer.Argument(..., help="The predicate, e.g. uses_database."),
                known_at: str = typer.Option(None, "--known-at", help="As believed then (ISO date or time).")) -> None:
        """The timeline of SUBJECT PREDICATE: each value with when it held (UTC), where it came from and what
        replaced it (kg.fact_history)."""
        session = invocation()
        params = {"subject": subject, "predicate": predicate, **({"known_at": known_at} if known_at else {})}
        session.show(session.call("kg.fact_history", params))

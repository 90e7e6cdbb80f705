"""``pal import locomo FILE`` and ``pal import jsonl FILE``: the memory pack's CLI commands (a pack hook)."""
from __future__ import annotations

from typing import Any, Callable, Optional

import typer
from rich.progress import Progress

from packs.memory.importers import Conversation, parse_jsonl, parse_locomo
from runtime import hookimpl

BATCH = 500


def import_conversations(rt: Any, convs: list[Conversation], key_prefix: str, namespace: str | None,
                         progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Register speakers as person entities, then remember every turn in batches; returns counts."""
    created = replayed = 0
    for conv in convs:
        for speaker in conv.speakers:
            rt.call("kg.upsert_entity", {"name": speaker, "kind": "person"}, namespace=namespace)
        rt.call("kg.upsert_entity", {"name": conv.scope, "kind": "project"}, namespace=namespace)
        notes = conv.notes(key_prefix)
        for start in range(0, len(notes), BATCH):
            res = rt.call("memory.remember_many", {"notes": notes[start:start + BATCH]}, namespace=namespace)
            created, replayed = created + res.created, replayed + res.replayed
            if progress:
                progress(len(res.ids))
    return {"conversations": len(convs), "created": created, "replayed": replayed}


@hookimpl
def palimpsest_register_commands(cli: typer.Typer, invocation: Callable[[], Any]) -> None:
    group = typer.Typer(help="Import conversations as memory notes (one note per turn).", no_args_is_help=True)

    def run(convs: list[Conversation], prefix: str) -> None:
        session = invocation()
        total = sum(len(c.turns) for c in convs)
        with Progress(transient=True, disable=session.as_json) as bar:
            task = bar.add_task("importing", total=total)
            counts = import_conversations(session.runtime(), convs, prefix, session.namespace,
                                          progress=lambda n: bar.advance(task, n))
        print(counts if not session.as_json else __import__("json").dumps(counts))

    @group.command("locomo")
    def locomo(file: str = typer.Argument(..., help="A LoCoMo-format JSON file.")) -> None:
        """Import a LoCoMo file: scope = conversation, thread = session, occurred_at = session date."""
        run(parse_locomo(file), "locomo")

    @group.command("jsonl")
    def jsonl(file: str = typer.Argument(..., help="One chat turn per line."),
              scope: Optional[str] = typer.Option(None, help="Scope for lines without one (default: file stem).")
              ) -> None:
        """Import a JSONL chat log ({speaker, text, timestamp, thread?, scope?, id?} per line)."""
        run(parse_jsonl(file, scope), "jsonl")

    cli.add_typer(group, name="import")

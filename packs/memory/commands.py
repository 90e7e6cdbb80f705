"""``pal import locomo FILE`` and ``pal import jsonl FILE``: the memory pack's CLI commands (a pack hook)."""
from __future__ import annotations

import json
from typing import Any, Callable, Optional

import typer
from rich.progress import Progress

from packs.memory.importers import Conversation, parse_jsonl, parse_locomo
from runtime import hookimpl

BATCH = 500
PARTICIPATES = "participates_in"  # (speaker, participates_in, <conversation scope>)


def import_conversations(rt: Any, convs: list[Conversation], key_prefix: str, namespace: str | None,
                         progress: Callable[[int], None] | None = None) -> dict[str, int]:
    """Register speakers as person entities and the conversation as a project entity named after its scope,
    record ``(speaker, participates_in, <scope>)`` (coexisting facts: one person, many conversations; this is
    how memory.explain finds the scope a person owns), then remember every turn in batches.

    Returns counts and ``note_ids``: ``{"<scope>/<turn id>": note id}``.
    """
    created = replayed = 0
    note_ids: dict[str, int] = {}
    for conv in convs:
        for speaker in conv.speakers:
            rt.call("kg.upsert_entity", {"name": speaker, "kind": "person"}, namespace=namespace)
        rt.call("kg.upsert_entity", {"name": conv.scope, "kind": "project"}, namespace=namespace)
        first = min((t.occurred_at for t in conv.turns), default=None)
        for speaker in dict.fromkeys(conv.speakers):
            known = rt.call("kg.facts", {"subject": speaker, "predicate": PARTICIPATES, "object": conv.scope,
                                         "include_superseded": True}, namespace=namespace).facts
            if not known:  # a re-import adds no evidence
                rt.call("kg.assert_fact", {"subject": speaker, "predicate": PARTICIPATES, "object": conv.scope,
                                           "allow_coexisting": True, "object_kind": "project",
                                           **({"valid_from": first.isoformat()} if first else {})},
                        namespace=namespace)
        notes = conv.notes(key_prefix)
        for start in range(0, len(notes), BATCH):
            batch = notes[start:start + BATCH]
            res = rt.call("memory.remember_many", {"notes": batch}, namespace=namespace)
            created, replayed = created + res.created, replayed + res.replayed
            note_ids.update({f"{conv.scope}/{n['source_id']}": i for n, i in zip(batch, res.ids)})
            if progress:
                progress(len(res.ids))
    return {"conversations": len(convs), "created": created, "replayed": replayed, "note_ids": note_ids}


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
        counts.pop("note_ids")
        print(json.dumps(counts) if session.as_json else
              f"{counts['created']} notes created, {counts['replayed']} already there, "
              f"from {counts['conversations']} conversation(s)")

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

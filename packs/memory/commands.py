"""``pal import locomo FILE`` and ``pal import jsonl FILE``: the memory pack's CLI commands (a pack hook).

Each import is one call, hence one transaction: a file rejected at any line writes nothing (issue 16, item 2;
ADR 0008, "Imports"). Locally it is the sub-handler ``memory.import_file`` (it streams the file); with ``--server``
the file is parsed here and its conversations sent to the server's ``memory.import_conversations`` (the server
never reads a path named by its caller; the request is bounded by the server's ``[adapters] max_body_bytes``).
"""
from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from typing import Any, Callable, Optional

import typer
from rich.console import Console

from palimpsest_memory.packs.memory.importers import Conversation, parse_jsonl, parse_locomo
from palimpsest_memory.runtime import exportfile, hookimpl


def import_conversations(rt: Any, convs: list[Conversation], key_prefix: str, namespace: str | None,
                         progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Import parsed conversations in one transaction (``memory.import_conversations``): speakers become person
    entities and the conversation a project entity named after its scope, with ``(speaker, participates_in,
    <scope>)`` facts (coexisting: one person, many conversations; memory.explain finds a person's scopes so),
    then every turn is remembered; all or nothing.

    Returns counts and ``note_ids``: ``{"<scope>/<turn id>": note id}``.
    """
    payload = [{"scope": c.scope, "speakers": c.speakers, "notes": c.notes(key_prefix)} for c in convs]
    res = rt.call("memory.import_conversations", {"conversations": payload}, namespace=namespace, internal=True)
    turns = [f"{c.scope}/{t.turn_id}" for c in convs for t in c.turns]
    if progress:
        progress(len(turns))
    return {"conversations": len(convs), "created": res.created, "replayed": res.replayed,
            "note_ids": dict(zip(turns, res.ids))}


@hookimpl
def palimpsest_register_commands(cli: typer.Typer, invocation: Callable[[], Any]) -> None:
    group = typer.Typer(help="Import conversations as memory notes (one note per turn), all or nothing.",
                        no_args_is_help=True)

    def run(file: str, fmt: str, scope: Optional[str] = None) -> None:
        session = invocation()
        params = {"path": file, "format": fmt, **({"scope": scope} if scope is not None else {})}
        quiet = session.as_json or not sys.stderr.isatty()
        with Console(stderr=True).status(f"importing {file} (one transaction: all or nothing)",
                                         spinner="dots") if not quiet else nullcontext():
            if session.server:
                convs = parse_locomo(file) if fmt == "locomo" else parse_jsonl(file, scope)
                payload = [{"scope": c.scope, "speakers": c.speakers, "notes": c.notes(fmt)} for c in convs]
                res = session.call("memory.import_conversations", {"conversations": payload})
            else:
                res = session.call("memory.import_file", params, internal=True)
        counts = {"conversations": res["conversations"], "created": res["created"], "replayed": res["replayed"]}
        print(json.dumps(counts) if session.as_json else
              f"{counts['created']} notes created, {counts['replayed']} already there, "
              f"from {counts['conversations']} conversation(s)")

    @group.command("locomo")
    def locomo(file: str = typer.Argument(..., help="A LoCoMo-format JSON file.")) -> None:
        """Import a LoCoMo file: scope = conversation, thread = session, occurred_at = session date."""
        run(file, "locomo")

    @group.command("jsonl")
    def jsonl(file: str = typer.Argument(..., help="One chat turn per line."),
              scope: Optional[str] = typer.Option(None, help="Scope for lines without one (default: file stem).")
              ) -> None:
        """Import a JSONL chat log ({speaker, text, timestamp, thread?, scope?, id?} per line), read line by line;
        a bad line is an error naming it and nothing is imported."""
        run(file, "jsonl", scope)

    @group.command("palimpsest")
    def palimpsest(file: str = typer.Argument(..., help="A file written by `pal export`.")) -> None:
        """Import a `pal export` file into --namespace (default: the namespace it was exported from), which must
        be empty; ids are kept, so the target store must not use them. The whole file is checked first."""
        session = invocation()
        if session.server:  # the server that holds the database imports it (POST /v1/import)
            counts = session.client().import_from(file, session.namespace)
            total = sum(n for per in counts.values() for n in per.values())
            print(json.dumps(counts) if session.as_json else f"{total} records imported through the server")
            return
        with Console(stderr=True).status(f"importing {file}", spinner="dots") if not session.as_json \
                else nullcontext():
            counts = exportfile.import_file(session.runtime(), file, session.namespace)
        total = sum(n for per in counts.values() for n in per.values())
        print(json.dumps(counts) if session.as_json else f"{total} records imported: " + ", ".join(
            f"{p} {sum(c.values())}" for p, c in counts.items()))

    cli.add_typer(group, name="import")


"""``pal import locomo|jsonl|chatgpt|claude FILE`` and ``pal import markdown DIR``: the memory pack's CLI
commands (a pack hook).

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

from palimpsest_memory.packs.memory.importers.conversations import Conversation, parse_jsonl, parse_locomo
from palimpsest_memory.packs.memory.importers.chat_exports import PARSERS, load_export
from palimpsest_memory.runtime import errors
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
            "seen_again": res.seen_again, "note_ids": dict(zip(turns, res.ids))}


EXTRA_COUNTS = {"chatgpt": ("skipped",), "claude": ("skipped",), "markdown": ("links", "unresolved", "skipped")}


def remote_payload(file: str, fmt: str, scope: Optional[str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``--server``: the file parsed here, as ``memory.import_conversations``'s conversations (one per scope),
    and the counts only the parse knows (so the output is the same as a local import's)."""
    if fmt in PARSERS:
        by_scope: dict[str, dict[str, Any]] = {}
        sc, skipped, threads = scope or fmt, [0], set()
        for m in PARSERS[fmt](file, load_export(file), skipped):
            threads.add(m.conversation)
            conv = by_scope.setdefault(sc, {"scope": sc, "speakers": [], "notes": []})
            if m.turn.speaker not in conv["speakers"]:
                conv["speakers"].append(m.turn.speaker)
            conv["notes"].append({**m.note(fmt, sc), "occurred_at": m.turn.occurred_at.isoformat()})
        return list(by_scope.values()), {"conversations": len(threads), "skipped": skipped[0]}
    if fmt == "markdown":  # its edges need the notes' ids inside the import's transaction: import_file only
        raise errors.InvalidParams("pal import markdown runs against a local store: stop the server, or import "
                                   "without --server where the database is")
    convs = parse_locomo(file) if fmt == "locomo" else parse_jsonl(file, scope)
    return [{"scope": c.scope, "speakers": c.speakers, "notes": c.notes(fmt)} for c in convs], {}


DUPES = typer.Option(None, "--duplicates", help="merge: a text a note of its scope already says is counted on it "
                     "(the default, [packs.memory] duplicates); keep: stored as another note.")


@hookimpl
def palimpsest_register_commands(cli: typer.Typer, invocation: Callable[[], Any]) -> None:
    group = typer.Typer(help="Import conversations as memory notes (one note per turn), all or nothing.",
                        no_args_is_help=True)

    def run(file: str, fmt: str, scope: Optional[str] = None, duplicates: Optional[str] = None) -> None:
        session = invocation()
        given = {"duplicates": duplicates} if duplicates is not None else {}
        params = {"path": file, "format": fmt, **({"scope": scope} if scope is not None else {}), **given}
        quiet = session.as_json or not sys.stderr.isatty()
        with Console(stderr=True).status(f"importing {file} (one transaction: all or nothing)",
                                         spinner="dots") if not quiet else nullcontext():
            if session.server:
                payload, parsed = remote_payload(file, fmt, scope)
                res = {**session.call("memory.import_conversations", {"conversations": payload, **given}), **parsed}
            else:
                res = session.call("memory.import_file", params, internal=True)
        counts = {"conversations": res["conversations"], "created": res["created"], "replayed": res["replayed"],
                  "seen_again": res.get("seen_again", 0)}
        extra = {k: res.get(k, 0) for k in EXTRA_COUNTS.get(fmt, ())}  # the JSON of the older formats is unchanged
        if session.as_json:
            print(json.dumps({**counts, **extra}))
            return
        print(f"{counts['created']} notes created, {counts['replayed']} already there, "
              + (f"{counts['seen_again']} seen again (an existing note's text), " if counts["seen_again"] else "") + (
            f"{extra['links']} links, {extra['unresolved']} links to no file, {extra['skipped']} files with "
            "nothing to import" if fmt == "markdown" else f"from {counts['conversations']} conversation(s)"))
        if extra.get("skipped") and fmt in PARSERS:
            print(f"{extra['skipped']} message(s) skipped (system, tool, hidden or empty)")

    @group.command("locomo")
    def locomo(file: str = typer.Argument(..., help="A LoCoMo-format JSON file."),
               duplicates: Optional[str] = DUPES) -> None:
        """Import a LoCoMo file: scope = conversation, thread = session, occurred_at = session date."""
        run(file, "locomo", None, duplicates)

    @group.command("jsonl")
    def jsonl(file: str = typer.Argument(..., help="One chat turn per line."),
              scope: Optional[str] = typer.Option(None, help="Scope for lines without one (default: file stem)."),
              duplicates: Optional[str] = DUPES) -> None:
        """Import a JSONL chat log ({speaker, text, timestamp, thread?, scope?, id?} per line), read line by line;
        a bad line is an error naming it and nothing is imported."""
        run(file, "jsonl", scope, duplicates)

    @group.command("chatgpt")
    def chatgpt(export: str = typer.Argument(..., help="conversations.json of a ChatGPT data export (or the "
                                                       "export's folder or .zip)."),
                scope: Optional[str] = typer.Option(None, help="Scope of every note (default: chatgpt)."),
                duplicates: Optional[str] = DUPES) -> None:
        """Import a ChatGPT data export: each conversation a thread (the branch last shown), each message a
        note "user: ..." / "assistant: ..." at its time; system, tool and hidden messages are skipped. Importing
        it again adds only what is new (keys chatgpt:<conversation id>:<message id>)."""
        run(export, "chatgpt", scope, duplicates)

    @group.command("claude")
    def claude(export: str = typer.Argument(..., help="A Claude.ai data export: its conversations.json, the "
                                                      "unzipped folder or the .zip."),
               scope: Optional[str] = typer.Option(None, help="Scope of every note (default: claude)."),
               duplicates: Optional[str] = DUPES) -> None:
        """Import a Claude.ai data export: each conversation a thread, each message a note "user: ..." /
        "assistant: ..." at its time (thinking and tool use left out). Importing it again adds only what is new
        (keys claude:<conversation uuid>:<message uuid>)."""
        run(export, "claude", scope, duplicates)

    @group.command("markdown")
    def markdown(folder: str = typer.Argument(..., help="A folder of .md files, e.g. an Obsidian vault."),
                 scope: Optional[str] = typer.Option(None, help="Scope of files whose front matter names none "
                                                                "(default: the folder's name)."),
                 duplicates: Optional[str] = DUPES) -> None:
        """Import a Markdown folder: one note per file (long files with headings: one per section), front
        matter tags/date/title, [[links]] as related_to edges; the file's mtime when it has no date. A file
        edited since an earlier import is refused as a conflict naming it."""
        run(folder, "markdown", scope, duplicates)

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


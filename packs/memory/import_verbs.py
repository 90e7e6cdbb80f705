"""The import verbs: a whole conversation file (or a parsed list of conversations) in ONE transaction.

An import is all or nothing (issue 16, item 2). ``memory.import_file`` reads the file itself — a verb call is
one transaction and params cannot be a stream — in two passes: the first validates every note (streaming, line
by line for JSONL; nothing is written), the second registers speakers and scopes in the kg and stores the notes
in batches, all inside the call's transaction. Any error, in either pass, leaves the store as it was.
``memory.import_file`` is a sub-handler: no server exposes it (a server must not read files named by a remote
caller); ``pal import`` calls it in-process with ``internal=True``. ``memory.import_conversations`` takes the
parsed conversations themselves and is public, so ``pal --server URL import jsonl FILE`` parses the file where it
is and sends it in one call (one transaction on the server). See ADR 0008, "Imports".
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Iterator, Literal, Optional

from pydantic import BaseModel, Field, ValidationError

from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.importers.conversations import (Turn, file_bound, iter_jsonl, line_bound,
                                                                    parse_locomo)
from palimpsest_memory.packs.memory.importers.chat_exports import PARSERS, load_export
from palimpsest_memory.packs.memory.importers.markdown import Vault, parse_vault
from palimpsest_memory.packs.memory.models.notes import DUPLICATES, Duplicates, NoteIn
from palimpsest_memory.packs.memory.note_store import check_note_limits, store_notes
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Act, Context, Visibility, errors
from palimpsest_memory.runtime.params import NamespacedParams, Params

BATCH = 500  # notes per store_notes call inside the one transaction (bounds what one embedding call holds)
PARTICIPATES = "participates_in"  # (speaker, participates_in, <conversation scope>)


class ImportFileParams(NamespacedParams):
    path: str = Field(min_length=1, description="The file, read by the process that holds the store.")
    format: Literal["jsonl", "locomo", "chatgpt", "claude", "markdown"]
    scope: Optional[str] = Field(None, description="JSONL: the scope of lines without one (default: file stem); "
                                                   "chatgpt, claude: every note's (default: the format's name); "
                                                   "markdown: of files without one (default: the folder's name).")
    key_prefix: Optional[str] = Field(None, min_length=1, description="Idempotency key prefix (default: format).")
    duplicates: Optional[Duplicates] = Field(None, description=DUPLICATES)


class ImportConversation(Params):
    scope: str = Field(min_length=1)
    speakers: list[str]
    notes: list[NoteIn]


class ImportConversationsParams(NamespacedParams):
    conversations: list[ImportConversation]
    duplicates: Optional[Duplicates] = Field(None, description=DUPLICATES)


class ImportResult(BaseModel):
    conversations: int
    notes: int = Field(description="Notes in the input (created + replayed + seen again).")
    created: int
    replayed: int = Field(description="Notes whose idempotency key was already stored: a re-import adds nothing.")
    seen_again: int = Field(0, description="Notes whose text a live note of their scope (or an earlier one of the "
                                           "import) already said: counted on that note (duplicates='merge').")
    ids: list[int] = Field(default_factory=list, description="import_conversations only: note ids, in input order.")
    skipped: int = Field(0, description="chatgpt, claude: messages not imported (system, tool, hidden, empty); "
                                        "markdown: files with nothing to import (empty, kg pages).")
    links: int = Field(0, description="markdown: edges between the notes, from [[links]] and relation keys.")
    unresolved: int = Field(0, description="markdown: [[links]] to no file of the folder (not an error).")


@dataclass
class Item:
    """One note to import and where it came from (for errors)."""

    where: str  # "line 651", "sample conv-26 turn D1:3"
    loc: list[Any]
    scope: Optional[str]
    speaker: Optional[str]  # registered as a person of the scope (None: the scope's speakers are given)
    note: dict[str, Any]


@dataclass
class ConversationPlan:
    speakers: dict[str, None] = field(default_factory=dict)  # ordered set
    first: Optional[datetime] = None
    notes: int = 0


def note_of(turn: Turn, scope: str, key_prefix: str) -> dict[str, Any]:
    return {"content": turn.content(), "occurred_at": turn.occurred_at, "scope": scope, "thread": turn.thread,
            "source_id": turn.turn_id, "key": f"{key_prefix}:{scope}:{turn.turn_id}"}


def validate(s: MemorySettings, items: Iterable[Item], plan: dict[str, ConversationPlan]) -> int:
    """Pass 1: every note as remember would check it, errors naming the line; fills ``plan``; writes nothing."""
    keys: dict[str, tuple[int, str]] = {}  # key → (hash of content, where): one key, two contents is a conflict
    count = 0
    for item in items:
        try:
            note = NoteIn.model_validate(item.note)
            check_note_limits(s, [note], single=True)
            for value in (note.content, note.scope, note.thread, note.source_id, note.key, item.speaker):
                if value is not None:
                    value.encode("utf-8")  # a lone surrogate escape ("\ud800") is JSON but not storable text
        except ValidationError as exc:
            first = exc.errors()[0]
            msg = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
            raise _at(errors.InvalidParams, item, msg) from None
        except UnicodeEncodeError:
            raise _at(errors.InvalidParams, item, "text contains a lone surrogate (not valid Unicode)") from None
        except errors.LimitExceeded as exc:
            raise _at(errors.LimitExceeded, item, exc.message) from None
        if note.key is not None:
            seen = keys.setdefault(note.key, (hash(note.content), item.where))
            if seen[0] != hash(note.content):
                raise _at(errors.Conflict, item, f"idempotency key {note.key!r} was used by {seen[1]} with "
                          "other content")
        conv = plan.setdefault(item.scope, ConversationPlan())
        if item.speaker is not None:
            conv.speakers.setdefault(item.speaker)
        if note.occurred_at is not None and (conv.first is None or note.occurred_at < conv.first):
            conv.first = note.occurred_at
        conv.notes += 1
        count += 1
    return count


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Every error of an import says that nothing was imported (the call's transaction rolls it all back)."""
    try:
        yield
    except errors.PalimpsestError as exc:
        if NOTHING not in exc.message:
            exc.message += NOTHING
            exc.args = (exc.message,)
        raise


NOTHING = " (nothing was imported)"


def _at(cls: type[errors.PalimpsestError], item: Item, msg: str) -> errors.PalimpsestError:
    return cls(f"{item.where}: {msg}", details={"errors": [{"loc": item.loc, "msg": msg}]})


def write(ctx: Context, plan: dict[str, ConversationPlan], items: Iterable[Item],
          dupes: str) -> tuple[int, int, int, list[int]]:
    """Pass 2, in the call's transaction: speakers and scopes as entities, ``participates_in`` facts, then the
    notes in batches (entities first, so the notes' mentions link to them). Returns created, replayed, seen
    again, ids."""
    for scope, conv in plan.items():
        if scope is None:  # notes without a scope (a Markdown file whose front matter says `scope: null`)
            continue
        for speaker in conv.speakers:
            ctx.call("kg.upsert_entity", {"name": speaker, "kind": "person"})
        ctx.call("kg.upsert_entity", {"name": scope, "kind": "project"})
        for speaker in conv.speakers:
            known = ctx.call("kg.facts", {"subject": speaker, "predicate": PARTICIPATES, "object": scope,
                                          "include_superseded": True}).facts
            if not known:  # a re-import adds no evidence
                ctx.call("kg.assert_fact", {"subject": speaker, "predicate": PARTICIPATES, "object": scope,
                                            "allow_coexisting": True, "object_kind": "project",
                                            **({"valid_from": conv.first.isoformat()} if conv.first else {})})
    created = replayed = seen = 0
    ids: list[int] = []
    batch: list[NoteIn] = []
    expected = sum(c.notes for c in plan.values())

    def flush() -> None:  # batches share the transaction: a later batch sees (and merges into) an earlier one's notes
        nonlocal created, replayed, seen
        done = store_notes(ctx, batch, dupes=dupes)
        new, again = sum(done.created), sum(done.seen_again)
        created, replayed, seen = created + new, replayed + len(done.ids) - new - again, seen + again
        ids.extend(done.ids)
        batch.clear()

    for item in items:
        if item.scope not in plan or len(ids) + len(batch) >= expected:
            raise errors.Conflict(f"{item.where}: the input changed while it was imported")
        batch.append(NoteIn.model_validate(item.note))
        if len(batch) >= BATCH:
            flush()
    if batch:
        flush()
    if len(ids) != expected:
        raise errors.Conflict("the input changed while it was imported")
    return created, replayed, seen, ids


def run_import(ctx: Context, items: Callable[[], Iterator[Item]], dupes: Optional[str],
               seed: Iterable[tuple[str, list[str]]] = (),
               after: Optional[Callable[[list[int]], None]] = None) -> ImportResult:
    """Validate every item, then write them; ``after(ids)`` writes what needs the notes' ids (edges), still
    inside the one transaction."""
    with all_or_nothing():
        plan = {scope: ConversationPlan(speakers=dict.fromkeys(speakers)) for scope, speakers in seed}
        validate(ctx.settings, items(), plan)
        created, replayed, seen, ids = write(ctx, plan, items(), dupes or ctx.settings.duplicates)
        if after is not None:
            after(ids)
    return ImportResult(conversations=len(plan), notes=len(ids), created=created, replayed=replayed,
                        seen_again=seen, ids=ids)


def link_vault(ctx: Context, vault: Vault, ids: list[int]) -> int:
    """A folder's links as memory edges (``memory.link_many``: re-linking an existing edge adds none)."""
    s: MemorySettings = ctx.settings
    links = [{"source_id": ids[i], "target_id": ids[j], "relation": r} for i, j, r in vault.links if ids[i] != ids[j]]
    for k in range(0, len(links), s.max_batch):
        try:
            ctx.call("memory.link_many", {"links": links[k:k + s.max_batch]})
        except errors.PalimpsestError as exc:  # e.g. a `supersedes` key on a note another note supersedes
            exc.message = f"while linking the notes ([[links]] and relation keys): {exc.message}"
            exc.args = (exc.message,)
            raise
    return len(links)


@pack.verb("import_file", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER, bulk=True)
def import_file(params: ImportFileParams, ctx: Context) -> ImportResult:
    """Import a JSONL chat log, a LoCoMo file, a ChatGPT or Claude.ai export or a Markdown folder, all or
    nothing: validated whole before anything is written, then written in this call's one transaction
    (``pal import``)."""
    s: MemorySettings = ctx.settings
    prefix = params.key_prefix or params.format
    if params.format == "locomo":
        with all_or_nothing():
            convs = parse_locomo(params.path, max_bytes=file_bound(s.max_content_chars))

        def locomo() -> Iterator[Item]:
            for c in convs:
                for t in c.turns:
                    yield Item(f"{params.path}: sample {c.scope} turn {t.turn_id}", ["sample", c.scope, t.turn_id],
                               c.scope, None, note_of(t, c.scope, prefix))
        res = run_import(ctx, locomo, params.duplicates, seed=[(c.scope, c.speakers) for c in convs])
    elif params.format in PARSERS:  # chatgpt, claude
        with all_or_nothing():
            data = load_export(params.path, max_bytes=file_bound(s.max_content_chars))
        scope, skipped, threads = params.scope or params.format, [0], set()

        def chat() -> Iterator[Item]:
            skipped[0] = 0  # counted again by each pass
            for m in PARSERS[params.format](params.path, data, skipped):
                threads.add(m.conversation)
                yield Item(m.where, m.loc, scope, m.turn.speaker, m.note(params.format, scope))
        res = run_import(ctx, chat, params.duplicates)
        res.skipped, res.conversations = skipped[0], len(threads)  # one scope, many conversations
    elif params.format == "markdown":
        with all_or_nothing():
            vault = parse_vault(params.path, params.scope, max_bytes=file_bound(s.max_content_chars))
        linked = [0]

        def markdown() -> Iterator[Item]:
            for sec in vault.sections:
                yield Item(f"{params.path}: {sec.where}", sec.loc, sec.note["scope"], None, sec.note)
        res = run_import(ctx, markdown, params.duplicates,
                         after=lambda ids: linked.__setitem__(0, link_vault(ctx, vault, ids)))
        res.skipped, res.links, res.unresolved = vault.skipped, linked[0], vault.unresolved
    else:
        bound = line_bound(s.max_content_chars)

        def jsonl() -> Iterator[Item]:
            for lineno, scope, t in iter_jsonl(params.path, params.scope, bound):
                yield Item(f"{params.path}: line {lineno}", ["line", lineno], scope, t.speaker,
                           note_of(t, scope, prefix))
        res = run_import(ctx, jsonl, params.duplicates)
    res.ids = []  # a file may hold millions of notes: the counts say what happened
    return res


@pack.verb("import_conversations", act=Act.COMMISSIVE, bulk=True)
def import_conversations(params: ImportConversationsParams, ctx: Context) -> ImportResult:
    """Import parsed conversations (speakers, notes), all or nothing, in this call's one transaction."""
    convs = params.conversations

    def items() -> Iterator[Item]:
        for c in convs:
            for i, n in enumerate(c.notes):
                yield Item(f"conversation {c.scope} note {i}", ["conversations", c.scope, i], c.scope, None,
                           n.model_dump(exclude_unset=True))
    return run_import(ctx, items, params.duplicates, seed=[(c.scope, c.speakers) for c in convs])

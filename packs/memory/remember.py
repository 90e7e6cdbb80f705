"""memory.remember / memory.remember_many: store verbatim notes (through :mod:`note_store`, which embeds them and
links the entities they mention) and answer with what was stored."""
from __future__ import annotations

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models.notes import (NoteIn, RememberManyParams, RememberManyResult,
                                                         RememberParams, RememberResult)
from palimpsest_memory.packs.memory.note_store import fetch_notes, store_notes
from palimpsest_memory.runtime import Act, Context


@pack.verb("remember", act=Act.COMMISSIVE)
def remember(params: RememberParams, ctx: Context) -> RememberResult:
    """Store one note verbatim (idempotent with a key); classify its kind and link the entities it mentions."""
    note_in = NoteIn.model_validate(params.model_dump(exclude={"namespace", "duplicates"}))
    done = store_notes(ctx, [note_in], single=True, dupes=params.duplicates or ctx.settings.duplicates)
    note = fetch_notes(ctx, done.ids)[done.ids[0]]
    if not done.created[0]:  # a note made now has no seen-again record to read
        duplicates.attach(ctx, [note])
    found = ctx.call("kg.detect_entities", {"text": note.content}).matches
    note.entities = list(dict.fromkeys(m.name for m in found))  # each entity once, in order of first mention
    return RememberResult(note=note, created=done.created[0], seen_again=done.seen_again[0])


@pack.verb("remember_many", act=Act.COMMISSIVE, bulk=True)
def remember_many(params: RememberManyParams, ctx: Context) -> RememberManyResult:
    """Store many notes in one transaction (bulk import); keys make replays idempotent; a text already said in
    its scope is counted on that note (see ``duplicates``)."""
    done = store_notes(ctx, params.notes, dupes=params.duplicates or ctx.settings.duplicates)
    created, seen = sum(done.created), sum(done.seen_again)
    return RememberManyResult(ids=done.ids, created=created, replayed=len(done.ids) - created - seen, seen_again=seen)


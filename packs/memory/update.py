"""memory.update and memory.history: change a note, keep what it was.

A content change is a new version: a new note (the old one's scope, thread, type, kind, tags and salience unless
the call changes them) linked to the old by a ``supersedes`` edge through ``memory.link``, so recall returns the
new text and the old one stays readable by id and in history. A metadata-only change (tags, salience,
decay_factor, kind, scope) edits the note in place and writes one audit row per changed field
(``memory.note_audit``: old and new value, actor, time), which ``memory.history`` returns with the version chain.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Optional

from pydantic import BaseModel, Field, field_validator

from palimpsest_memory.packs.memory.mirrors.changes import MetadataEdited, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models.notes import Kind, Note
from palimpsest_memory.packs.memory.models.graph import NoteId
from palimpsest_memory.packs.memory.note_store import fetch_notes
from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import NamespacedParams

METADATA = ("tags", "salience", "decay_factor", "kind", "scope")


class UpdateParams(NamespacedParams):
    """Correct or change a saved note. New text becomes a new version that replaces the old one in search (the
    old one stays in the history); tags, importance, kind and scope are changed in place. Give only what
    changes."""

    id: NoteId = Field(description="The id of the note to change, as returned by remember or recall.")
    content: Optional[str] = Field(None, description="The corrected text, in full (it replaces the old text in "
                                                     "search).")
    tags: Optional[list[str]] = Field(None, description="The new list of tags (replaces the old list).")
    salience: Optional[float] = Field(None, ge=0, le=1, description="New importance, from 0 to 1.")
    decay_factor: Optional[float] = Field(None, ge=0, allow_inf_nan=False, description="How fast its importance "
                                                                                       "fades per day (0: never).")
    kind: Optional[Kind] = Field(None, description="New kind: decision, milestone, problem, preference, emotional "
                                                   "or none.")
    scope: Optional[str] = Field(None, min_length=1, description="Move the note to this project, person or topic.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not v.strip():
            raise ValueError("content must not be blank")
        return v


class UpdateResult(BaseModel):
    note: Note = Field(description="The note as it is now (the new version after a content change).")
    previous: Optional[int] = Field(None, description="The version a content change superseded.")
    changed: list[str] = Field(description="The fields that changed.")


class HistoryParams(NamespacedParams):
    id: NoteId = Field(description="Any version of the note.")


class AuditEntry(BaseModel):
    note_id: int
    field: str
    old: Any
    new: Any
    actor: Optional[str]
    changed_at: datetime


class HistoryResult(BaseModel):
    versions: list[Note] = Field(description="Oldest first; the last one is current unless it was superseded "
                                             "by a note outside this chain.")
    changes: list[AuditEntry] = Field(description="In-place metadata changes of every version, oldest first.")


def _note(ctx: Context, note_id: int) -> Note:
    found = fetch_notes(ctx, [note_id]).get(note_id)
    if found is None:
        raise errors.NotFound(f"note {note_id} does not exist in namespace {ctx.namespace!r}",
                              details={"errors": [{"loc": ["id"], "msg": "unknown note"}]})
    return found


@pack.verb("update", act=Act.COMMISSIVE)
def update(params: UpdateParams, ctx: Context) -> UpdateResult:
    """Change a note: new content becomes a new version (the old one is kept and superseded); tags, salience,
    decay, kind and scope are edited in place and recorded in the note's history."""
    old = _note(ctx, params.id)
    if old.superseded_by is not None:
        raise errors.Conflict(f"note {old.id} was superseded by note {old.superseded_by}; update the current "
                              "version", details={"current": old.superseded_by})
    given = {f: getattr(params, f) for f in METADATA if getattr(params, f) is not None}
    if params.content is None and not given:
        raise errors.InvalidParams("nothing to change: give content or one of " + ", ".join(METADATA),
                                   details={"errors": [{"loc": ["content"], "msg": "no change"}]})
    if params.content is not None and params.content != old.content:
        fresh = {"content": params.content, "memory_type": old.memory_type, "scope": old.scope,
                 "thread": old.thread, "tags": old.tags, "salience": old.salience, "decay_factor": old.decay_factor,
                 "kind": old.kind if old.kind_source == "caller" else None, "source_id": old.source_id, **given}
        new = ctx.call("memory.remember", {**fresh, "duplicates": "keep"}).note  # a version, never a sighting
        ctx.call("memory.link", {"source_id": new.id, "target_id": old.id, "relation": "supersedes"})
        changed = ["content"] + [f for f, v in given.items() if v != getattr(old, f)]
        return UpdateResult(note=_note(ctx, new.id), previous=old.id, changed=changed)
    edits = {f: v for f, v in given.items() if v != getattr(old, f) or (f == "kind" and old.kind_source != "caller")}
    if edits:
        sets = ", ".join(f"{f} = ?" for f in edits) + (", kind_source = 'caller'" if "kind" in edits else "")
        ctx.db.execute(f"UPDATE memory.notes SET {sets} WHERE id = ? AND namespace = ?",
                       [*edits.values(), old.id, ctx.namespace])
        now = ctx.now()
        for f, v in edits.items():
            ctx.db.execute("INSERT INTO memory.note_audit VALUES (nextval('memory.audit_seq'), ?, ?, ?, ?, ?, ?, ?)",
                           [ctx.namespace, old.id, f, json.dumps(getattr(old, f)), json.dumps(v), ctx.actor, now])
        fields = tuple(edits.items()) + ((("kind_source", "caller"),) if "kind" in edits else ())
        record(ctx, MetadataEdited(old.id, fields))
    return UpdateResult(note=_note(ctx, old.id), changed=list(edits))


@pack.verb("history", act=Act.ASSERTIVE)
def history(params: HistoryParams, ctx: Context) -> HistoryResult:
    """A note's versions (through supersedes edges, oldest first) and every in-place change made to them."""
    start = _note(ctx, params.id)
    chain = [start]
    seen = {start.id}
    while True:  # back through what each version superseded (memory.edges: outgoing supersedes)
        edges = ctx.call("memory.edges", {"memory_id": chain[0].id, "direction": "out",
                                          "relations": ["supersedes"]}).edges
        older = [e.target_id for e in edges if e.target_id not in seen]
        if not older:
            break
        seen.add(older[0])
        chain.insert(0, _note(ctx, older[0]))
    while chain[-1].superseded_by is not None and chain[-1].superseded_by not in seen:
        seen.add(chain[-1].superseded_by)
        newer = fetch_notes(ctx, [chain[-1].superseded_by]).get(chain[-1].superseded_by)
        if newer is None:  # forgotten (memory.forget): its tombstone is all that is left of it
            break
        chain.append(newer)
    rows = ctx.db.query("SELECT note_id, field, old_value, new_value, actor, changed_at FROM memory.note_audit "
                        "WHERE namespace = ? AND note_id IN (SELECT unnest(?::BIGINT[])) ORDER BY seq",
                        [ctx.namespace, [n.id for n in chain]])
    return HistoryResult(versions=chain, changes=[
        AuditEntry(note_id=r[0], field=r[1], old=json.loads(r[2]) if r[2] else None,
                   new=json.loads(r[3]) if r[3] else None, actor=r[4], changed_at=r[5]) for r in rows])

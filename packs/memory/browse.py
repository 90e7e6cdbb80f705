"""memory.list and memory.count: see what a namespace holds, page by page, with recall's kind of filters.

Pages are cut by a keyset cursor, ``(occurred_at, id)`` or ``id``, not by an offset: notes remembered while a
caller pages never shift or repeat the pages it has not read yet. The cursor is opaque to callers (base64 JSON)
and carries the order it was made for, so a cursor from another order is refused, not misread.
"""
from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any, Literal, Optional

from pydantic import BaseModel, Field

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.engine.index import FULL_COLUMNS
from palimpsest_memory.packs.memory.models.notes import Kind, MemoryType, Note, UtcDateTime
from palimpsest_memory.packs.memory.note_store import note_from_row
from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import NamespacedParams


class BrowseFilters(NamespacedParams):
    memory_type: Optional[MemoryType] = Field(None, description="episodic or semantic.")
    kind: Optional[Kind] = Field(None, description="Only notes of this kind.")
    scope: Optional[str] = Field(None, description="Only notes of this scope.")
    thread: Optional[str] = Field(None, description="Only notes of this thread.")
    tags: list[str] = Field(default_factory=list, description="Only notes with these tags (see tag_mode).")
    tag_mode: Literal["any", "all"] = Field("any", description="any: one of the tags; all: every tag.")
    min_salience: Optional[float] = Field(None, ge=0, le=1, description="Only notes at least this salient.")
    occurred_after: Optional[UtcDateTime] = Field(None, description="Only notes that happened at or after this.")
    occurred_before: Optional[UtcDateTime] = Field(None, description="Only notes that happened before this.")
    created_after: Optional[UtcDateTime] = Field(None, description="Only notes stored at or after this.")
    created_before: Optional[UtcDateTime] = Field(None, description="Only notes stored before this.")
    include_archived: bool = Field(False, description="Also archived notes.")
    include_superseded: bool = Field(False, description="Also notes a newer version superseded.")


class ListParams(BrowseFilters):
    order: Literal["id", "occurred_at"] = Field("id", description="id (storage order) or occurred_at, then id.")
    descending: bool = Field(False, description="Newest first.")
    cursor: Optional[str] = Field(None, max_length=512, description="next_cursor of the previous page.")
    limit: int = Field(50, ge=1, le=1000, description="Most notes a page holds.")


class ListResult(BaseModel):
    notes: list[Note]
    next_cursor: Optional[str] = Field(description="Pass as cursor for the next page; null on the last page.")


class CountResult(BaseModel):
    count: int


def where_sql(p: BrowseFilters, ctx: Context) -> tuple[list[str], list[Any]]:
    """The SQL conditions (and their arguments) of a notes filter, in the call's namespace: memory.list pages
    through what they select, memory.forget erases it (one meaning of a filter for both)."""
    where, args = ["namespace = ?"], [ctx.namespace]
    for column in ("memory_type", "kind", "scope", "thread"):
        value = getattr(p, column)
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if p.tags:
        where.append(f"list_has_{p.tag_mode}(tags, ?::VARCHAR[])")
        args.append(list(p.tags))
    for field, column, op in (("min_salience", "salience", ">="), ("occurred_after", "occurred_at", ">="),
                              ("occurred_before", "occurred_at", "<"), ("created_after", "created_at", ">="),
                              ("created_before", "created_at", "<")):
        value = getattr(p, field)
        if value is not None:
            where.append(f"{column} {op} ?")
            args.append(value)
    if not p.include_archived:
        where.append("archived_at IS NULL")
    if not p.include_superseded:
        where.append("superseded_by IS NULL")
    return where, args


def _cursor(order: str, descending: bool, note: Note) -> str:
    key = note.occurred_at.isoformat() if order == "occurred_at" else None
    raw = json.dumps({"o": order, "d": descending, "k": key, "i": note.id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor_id(value: object) -> int:
    """A cursor's note id as the listing wrote it: an integer of 64 bits. A forged one (a float such as 1e308, a
    100-digit number) is a bad cursor, not an id the database refuses (issue 46: it was a storage_error)."""
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
        raise ValueError(f"the id {value!r} is not a 64-bit integer")
    return value


def _after(p: ListParams) -> tuple[datetime | None, int] | None:
    if p.cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(p.cursor + "=" * (-len(p.cursor) % 4)))
        if data["o"] != p.order or data["d"] != p.descending:
            raise ValueError("made for another order")
        key = datetime.fromisoformat(data["k"]) if p.order == "occurred_at" else None
        if key is not None and key.tzinfo is not None:
            raise ValueError("a cursor's time has no zone")
        return key, cursor_id(data["i"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise errors.InvalidParams(f"cursor is not a next_cursor of this listing ({exc})",
                                   details={"errors": [{"loc": ["cursor"], "msg": "invalid cursor"}]}) from None


@pack.verb("list", act=Act.ASSERTIVE)
def list_notes(params: ListParams, ctx: Context) -> ListResult:
    """List the namespace's notes page by page (filters like recall's; archived and superseded on request)."""
    where, args = where_sql(params, ctx)
    after = _after(params)
    cmp, direction = ("<", "DESC") if params.descending else (">", "ASC")
    if after is not None:
        if params.order == "occurred_at":
            where.append(f"(occurred_at, id) {cmp} (?, ?)")
            args += [after[0], after[1]]
        else:
            where.append(f"id {cmp} ?")
            args.append(after[1])
    order = f"occurred_at {direction}, id {direction}" if params.order == "occurred_at" else f"id {direction}"
    rows = ctx.db.query(f"SELECT {FULL_COLUMNS} FROM memory.notes WHERE {' AND '.join(where)} ORDER BY {order} "
                        f"LIMIT {params.limit + 1}", args)
    notes = [note_from_row(r) for r in rows[: params.limit]]
    duplicates.attach(ctx, notes)
    more = len(rows) > params.limit
    return ListResult(notes=notes, next_cursor=_cursor(params.order, params.descending, notes[-1]) if more else None)


@pack.verb("count", act=Act.ASSERTIVE)
def count_notes(params: BrowseFilters, ctx: Context) -> CountResult:
    """Count the namespace's notes that pass the filters (those of memory.list)."""
    where, args = where_sql(params, ctx)
    (n,) = ctx.db.query(f"SELECT count(*) FROM memory.notes WHERE {' AND '.join(where)}", args)[0]
    return CountResult(count=int(n))

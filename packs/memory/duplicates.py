"""Remembering a text again (issue 42 item 4, ADR 0039): the live note that already says it is "seen again".

Two texts are the same when their normal forms are equal: Unicode NFKC, case folded, NFKC again (folding can
undo NFKC's composition), white space runs collapsed to one space and trimmed. A note is matched by the 64-bit
hash of that form (``memory.notes.text_hash``) and then by the form itself, so a hash collision never merges two
different texts. Only a live note matches: same namespace and scope, not archived, not superseded (forgotten
notes are gone). No unique index enforces it: writing calls of a namespace already run one at a time (the
runtime's lock on a file, the namespace's advisory lock on PostgreSQL, held until commit), so the lookup and the
insert of one call see every other call's notes; and a unique index would refuse the duplicates stores hold
from before, and DuckDB rewrites updated rows (archive, supersede) as delete + insert.

A seen-again record (``memory.note_seen``) is bounded: a count, the first and last time, and the latest
``seen_recent`` times. A key given with a text that was merged is kept in ``memory.seen_keys``, so a retry with
that key replays instead of counting twice.
"""
from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Optional

from palimpsest_memory.packs.memory.models.notes import Seen

if TYPE_CHECKING:
    from palimpsest_memory.runtime import Context


def normal_form(text: str) -> str:
    """The form two texts are compared in: NFKC, case folded, NFKC again, white space collapsed."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(folded.split())


def form_hash(form: str) -> int:
    """The signed 64-bit hash of a normal form (a BIGINT column on both backends)."""
    return int.from_bytes(hashlib.blake2b(form.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def text_hash(text: str) -> int:
    return form_hash(normal_form(text))


def backfill(ctx: "Context", *, once: bool = False) -> int:
    """Hash the namespace's notes that have no hash yet: notes of a store made before migration 008, and notes
    a palimpsest import brought in (the hash is not exported: it is derived; the import's after-import step calls
    this). ``once``: skip the scan when this process has done it for the namespace (a remember's path: the scan
    cost ~4 ms a call at 100k notes)."""
    hashed = ctx.state.hashed
    if once and ctx.namespace in hashed:
        return 0
    rows = ctx.db.query("SELECT id, content FROM memory.notes WHERE namespace = ? AND text_hash IS NULL",
                        [ctx.namespace])
    if rows:
        ctx.db.execute("UPDATE memory.notes SET text_hash = u.h FROM (SELECT unnest(?::BIGINT[]) AS nid, "
                       "unnest(?::BIGINT[]) AS h) u WHERE memory.notes.namespace = ? AND memory.notes.id = u.nid",
                       [[r[0] for r in rows], [text_hash(r[1]) for r in rows], ctx.namespace])
    # (a call rolled back after this leaves those hashes unwritten: until this process reopens the store, a text
    # already said by one of those old notes is stored again rather than merged)
    hashed.add(ctx.namespace)
    return len(rows)


def live_matches(ctx: "Context", hashes: Iterable[int]) -> dict[tuple[Optional[str], str], tuple[int, datetime]]:
    """The oldest live note per (scope, normal form) among notes with these hashes: id and occurred_at."""
    wanted = sorted(set(hashes))
    if not wanted:
        return {}
    rows = ctx.db.query("SELECT id, scope, content, occurred_at FROM memory.notes WHERE namespace = ? AND text_hash"
                        " IN (SELECT unnest(?::BIGINT[])) AND archived_at IS NULL AND superseded_by IS NULL "
                        "ORDER BY id", [ctx.namespace, wanted])
    out: dict[tuple[Optional[str], str], tuple[int, datetime]] = {}
    for nid, scope, content, occurred in rows:
        out.setdefault((scope, normal_form(content)), (nid, occurred))  # duplicates from before: the oldest
    return out


def seen_keys(ctx: "Context", keys: list[str]) -> dict[str, tuple[int, str]]:
    """Keys that were given with a merged text: key -> (note id, the note's content)."""
    if not keys:
        return {}
    rows = ctx.db.query("SELECT k.key, n.id, n.content FROM memory.seen_keys k JOIN memory.notes n ON "
                        "n.namespace = k.namespace AND n.id = k.note_id WHERE k.namespace = ? AND k.key IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ctx.namespace, keys])
    return {k: (nid, content) for k, nid, content in rows}


@dataclass
class Sightings:
    """What one call saw again: per note, its first time (occurred_at) and the times it was said again."""

    first: dict[int, datetime] = field(default_factory=dict)
    times: dict[int, list[datetime]] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)

    def add(self, note_id: int, first: datetime, when: datetime, key: Optional[str]) -> None:
        self.first.setdefault(note_id, first)
        self.times.setdefault(note_id, []).append(when)
        if key is not None:
            self.keys[key] = note_id


def record_seen(ctx: "Context", seen: Sightings, keep: int) -> None:
    """Fold this call's sightings into each note's bounded record (read, merged here, written back)."""
    if not seen.times:
        return
    ids = sorted(seen.times)
    old = {r[0]: r[1:] for r in ctx.db.query(
        "SELECT note_id, seen_count, first_seen, last_seen, recent FROM memory.note_seen WHERE namespace = ? AND "
        "note_id IN (SELECT unnest(?::BIGINT[]))", [ctx.namespace, ids])}
    counts, firsts, lasts, recents = [], [], [], []
    for nid in ids:
        count, first, last, recent = old.get(nid, (1, seen.first[nid], None, []))
        times = sorted([*(recent or []), *seen.times[nid]])
        counts.append(count + len(seen.times[nid]))
        firsts.append(min(first, *seen.times[nid]))
        lasts.append(max(t for t in (last, times[-1]) if t is not None))
        recents.append([t.isoformat() for t in times[-keep:]] if keep else [])  # text: PostgreSQL gets JSON rows
    ctx.db.execute(
        "INSERT INTO memory.note_seen (namespace, note_id, seen_count, first_seen, last_seen, recent) SELECT ?, "
        "unnest(?::BIGINT[]), unnest(?::BIGINT[]), unnest(?::TIMESTAMP[]), unnest(?::TIMESTAMP[]), "
        "unnest(?::TIMESTAMP[][]) ON CONFLICT (namespace, note_id) DO UPDATE SET seen_count = excluded.seen_count, "
        "first_seen = excluded.first_seen, last_seen = excluded.last_seen, recent = excluded.recent",
        [ctx.namespace, ids, counts, firsts, lasts, recents])
    if seen.keys:
        ctx.db.execute("INSERT INTO memory.seen_keys (namespace, key, note_id) SELECT ?, unnest(?::VARCHAR[]), "
                       "unnest(?::BIGINT[])", [ctx.namespace, list(seen.keys), list(seen.keys.values())])


def seen_of(ctx: "Context", ids: list[int]) -> dict[int, Seen]:
    """The seen-again records of these notes (a note never seen again has none)."""
    if not ids:
        return {}
    rows = ctx.db.query("SELECT note_id, seen_count, first_seen, last_seen, recent FROM memory.note_seen WHERE "
                        "namespace = ? AND note_id IN (SELECT unnest(?::BIGINT[]))", [ctx.namespace, ids])
    return {r[0]: Seen(count=r[1], first_seen=r[2], last_seen=r[3], recent=list(r[4] or [])) for r in rows}


def erase(ctx: "Context", ids: list[int]) -> None:
    """memory.forget: the notes' seen-again records and merged keys go with them."""
    for table in ("memory.note_seen", "memory.seen_keys"):
        ctx.db.execute(f"DELETE FROM {table} WHERE namespace = ? AND note_id IN (SELECT unnest(?::BIGINT[]))",
                       [ctx.namespace, ids])


def attach(ctx: "Context", notes: Any) -> None:
    """Set ``seen`` on notes read from SQL (memory.get, memory.list)."""
    records = seen_of(ctx, [n.id for n in notes])
    for n in notes:
        n.seen = records.get(n.id)

"""The notes' repository for every verb module: notes read back from SQL or from the index's rows, and stored
(checked against the limits, keys replayed, a text said again counted on its note, inserted, embedded, linked to
the entities they mention, recorded for the mirrors). ``memory.remember`` and the importers, beliefs and lifecycle
verbs store through :func:`store_notes`; every verb that answers with notes reads them here."""
from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple, Union

import numpy as np

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.mirrors.changes import notes_added, record
from palimpsest_memory.packs.memory.classify import classify
from palimpsest_memory.packs.memory.engine.index import FULL_COLUMNS
from palimpsest_memory.packs.memory.engine.index_writes import index_text
from palimpsest_memory.packs.memory.engine.rowstore import NoteRow
from palimpsest_memory.packs.memory.models.notes import Note, NoteIn
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Context, errors


def note_from_row(r: tuple[Any, ...], entities: list[str] | None = None) -> Note:
    (nid, ns, content, mtype, kind, scope, thread, tags, sal, decay, occ, created, _sup_at, archived,
     kind_source, source_id, key, superseded_by) = r
    return Note(id=nid, namespace=ns, content=content, memory_type=mtype, kind=kind, kind_source=kind_source,
                scope=scope, thread=thread, tags=list(tags or []), salience=sal, decay_factor=decay,
                occurred_at=occ, created_at=created, source_id=source_id, key=key, superseded_by=superseded_by,
                archived_at=archived, entities=entities or [])


def note_from_index(r: NoteRow) -> Note:
    """A note from the index's copy of its row (trusted: it was validated on the way in and read back)."""
    return Note.model_construct(
        id=r.id, namespace=r.namespace, content=r.content, memory_type=r.memory_type, kind=r.kind,
        kind_source=r.kind_source, scope=r.scope, thread=r.thread, tags=list(r.tags or []), salience=r.salience,
        decay_factor=r.decay_factor, occurred_at=r.occurred_at, created_at=r.created_at, source_id=r.source_id,
        key=r.key, superseded_by=r.superseded_by, archived_at=r.archived_at, entities=[])


def fetch_notes(ctx: Context, ids: list[int]) -> dict[int, Note]:
    rows = ctx.db.query(f"SELECT {FULL_COLUMNS} FROM memory.notes WHERE namespace = ? AND id IN "
                        "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, ids])
    return {r[0]: note_from_row(r) for r in rows}


def check_note_limits(s: MemorySettings, notes: list[NoteIn], single: bool) -> None:
    if len(notes) > s.max_batch:
        raise errors.LimitExceeded(f"at most {s.max_batch} notes per call, got {len(notes)}",
                                   details={"errors": [{"loc": ["notes"], "msg": "batch too large"}]})
    for i, n in enumerate(notes):
        where = [] if single else ["notes", str(i)]
        if len(n.content) > s.max_content_chars:
            raise errors.LimitExceeded(
                f"content is {len(n.content)} characters; the limit is {s.max_content_chars}",
                details={"errors": [{"loc": [*where, "content"], "msg": "content too long"}]})
        if len(n.tags) > s.max_tags:
            raise errors.LimitExceeded(f"a note has at most {s.max_tags} tags, got {len(n.tags)}",
                                       details={"errors": [{"loc": [*where, "tags"], "msg": "too many tags"}]})
        labels = [("scope", n.scope), ("thread", n.thread), ("source_id", n.source_id)]
        for field, value in labels + [(f"tags.{j}", t) for j, t in enumerate(n.tags)]:
            if value is not None and len(value) > s.max_label_chars:
                raise errors.LimitExceeded(
                    f"{'.'.join([*where, field])} is {len(value)} characters; the limit is {s.max_label_chars}",
                    details={"errors": [{"loc": [*where, *field.split(".")], "msg": f"{field} too long"}]})


def _replays(ctx: Context, notes: list[NoteIn]) -> dict[str, int]:
    """Existing notes for the batch's idempotency keys; a key replayed with other content is a conflict. A key
    that came with a text merged into a note (seen again) replays that note when the text is the same again."""
    wanted: dict[str, str] = {}
    for i, n in enumerate(notes):
        if n.key is None:
            continue
        if n.key in wanted and wanted[n.key] != n.content:
            raise errors.Conflict(f"idempotency key {n.key!r} appears twice with different content",
                                  details={"errors": [{"loc": ["notes", str(i), "key"], "msg": "conflicting key"}]})
        wanted[n.key] = n.content
    if not wanted:
        return {}
    rows = ctx.db.query("SELECT key, id, content FROM memory.notes WHERE namespace = ? AND key IN "
                        "(SELECT unnest(?::VARCHAR[]))", [ctx.namespace, list(wanted)])
    for key, nid, content in rows:
        if content != wanted[key]:
            raise errors.Conflict(f"idempotency key {key!r} was already used for note {nid} with other content",
                                  details={"key": key, "note_id": nid})
    merged = duplicates.seen_keys(ctx, [k for k in wanted if k not in {r[0] for r in rows}])
    for key, (nid, content) in merged.items():
        if duplicates.normal_form(content) != duplicates.normal_form(wanted[key]):
            raise errors.Conflict(f"idempotency key {key!r} was already used for note {nid} with other content",
                                  details={"key": key, "note_id": nid})
    return {**{key: nid for key, nid, _ in rows}, **{key: nid for key, (nid, _) in merged.items()}}


Ref = Union[int, tuple[str, int]]  # a note id, ("id", an existing note's id) or ("new", position among the fresh)


class Stored(NamedTuple):
    """What store_notes did with each note, in order: its id, and whether it was created or seen again (neither:
    its key replayed a note)."""

    ids: list[int]
    created: list[bool]
    seen_again: list[bool]


def store_notes(ctx: Context, notes: list[NoteIn], single: bool = False, dupes: str = "keep") -> Stored:
    """Insert the notes that are new (in order), embed and link them. With ``dupes="merge"`` a note whose text a
    live note of its scope already says (or an earlier note of the batch) is counted on that note instead."""
    s: MemorySettings = ctx.settings
    check_note_limits(s, notes, single)
    existing = _replays(ctx, notes)
    now = ctx.now()
    forms = [duplicates.normal_form(n.content) for n in notes]
    hashes = [duplicates.form_hash(f) for f in forms]
    live: dict[tuple[Any, str], tuple[Ref, datetime]] = {}
    if dupes == "merge":
        duplicates.backfill(ctx, once=True)
        live = {k: (("id", nid), occ) for k, (nid, occ) in duplicates.live_matches(ctx, hashes).items()}
    fresh: list[int] = []  # positions of the notes to insert
    plan: list[tuple[str, Ref]] = []  # per note: ("replay" | "seen" | "new", what it resolves to)
    sightings: list[tuple[Ref, datetime, datetime, str | None]] = []
    for i, n in enumerate(notes):  # a key already stored, or repeated in this batch, is a replay, not a new note
        if n.key is not None and n.key in existing:
            plan.append(("replay", existing[n.key]))
            continue
        when = n.occurred_at.replace(tzinfo=None) if n.occurred_at else now
        hit = live.get((n.scope, forms[i])) if dupes == "merge" else None
        if hit is not None:
            ref: Ref = hit[0]
            plan.append(("seen", ref))
            sightings.append((ref, hit[1], when, n.key))
        else:
            ref = ("new", len(fresh))
            fresh.append(i)
            plan.append(("new", ref))
            if dupes == "merge":
                live[(n.scope, forms[i])] = (ref, when)
        if n.key is not None:
            existing[n.key] = ref
    new_ids = [r[0] for r in ctx.db.query("SELECT nextval('memory.note_ids') FROM range(?)", [len(fresh)])]

    def resolve(ref: Ref) -> int:
        return ref if isinstance(ref, int) else ref[1] if ref[0] == "id" else new_ids[ref[1]]

    _insert(ctx, [notes[i] for i in fresh], [hashes[i] for i in fresh], new_ids, now)
    seen = duplicates.Sightings()
    for ref, first, when, key in sightings:
        seen.add(resolve(ref), first, when, key)
    duplicates.record_seen(ctx, seen, s.seen_recent)
    return Stored([resolve(ref) for _, ref in plan], [k == "new" for k, _ in plan], [k == "seen" for k, _ in plan])


def _insert(ctx: Context, fresh: list[NoteIn], hashes: list[int], new_ids: list[int], now: datetime) -> None:
    """Insert the new notes with their text hashes, embed and link them, and record them for the mirrors."""
    s: MemorySettings = ctx.settings
    rows: list[NoteRow] = []
    cols: dict[str, list[Any]] = {k: [] for k in (
        "id", "content", "memory_type", "kind", "kind_source", "scope", "thread", "tags", "salience", "decay",
        "occurred_at", "source_id", "key")}
    for nid, n in zip(new_ids, fresh):
        defaults = s.episodic if n.memory_type == "episodic" else s.semantic
        kind, kind_source = (n.kind, "caller") if n.kind is not None else (classify(n.content), "classifier")
        kind = None if kind == "none" else kind
        row = NoteRow(nid, ctx.namespace, n.content, n.memory_type, kind, n.scope, n.thread, n.tags,
                      defaults.salience if n.salience is None else n.salience,
                      defaults.decay_factor if n.decay_factor is None else n.decay_factor,
                      n.occurred_at.replace(tzinfo=None) if n.occurred_at else now, now,
                      kind_source=kind_source, source_id=n.source_id, key=n.key)
        rows.append(row)
        for k, v in (("id", nid), ("content", n.content), ("memory_type", n.memory_type), ("kind", kind),
                     ("kind_source", kind_source), ("scope", n.scope), ("thread", n.thread), ("tags", n.tags),
                     ("salience", row.salience), ("decay", row.decay_factor), ("occurred_at", row.occurred_at),
                     ("source_id", n.source_id), ("key", n.key)):
            cols[k].append(v)
    if not rows:
        return
    ctx.db.execute(
        "INSERT INTO memory.notes (id, namespace, content, memory_type, kind, kind_source, scope, thread, tags,"
        " salience, decay_factor, occurred_at, created_at, source_id, key, properties, text_hash) SELECT unnest($1),"
        " $14, unnest($2), unnest($3), unnest($4), unnest($5), unnest($6), unnest($7), unnest($8::VARCHAR[][]),"
        " unnest($9), unnest($10), unnest($11::TIMESTAMP[]), $15, unnest($12), unnest($13), '{}', unnest($16)",
        [cols["id"], cols["content"], cols["memory_type"], cols["kind"], cols["kind_source"], cols["scope"],
         cols["thread"], cols["tags"], cols["salience"], cols["decay"], cols["occurred_at"], cols["source_id"],
         cols["key"], ctx.namespace, now, hashes])
    vectors = _embed_and_store(ctx, rows)
    _link_mentions(ctx, rows)
    record(ctx, notes_added(rows, vectors))


def _embed_and_store(ctx: Context, rows: list[NoteRow]) -> dict[str, np.ndarray]:
    if not rows:
        return {}
    texts = [index_text(r.content, r.occurred_at) for r in rows]
    out = {}
    for model in ctx.settings.stored_models():
        matrix = ctx.state.embedders.embed(model, texts)
        out[model] = matrix
        ctx.db.execute(
            "INSERT INTO memory.vectors (note_id, model, dim, vec, namespace) "
            "SELECT unnest($1), $2, $3, unnest($4::BLOB[]), $5",
            [[r.id for r in rows], model, int(matrix.shape[1]), [v.tobytes() for v in matrix], ctx.namespace])
    return out


# Texts / links per kg call. A batch of max_batch notes may mention more entities than the kg takes in one call
# (3 400 notes naming 3 entities each is past kg.max_batch = 10 000 links), so the calls are chunked; they share
# this call's transaction, so the batch stays all or nothing. Keep it at most [packs.kg] max_batch.
KG_CHUNK = 1000


def _link_mentions(ctx: Context, rows: list[NoteRow]) -> None:
    """``mentions`` edges from each note to the known entities its content names (one kg call per chunk)."""
    found = [hits for i in range(0, len(rows), KG_CHUNK)
             for hits in ctx.call("kg.detect_entities_many",
                                  {"texts": [r.content for r in rows[i:i + KG_CHUNK]]}).results]
    links = [{"src": f"m:{r.id}", "dst": m, "relation": "mentions"}
             for r, hits in zip(rows, found) for m in dict.fromkeys(x.node_id for x in hits.matches)]
    for i in range(0, len(links), KG_CHUNK):
        ctx.call("kg.link_many", {"links": links[i:i + KG_CHUNK]})

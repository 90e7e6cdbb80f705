"""The brain's part of forgetting (ADR 0018): ``memory.notes_forgotten`` erases the notes from the serve ledger.

A forgotten note leaves every serve it was in (its id and its three score components, at its rank); feedback
events keep their credit (the posteriors are not rewritten) but lose the note id. Forgetting a whole namespace
erases the namespace's brain: profiles, bindings, posteriors, the event log, serves and projected weights.
"""
from __future__ import annotations

from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.events import NotesForgotten

from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.ledger import flush, pending
from palimpsest_memory.packs.brain.state import COLUMNS

NAMESPACE_TABLES = ("serves", "events", "posteriors", "bindings", "profiles", "projections")


@pack.subscribe("memory.notes_forgotten")
def on_notes_forgotten(event: NotesForgotten, ctx: Context) -> None:
    """Erase the forgotten notes from the serve ledger (the pending serves are written first)."""
    ns = ctx.namespace
    if any(s.namespace == ns for s in pending(ctx).values()):
        flush(ctx)
    if event.everything:
        for (actor,) in ctx.db.query("SELECT DISTINCT actor FROM brain.bindings WHERE namespace = ?", [ns]):
            ctx.record_change("binding", (actor, None))
        for table in NAMESPACE_TABLES:
            ctx.db.execute(f"DELETE FROM brain.{table} WHERE namespace = ?", [ns])
        return
    gone = set(event.note_ids)
    ids = sorted(gone)
    rows = ctx.db.query("SELECT recall_id, note_ids, " + ", ".join(COLUMNS) + " FROM brain.serves WHERE "
                        "namespace = ? AND list_has_any(note_ids, ?::BIGINT[])", [ns, ids])
    for recall_id, note_ids, *features in rows:
        keep = [i for i, n in enumerate(note_ids) if n not in gone]
        ctx.db.execute("UPDATE brain.serves SET note_ids = ?, " + ", ".join(f"{c} = ?" for c in COLUMNS)
                       + " WHERE recall_id = ? AND namespace = ?",
                       [[note_ids[i] for i in keep], *[[f[i] for i in keep] for f in features], recall_id, ns])
    ctx.db.execute("UPDATE brain.events SET note_id = NULL WHERE namespace = ? AND note_id IN "
                   "(SELECT unnest(?::BIGINT[]))", [ns, ids])

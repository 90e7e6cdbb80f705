"""brain.export_records and brain.import_records: the brain's part of `pal export` / `pal import palimpsest`
(runtime/portable.py, ADR 0018): profiles, bindings, posteriors, the event log, the serve ledger and the projected
weights. Exporting first writes the serves kept in memory (so it is commissive); importing ends by projecting the
imported weights into memory's tunables again, as the brain does when it learns."""
from __future__ import annotations

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.portable import Table, register_portable

from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.ledger import flush, pending
from palimpsest_memory.packs.brain.state import NAMESPACE_ACTOR
from palimpsest_memory.packs.brain.store import TUNABLE

TABLES = [
    Table("profile", "brain.profiles", ("name",)),
    Table("binding", "brain.bindings", ("actor",)),
    Table("posterior", "brain.posteriors", ("profile", "component")),
    Table("event", "brain.events", ("seq",), unique=("seq",), sequences=(("brain.event_seq", "seq"),)),
    Table("serve", "brain.serves", ("seq", "recall_id")),
    Table("projection", "brain.projections", ("actor",)),
]


def _write_pending_serves(ctx: Context) -> None:
    """The serves still held in memory belong in the export: write them first."""
    if any(s.namespace == ctx.namespace for s in pending(ctx).values()):
        flush(ctx)


def _project_weights(ctx: Context) -> None:
    """Project the imported weights into memory's tunables, as the brain does when it learns."""
    for actor, rel, sal, tmp in ctx.db.query("SELECT actor, relevance, salience, temporal FROM brain.projections "
                                             "WHERE namespace = ?", [ctx.namespace]):
        for component, value in (("relevance", rel), ("salience", sal), ("temporal", tmp)):
            ctx.set_tunable(TUNABLE[component], value, actor=None if actor == NAMESPACE_ACTOR else actor)


register_portable(pack, TABLES, export_act=Act.COMMISSIVE, before_export=_write_pending_serves,
                  after_import=_project_weights)

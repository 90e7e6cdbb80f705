"""brain.export_records and brain.import_records: the brain's part of `pal export` / `pal import palimpsest`
(runtime/portable.py, ADR 0018): profiles, bindings, posteriors, the event log, the serve ledger and the projected
weights. Exporting first writes the serves kept in memory (so it is commissive); importing ends by projecting the
imported weights into memory's tunables again, as the brain does when it learns."""
from __future__ import annotations

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.pack import Visibility
from palimpsest_memory.runtime.portable import ExportParams, ExportResult, ImportParams, ImportResult, Table, export_page, import_page

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


@pack.verb("export_records", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def export_records(params: ExportParams, ctx: Context) -> ExportResult:
    """A page of the namespace's brain rows (the pending serves are written first)."""
    if params.cursor is None and not params.namespaces and any(s.namespace == ctx.namespace for s in pending(ctx).values()):
        flush(ctx)
    return export_page(ctx, TABLES, params.cursor, params.limit,
                       namespaces=params.namespaces)


@pack.verb("import_records", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def import_records(params: ImportParams, ctx: Context) -> ImportResult:
    """Check or write exported brain records into the namespace; finish projects the imported weights."""
    res = import_page(ctx, TABLES, params)
    if params.finish and not params.check_only:
        for actor, rel, sal, tmp in ctx.db.query("SELECT actor, relevance, salience, temporal FROM brain.projections "
                                                 "WHERE namespace = ?", [ctx.namespace]):
            for component, value in (("relevance", rel), ("salience", sal), ("temporal", tmp)):
                ctx.set_tunable(TUNABLE[component], value, actor=None if actor == NAMESPACE_ACTOR else actor)
        ctx.reload_mirrors()
    return res

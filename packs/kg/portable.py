"""kg.export_records and kg.import_records: the kg's part of `pal export` / `pal import palimpsest`
(runtime/portable.py, ADR 0018): entities and their keys, predicates, every fact version (the bi-temporal
history), sources, claims, edges (removed ones too), centrality and tombstones."""
from __future__ import annotations

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.pack import Visibility
from palimpsest_memory.runtime.portable import ExportParams, ExportResult, ImportParams, ImportResult, Table, export_page, import_page

from palimpsest_memory.packs.kg.core import pack

TABLES = [
    Table("entity", "kg.entities", ("id",), unique=("id",), sequences=(("kg.entity_seq", "id"),)),
    Table("entity_key", "kg.entity_keys", ("key",)),
    Table("predicate", "kg.predicates", ("name",)),
    Table("fact", "kg.facts", ("version_id",), unique=("version_id",),
          sequences=(("kg.fact_seq", "fact_id"), ("kg.version_seq", "version_id"))),
    Table("fact_source", "kg.fact_sources", ("fact_id", "source_id", "recorded_at", "confidence")),
    Table("claim", "kg.claims", ("claim_id",), unique=("claim_id",), sequences=(("kg.claim_seq", "claim_id"),)),
    Table("edge", "kg.edges", ("id",), unique=("id",), sequences=(("kg.edge_seq", "id"),)),
    Table("centrality", "kg.centrality", ("scope", "node_id")),
    Table("tombstone", "kg.tombstones", ("ref", "forgotten_at")),
]


@pack.verb("export_records", act=Act.ASSERTIVE, visibility=Visibility.SUBHANDLER)
def export_records(params: ExportParams, ctx: Context) -> ExportResult:
    """A page of the namespace's kg rows: entities, keys, predicates, fact versions, sources, claims, edges."""
    return export_page(ctx, TABLES, params.cursor, params.limit,
                       namespaces=params.namespaces)


@pack.verb("import_records", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def import_records(params: ImportParams, ctx: Context) -> ImportResult:
    """Check or write exported kg records into the namespace (ids preserved); finish reloads the caches."""
    res = import_page(ctx, TABLES, params)
    if params.finish and not params.check_only:
        ctx.reload_mirrors()
    return res

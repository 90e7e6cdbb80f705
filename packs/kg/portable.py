"""kg.export_records and kg.import_records: the kg's part of `pal export` / `pal import palimpsest`
(runtime/portable.py, ADR 0018): entities and their keys, predicates, every fact version (the bi-temporal
history), sources, claims, edges (removed ones too), centrality and tombstones."""
from __future__ import annotations

from palimpsest_memory.runtime.portable import Table, register_portable

from palimpsest_memory.packs.kg.core import pack

TABLES = [
    Table("entity", "kg.entities", ("id",), unique=("id",), sequences=(("kg.entity_seq", "id"),)),
    Table("entity_key", "kg.entity_keys", ("key",)),
    Table("predicate", "kg.predicates", ("name",)),
    Table("fact", "kg.facts", ("version_id",), unique=("version_id",),
          sequences=(("kg.fact_seq", "fact_id"), ("kg.version_seq", "version_id"))),
    Table("fact_source", "kg.fact_sources", ("fact_id", "source_id", "recorded_at", "confidence"), generated=("seq",)),
    Table("claim", "kg.claims", ("claim_id",), unique=("claim_id",), sequences=(("kg.claim_seq", "claim_id"),)),
    Table("edge", "kg.edges", ("id",), unique=("id",), sequences=(("kg.edge_seq", "id"),)),
    Table("centrality", "kg.centrality", ("scope", "node_id")),
    Table("tombstone", "kg.tombstones", ("ref", "forgotten_at"), generated=("seq",)),
]

register_portable(pack, TABLES)

"""Every pack table can be distributed by namespace (issue 41 item 8, ADR 0016 "Citus layout").

Citus' ``create_distributed_table(t, 'namespace')`` requires every primary key, unique constraint and unique index
of ``t`` to include ``namespace``; Citus is not installable here, so its DDL is not executed by any test and this
catalog check is what guards the precondition: on each backend, every table in every loaded pack's schema has a
primary key, and that key and every other unique key contain a ``namespace`` column.

The runtime's own ``_palimpsest`` schema is not a pack's: its tables stay on the Citus coordinator (ADR 0016).
"""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.both_backends

# Tables that keep no index on DuckDB on purpose: brain.serves dropped its primary-key index in
# brain/003_compact_serves.sql (DuckDB rewrites an index at every checkpoint: 100k recalls grew a file by ~130 MB).
# PostgreSQL (the only backend Citus distributes) has the key; on DuckDB the table has no unique key at all, which
# distribution does not need.
DUCKDB_KEYLESS = {"brain.serves"}


def _duckdb_keys(con: Any, schemas: list[str]) -> tuple[set[str], dict[str, list[tuple[str, list[str]]]]]:
    tables = {f"{s}.{t}" for s, t in con.execute(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN (SELECT unnest(?::VARCHAR[]))",
        [schemas]).fetchall()}
    keys: dict[str, list[tuple[str, list[str]]]] = {}
    for s, t, kind, cols in con.execute(
            "SELECT schema_name, table_name, constraint_type, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE') AND schema_name IN (SELECT unnest(?::VARCHAR[]))",
            [schemas]).fetchall():
        keys.setdefault(f"{s}.{t}", []).append((kind, list(cols)))
    for s, t, name, expressions in con.execute(
            "SELECT schema_name, table_name, index_name, expressions FROM duckdb_indexes() "
            "WHERE is_unique AND schema_name IN (SELECT unnest(?::VARCHAR[]))", [schemas]).fetchall():
        keys.setdefault(f"{s}.{t}", []).append((f"UNIQUE INDEX {name}", [str(e).strip('"') for e in expressions]))
    return tables, keys


def _postgres_keys(con: Any, schemas: list[str]) -> tuple[set[str], dict[str, list[tuple[str, list[str]]]]]:
    tables = {f"{s}.{t}" for s, t in con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
        "AND table_schema = ANY(?)", [schemas]).fetchall()}
    keys: dict[str, list[tuple[str, list[str]]]] = {}
    # every unique index (a primary key's and a unique constraint's included): what Citus checks
    for s, t, name, primary, cols in con.execute(
            "SELECT n.nspname, c.relname, ic.relname, i.indisprimary, "
            "       (SELECT string_agg(a.attname, ',' ORDER BY k.ord) "
            "        FROM unnest(i.indkey) WITH ORDINALITY k(att, ord) "
            "        LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.att) "
            "FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE i.indisunique AND n.nspname = ANY(?)",
            [schemas]).fetchall():
        keys.setdefault(f"{s}.{t}", []).append(("PRIMARY KEY" if primary else f"UNIQUE INDEX {name}",
                                                 (cols or "").split(",")))
    return tables, keys


def test_every_pack_table_is_keyed_by_namespace(make_pal_runtime, pal_backend) -> None:  # type: ignore[no-untyped-def]
    rt = make_pal_runtime()
    schemas = sorted(rt.schema_versions())
    assert {"kg", "memory", "brain"} <= set(schemas), schemas
    tables, keys = (_postgres_keys if pal_backend == "postgres" else _duckdb_keys)(rt.store.con, schemas)
    assert tables, "no pack tables found in the catalog"
    problems = []
    for table in sorted(tables):
        found = keys.get(table, [])
        if not any(kind == "PRIMARY KEY" for kind, _ in found):
            if not (pal_backend == "duckdb" and table in DUCKDB_KEYLESS):
                problems.append(f"{table}: no primary key")
        for kind, cols in found:
            if "namespace" not in cols:
                problems.append(f"{table}: {kind} ({', '.join(cols)}) lacks namespace")
    assert not problems, "\n".join(problems)

"""Storage behind one seam (ADR 0004, ADR 0016): a DuckDB file (embedded, one process) or a PostgreSQL database
(``postgresql://`` URL, many processes). One schema per pack, numbered migrations, guarded handles.

- :mod:`palimpsest_memory.runtime.storage.base`: migrations, the statement guard and the :class:`Database` handle every verb gets;
- :mod:`palimpsest_memory.runtime.storage.duck`: the DuckDB connection, its meta tables and :func:`seal`;
- :mod:`palimpsest_memory.runtime.storage.postgres`: the PostgreSQL connection and the change log's tables;
- :mod:`palimpsest_memory.runtime.storage.pg_dialect`: pack SQL (DuckDB's dialect) as PostgreSQL's.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from palimpsest_memory.runtime.storage import duck, postgres
from palimpsest_memory.runtime.storage.base import (DB_ERRORS, DIALECTS, META_SCHEMA, READ_ONLY_STATEMENTS, BackendError,
                                  Database, TransactionFrame, begin, dialect_of, discover_migrations, migrate,
                                  rollback_quietly, schema_versions, statement_kinds)
from palimpsest_memory.runtime.storage.duck import CATALOG, migrate_meta

__all__ = [
    "CATALOG", "DB_ERRORS", "DIALECTS", "META_SCHEMA", "READ_ONLY_STATEMENTS", "BackendError",
    "Database", "TransactionFrame", "begin", "connect", "describe", "dialect_of", "discover_migrations", "is_shared",
    "migrate", "migrate_meta", "opened", "rollback_quietly", "schema_versions", "seal", "statement_kinds",
]


def connect(target: str | Path, *, checkpoint_threshold: str | None = None,
            env: Mapping[str, str] | None = None) -> Any:
    """Open (creating if needed) the store: a ``postgresql://`` URL, a DuckDB file path, or ``":memory:"``."""
    if postgres.is_url(str(target)):
        return postgres.connect(str(target), env or {})
    return duck.connect(target, checkpoint_threshold=checkpoint_threshold)


def describe(target: str | Path) -> str:
    """The store's name as it may be shown: a URL without credentials, or the path."""
    return postgres.redact(str(target)) if postgres.is_url(str(target)) else str(target)


def is_shared(con: Any) -> bool:
    """Whether other processes may write the same store (its changes then reach the mirrors through the log)."""
    return dialect_of(con) == "postgres"


def seal(con: Any) -> None:
    if dialect_of(con) == "duckdb":
        duck.seal(con)


def opened(con: Any) -> None:
    """The runtime finished opening (migrations, mirror loads)."""
    if dialect_of(con) == "postgres":
        postgres.opened(con)

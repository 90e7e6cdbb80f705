"""Storage behind one seam (ADR 0004, ADR 0016, ADR 0031): a :class:`~palimpsest_memory.runtime.storage.store.Store`
is a DuckDB file (embedded, one process) or a PostgreSQL database (``postgresql://`` URL, many processes). Nothing
outside this package asks which; one schema per pack, numbered migrations, guarded handles.

- :mod:`~palimpsest_memory.runtime.storage.store`: the seam (:class:`Store`) and what both backends share of it;
- :mod:`~palimpsest_memory.runtime.storage.duck_store`: the file, with :mod:`.duck` (connection, meta tables);
- :mod:`~palimpsest_memory.runtime.storage.pg_store`: the database, with :mod:`.postgres` (connection that comes
  back, meta tables), :mod:`.pg_result` (a statement's answer), :mod:`.pg_follow` (listener, heartbeat) and
  :mod:`.pg_dialect` (pack SQL as PostgreSQL's);
- :mod:`~palimpsest_memory.runtime.storage.base`: migrations, the statement guard and the :class:`Database` handle.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from palimpsest_memory.runtime.storage import postgres
from palimpsest_memory.runtime.storage.base import (DB_ERRORS, DIALECTS, META_SCHEMA, READ_ONLY_STATEMENTS,
                                                    BackendError, Database, TransactionFrame, dialect_of,
                                                    discover_migrations, migrate, rollback_quietly, schema_versions,
                                                    statement_kinds)
from palimpsest_memory.runtime.storage.duck import CATALOG, migrate_meta
from palimpsest_memory.runtime.storage.pg_testing import PostgresServer, postgres_available
from palimpsest_memory.runtime.storage.postgres import ConnectionLost
from palimpsest_memory.runtime.storage.store import Store, reachable_from_here

__all__ = [
    "CATALOG", "DB_ERRORS", "DIALECTS", "META_SCHEMA", "READ_ONLY_STATEMENTS", "BackendError", "ConnectionLost",
    "Database", "Store", "TransactionFrame", "describe_store", "dialect_of", "discover_migrations", "is_store_file",
    "live_servers", "PostgresServer", "postgres_available",
    "migrate", "migrate_meta", "open_store", "reachable_from_here", "restore_file", "rollback_quietly",
    "schema_versions", "statement_kinds", "store_file_of",
]


def is_store_file(target: str | Path) -> bool:
    """Whether ``target`` names a store file (or ``:memory:``) rather than a database server's URL."""
    return not postgres.is_url(str(target))


def open_store(target: str | Path, *, checkpoint_threshold: str | None = None,
               env: Mapping[str, str] | None = None) -> Store:
    """Open (creating if needed) the store: a ``postgresql://`` URL, a DuckDB file path, or ``":memory:"``."""
    if postgres.is_url(str(target)):
        from palimpsest_memory.runtime.storage.pg_store import PgStore

        return PgStore(str(target), env or {})
    from palimpsest_memory.runtime.storage.duck_store import DuckStore

    return DuckStore(str(target), checkpoint_threshold=checkpoint_threshold)


def restore_file(source: str | Path, target: str | Path) -> None:
    """Replace a store file with a backup made by ``pal backup`` (refused while a process holds it)."""
    if postgres.is_url(str(target)):
        from palimpsest_memory.runtime.errors import InvalidParams

        raise InvalidParams(f"restore replaces a store file; {postgres.redact(str(target))} is a PostgreSQL "
                            "database: copy the backup into it with `pal copy BACKUP.duckdb URL` (an empty database)")
    from palimpsest_memory.runtime.storage.duck_store import restore_file as restore

    restore(Path(source).expanduser(), Path(target).expanduser())


def describe_store(target: str | Path) -> str:
    """The store's name as it may be shown, without opening it: a URL without credentials, or the full path."""
    if postgres.is_url(str(target)):
        return postgres.redact(str(target))
    from palimpsest_memory.runtime.storage.duck_store import resolve

    return resolve(str(target))


def store_file_of(target: str | Path, path: str | Path) -> str | None:
    """What ``path`` is to the store ``target`` if it is one of its files (see :meth:`Store.owns_file`), found
    without opening the store; always None for a PostgreSQL database."""
    if postgres.is_url(str(target)) or str(target) == ":memory:":
        return None
    from palimpsest_memory.runtime.storage.duck_files import store_file_of as of_file

    return of_file(str(target), path)


def live_servers(target: str | Path, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The running servers that announced themselves for this store and can be reached from here (newest first),
    found without opening it: beside a file, or in a database's ``_palimpsest.servers``."""
    if postgres.is_url(str(target)):
        from palimpsest_memory.runtime.storage import pg_store

        found = pg_store.live_servers(str(target), env or {})
    else:
        from palimpsest_memory.runtime.storage import duck_store

        found = duck_store.live_servers(str(target))
    return [s for s in found if reachable_from_here(s)]

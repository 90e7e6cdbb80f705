"""The embedded backend: one DuckDB file (or ``:memory:``), its connection, its meta tables and migrations."""
from __future__ import annotations

from pathlib import Path

import duckdb

from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.storage.base import META_SCHEMA

CATALOG = "_pal_store"  # not a valid pack name, so it can never collide with a pack's schema


def connect(path: str | Path, *, checkpoint_threshold: str | None = None) -> duckdb.DuckDBPyConnection:
    """Open (creating if needed) the database; ``":memory:"`` for a throwaway store.

    ``checkpoint_threshold`` (config ``runtime.checkpoint_threshold``) is set before the configuration is
    locked: after that, no SQL can change the connection's settings."""
    target = str(path)
    if target != ":memory:":
        p = Path(target).expanduser()
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # e.g. a path under a regular file: /etc/passwd/x.duckdb
            raise StorageError(f"cannot create the folder of database {target}: {exc.strerror or exc}",
                               details={"path": target}) from None
        target = str(p)
    try:
        # The store is attached under a catalog name of ours. DuckDB names a database's catalog after its file
        # (or "memory" for an in-memory one), and a file called memory.duckdb or kg.duckdb would make the
        # pack schemas of the same name ambiguous.
        con = duckdb.connect(":memory:")
        source = ":memory:" if target == ":memory:" else target.replace("'", "''")
        con.execute(f"ATTACH '{source}' AS {CATALOG}; USE {CATALOG}; DETACH memory;")
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" in msg.lower():
            raise StorageError(
                f"database {target} is held by another process ({msg.splitlines()[0]}). "
                "Only one process may write a database: stop it, or send the call to the server that holds it "
                "with --server URL (PALIMPSEST_SERVER).",
                details={"path": target, "reason": "locked"},
            ) from None
        raise StorageError(f"cannot open database {target}: {msg}", details={"path": target}) from None
    except duckdb.Error as exc:
        raise StorageError(f"cannot open database {target}: {exc}", details={"path": target}) from None
    # The store is the only file SQL may touch: no reading or writing host files (read_csv, COPY … TO, glob),
    # no extension downloads (and, once :func:`seal` ran, no SET that would stick on the shared connection).
    # Nothing of ours needs them: snapshots and imports are read and written by Python.
    if checkpoint_threshold is not None:
        try:
            con.execute("SET checkpoint_threshold = ?", [checkpoint_threshold])
        except duckdb.Error as exc:
            con.close()
            raise StorageError(f"runtime.checkpoint_threshold {checkpoint_threshold!r} is not a size: {exc}",
                               details={"key": "runtime.checkpoint_threshold"}) from None
    con.execute("SET enable_external_access = false")  # DuckDB cannot turn it back on while the store is open
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {META_SCHEMA}")
    con.execute(
        f"""CREATE TABLE IF NOT EXISTS {META_SCHEMA}.migrations (
            pack VARCHAR NOT NULL, version INTEGER NOT NULL, name VARCHAR NOT NULL,
            checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
            PRIMARY KEY (pack, version))"""
    )
    try:
        migrate_meta(con)
    except BaseException:
        con.close()  # a store we cannot upgrade must not stay locked by this process
        raise
    return con


def seal(con: duckdb.DuckDBPyConnection) -> None:
    """Once the mirrors are loaded: let go of the table blocks their load read, and lock the configuration.

    Loading the mirrors reads whole tables, and DuckDB keeps every block it read in its buffer pool (about 1 KB a
    note) until memory runs short; the mirrors hold what they need, so the blocks are evicted by lowering the
    memory limit for a moment. Then the configuration is locked: no SQL of a verb can change a setting after this.
    Until then only migrations (the packs' shipped SQL) and read-only mirror loads (the guard refuses SET) ran."""
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    try:
        con.execute("SET memory_limit = '8MB'")
    except duckdb.Error:
        pass  # nothing could be evicted (an in-memory store): only memory, not correctness, is at stake
    finally:
        con.execute("SET memory_limit = ?", [limit])
    con.execute("SET lock_configuration = true")


# The runtime's own tables are not a pack's (no numbered files): each layout change is a step here, found by
# looking at the table as it is, run once in one transaction. Actor '*' is the namespace's own value.
TUNABLES_DDL = """CREATE TABLE {table} (
    namespace VARCHAR NOT NULL, actor VARCHAR NOT NULL, pack VARCHAR NOT NULL, name VARCHAR NOT NULL,
    value DOUBLE NOT NULL, set_by VARCHAR, updated_at TIMESTAMP NOT NULL, PRIMARY KEY (namespace, actor, pack, name))"""


def migrate_meta(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``_palimpsest.tunables``, or upgrade the first layout (keyed by namespace, pack, name) in place:
    its rows become the namespace-level rows (actor ``'*'``) of the layout keyed by actor too."""
    columns = {r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND schema_name = ? "
        "AND table_name = 'tunables'", [CATALOG, META_SCHEMA]).fetchall()}
    if "actor" in columns:
        return
    if not columns:
        con.execute(TUNABLES_DDL.format(table=f"{META_SCHEMA}.tunables"))
        return
    try:
        con.execute("BEGIN TRANSACTION")
        con.execute(TUNABLES_DDL.format(table=f"{META_SCHEMA}.tunables_by_actor"))
        con.execute(f"INSERT INTO {META_SCHEMA}.tunables_by_actor SELECT namespace, '*', pack, name, value, set_by, "
                    f"updated_at FROM {META_SCHEMA}.tunables")
        con.execute(f"DROP TABLE {META_SCHEMA}.tunables")
        con.execute(f"ALTER TABLE {META_SCHEMA}.tunables_by_actor RENAME TO tunables")
        con.execute("COMMIT")
    except duckdb.Error as exc:
        con.execute("ROLLBACK")
        raise StorageError(f"upgrading {META_SCHEMA}.tunables failed: {exc}") from None

"""One DuckDB file for everything: the connection, one schema per pack, numbered migrations, guarded handles."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

import duckdb

from runtime.errors import ReadOnlyViolation, StorageError

MIGRATION_RE = re.compile(r"^(\d{3,})_[a-z0-9_]+\.sql$")
META_SCHEMA = "_palimpsest"
CATALOG = "_pal_store"  # not a valid pack name, so it can never collide with a pack's schema
# Statement kinds an assertive (read-only) verb may run; everything else is refused before DuckDB sees it.
# EXPLAIN is not among them: EXPLAIN ANALYZE executes the statement it explains.
READ_ONLY_STATEMENTS = {"SELECT"}
# Sequences never roll back: a read-only call that advanced one would change the store for good.
SEQUENCE_CALL = re.compile(r"\b(?:nextval|setval)\s*\(", re.IGNORECASE)


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


def discover_migrations(folder: Path | None) -> list[tuple[int, str, str]]:
    """``(version, file name, sql)`` in order; malformed names and gaps are errors, not surprises."""
    if folder is None:
        return []
    if not folder.is_dir():
        raise StorageError(f"migrations folder {folder} does not exist")
    out = []
    for f in sorted(folder.iterdir()):
        if f.suffix != ".sql":
            continue
        m = MIGRATION_RE.match(f.name)
        if not m:
            raise StorageError(f"migration {f} must be named NNN_title.sql")
        out.append((int(m.group(1)), f.name, f.read_text(encoding="utf-8")))
    out.sort()
    for expected, (version, name, _) in enumerate(out, start=1):
        if version != expected:
            raise StorageError(f"migrations in {folder} must be numbered 1, 2, 3… without gaps; found {name}")
    return out


def migrate(con: duckdb.DuckDBPyConnection, pack: str, folder: Path | None) -> int:
    """Apply the pack's pending migrations in its own schema, each in one transaction. Returns the version."""
    known = discover_migrations(folder)
    rows = con.execute(
        f"SELECT version, name, checksum FROM {META_SCHEMA}.migrations WHERE pack = ? ORDER BY version", [pack]
    ).fetchall()
    applied = {v: (n, c) for v, n, c in rows}
    newest_known = known[-1][0] if known else 0
    if applied and max(applied) > newest_known:
        raise StorageError(
            f"the database has pack {pack!r} at schema version {max(applied)}, but this installation knows only "
            f"up to {newest_known}: it was written by a newer palimpsest. Upgrade palimpsest to open it.",
            details={"pack": pack, "db_version": max(applied), "known_version": newest_known},
        )
    con.execute(f'CREATE SCHEMA IF NOT EXISTS "{pack}"')
    for version, name, sql in known:
        checksum = hashlib.sha256(sql.encode()).hexdigest()
        if version in applied:
            if applied[version][1] != checksum:
                raise StorageError(
                    f"migration {pack}/{name} changed after it was applied; ship a new migration instead",
                    details={"pack": pack, "version": version},
                )
            continue
        try:
            con.execute("BEGIN TRANSACTION")
            con.execute(sql)
            con.execute(
                f"INSERT INTO {META_SCHEMA}.migrations (pack, version, name, checksum) VALUES (?, ?, ?, ?)",
                [pack, version, name, checksum],
            )
            con.execute("COMMIT")
        except duckdb.Error as exc:
            con.execute("ROLLBACK")
            raise StorageError(f"migration {pack}/{name} failed: {exc}", details={"pack": pack}) from None
    return newest_known


def rollback_quietly(con: duckdb.DuckDBPyConnection) -> None:
    """Roll the open transaction back; none being open (the failure came before BEGIN took effect) is fine."""
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass


def schema_versions(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    rows = con.execute(f"SELECT pack, max(version) FROM {META_SCHEMA}.migrations GROUP BY pack").fetchall()
    return {p: v for p, v in rows}


_STATEMENT_KINDS: dict[str, tuple[str, ...]] = {}  # SQL text -> statement kinds (the text alone decides them)
_STATEMENT_CACHE_SIZE = 4096


class TransactionFrame(Protocol):
    """What a :class:`Database` needs of the call it serves: whether its transaction has begun."""

    began: bool


class Database:
    """The handle a verb gets: the call's transaction, read-only for assertive verbs.

    Only ``execute``/``executemany``/``fetch*`` are offered, so a handler cannot commit, roll back or close the
    connection behind the runtime's back. In read-only mode each statement is parsed first and anything but
    SELECT/EXPLAIN raises :class:`ReadOnlyViolation` (and the runtime rolls the transaction back regardless).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, *, read_only: bool, verb: str,
                 frame: "TransactionFrame | None" = None) -> None:
        self._con = con
        self.read_only = read_only
        self._verb = verb
        self._frame = frame

    def _begin(self) -> None:
        """Open the call's transaction at its first statement (the runtime commits or rolls back if it began)."""
        if self._frame is not None and not self._frame.began:
            try:
                self._con.execute("BEGIN TRANSACTION")
            except duckdb.Error as exc:
                raise StorageError(f"cannot start a transaction: {exc}", verb=self._verb) from None
            self._frame.began = True

    def _guard(self, sql: str) -> None:
        kinds = _STATEMENT_KINDS.get(sql)
        if kinds is None:  # parsing costs ~0.2 ms; packs reuse a few dozen SQL strings, so parse each once
            try:
                kinds = tuple(s.type.name for s in self._con.extract_statements(sql))
            except Exception as exc:  # noqa: BLE001 - a statement DuckDB's Python API cannot classify
                raise ReadOnlyViolation(f"cannot classify the statement, so it is refused: {type(exc).__name__}: "
                                        f"{exc}", verb=self._verb) from None
            if SEQUENCE_CALL.search(sql):
                kinds += ("SEQUENCE_CALL",)
            if len(_STATEMENT_KINDS) >= _STATEMENT_CACHE_SIZE:
                _STATEMENT_KINDS.clear()
            _STATEMENT_KINDS[sql] = kinds
        if "TRANSACTION" in kinds:
            raise ReadOnlyViolation("verbs may not control transactions; the runtime owns them", verb=self._verb)
        if self.read_only and any(k not in READ_ONLY_STATEMENTS for k in kinds):
            raise ReadOnlyViolation(
                f"assertive verb tried to run {', '.join(kinds)}; assertive verbs cannot change the store",
                verb=self._verb, details={"statements": kinds},
            )

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> "Database":
        self._guard(sql)
        self._begin()
        try:
            self._con.execute(sql, params) if params is not None else self._con.execute(sql)
        except duckdb.Error as exc:
            raise StorageError(f"query failed: {exc}", verb=self._verb) from exc
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> "Database":
        self._guard(sql)
        self._begin()
        try:
            self._con.executemany(sql, list(rows))
        except duckdb.Error as exc:
            raise StorageError(f"query failed: {exc}", verb=self._verb) from exc
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._con.fetchall()

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._con.fetchone()

    def fetchnumpy(self) -> dict[str, Any]:
        return self._con.fetchnumpy()

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one statement and return all rows."""
        return self.execute(sql, params).fetchall()

    def query_dicts(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        self.execute(sql, params)
        cols = [d[0] for d in self._con.description or ()]
        return [dict(zip(cols, row)) for row in self._con.fetchall()]

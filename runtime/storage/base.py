"""What every backend shares: migration discovery, the statement guard and the :class:`Database` handle."""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any, Iterable, Protocol, Sequence

import duckdb

from palimpsest_memory.runtime.errors import Forbidden, ReadOnlyViolation, StorageError, StoreUnavailable
from palimpsest_memory.runtime.pack import MIGRATION_FILE

# NNN_title.sql is portable SQL; NNN_title.<dialect>.sql beside it replaces it on that backend (ADR 0016).

DIALECTS = ("duckdb", "postgres")
META_SCHEMA = "_palimpsest"
# Statement kinds an assertive (read-only) verb may run; everything else is refused before the database sees it.
# EXPLAIN is not among them: EXPLAIN ANALYZE executes the statement it explains.
READ_ONLY_STATEMENTS = {"SELECT"}
# Sequences never roll back: a read-only call that advanced one would change the store for good. The parser's own
# tree (json_serialize_sql) finds the calls whatever the spelling: "nextval"(, nextval/**/(, system.main.NEXTVAL(
# (issue 46: a regex on the text missed the first two, and took 'nextval(' in a string for a call).
WRITING_FUNCTIONS = frozenset({"nextval", "setval"})
# Table functions a read may call: they make values or read the catalog. Every other one is refused in a read-only
# call, including those DuckDB adds later (fail closed): checkpoint() and force_checkpoint() write the file,
# query()/query_table()/json_execute_serialized_sql() run SQL the guard never saw, the logging and profiling
# switches change the shared connection.
READING_TABLE_FUNCTIONS = frozenset({"unnest", "range", "generate_series", "json_each", "json_tree", "repeat",
                                     "repeat_row", "jsonb_array_elements_text"})
READING_TABLE_PREFIXES = ("duckdb_", "pragma_")


class BackendError(Exception):
    """A failure reported by a non-DuckDB backend (its driver's message, credentials removed)."""


def store_error(message: str, exc: BaseException, verb: str | None) -> StorageError | Forbidden:
    """The typed error of a failed statement: retryable StoreUnavailable when the connection was lost, Forbidden
    when the database role may not do it (a read-only role writing; SQLSTATE 42501)."""
    if getattr(exc, "sqlstate", None) == "42501":
        return Forbidden(f"the database role may not do this (a read-only role?): {exc}", verb=verb,
                         details={"reason": "insufficient_privilege"})
    if getattr(exc, "lost_connection", False):
        unknown = bool(getattr(exc, "outcome_unknown", False))
        return StoreUnavailable(message, verb=verb, details={
            "retryable": True, "retry_after_seconds": round(float(getattr(exc, "retry_after", 0.0)), 2),
            "outcome": "unknown" if unknown else "rolled_back"})
    return StorageError(message, verb=verb)


DB_ERRORS: tuple[type[BaseException], ...] = (duckdb.Error, BackendError)


def dialect_of(con: Any) -> str:
    return getattr(con, "dialect", "duckdb")


def discover_migrations(folder: Path | None, dialect: str = "duckdb") -> list[tuple[int, str, str]]:
    """``(version, file name, sql)`` in order for ``dialect``; malformed names and gaps are errors, not surprises.

    A version's portable file ``NNN_title.sql`` is used unless ``NNN_title.<dialect>.sql`` lies beside it."""
    if folder is None:
        return []
    if not folder.is_dir():
        raise StorageError(f"migrations folder {folder} does not exist")
    portable: dict[int, Path] = {}
    specific: dict[int, Path] = {}
    for f in sorted(folder.iterdir()):
        if f.suffix != ".sql":
            continue
        m = MIGRATION_FILE.match(f.name)
        if not m:
            raise StorageError(f"migration {f} must be named NNN_title.sql (or NNN_title.postgres.sql)")
        version = int(m.group(1))
        if m.group(2) is None:
            if version in portable:
                raise StorageError(f"migrations in {folder}: two files for version {version}")
            portable[version] = f
        elif m.group(2) == dialect:
            specific[version] = f
    stray = sorted(set(specific) - set(portable))
    if stray:
        raise StorageError(f"migrations in {folder}: {specific[stray[0]].name} has no portable NNN_title.sql beside it")
    out = [(v, (specific.get(v) or f).name, (specific.get(v) or f).read_text(encoding="utf-8"))
           for v, f in sorted(portable.items())]
    for expected, (version, name, _) in enumerate(out, start=1):
        if version != expected:
            raise StorageError(f"migrations in {folder} must be numbered 1, 2, 3… without gaps; found {name}")
    return out


def migrate(con: Any, pack: str, folder: Path | None) -> int:
    """Apply the pack's pending migrations in its own schema, each in one transaction. Returns the version."""
    known = discover_migrations(folder, dialect_of(con))
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
    pending = [v for v, _, _ in known if v not in applied]
    if pending:  # only then: a role that may not create (ADR 0031) opens a store whose owner migrated it
        try:
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{pack}"')
        except DB_ERRORS as exc:
            raise StorageError(f"pack {pack!r} needs its schema migrated to version {newest_known}, and this "
                               f"connection may not do it ({exc}): open the store once as its owner",
                               details={"pack": pack, "pending": pending}) from None
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
        except DB_ERRORS as exc:
            rollback_quietly(con)
            raise StorageError(f"migration {pack}/{name} failed: {exc}", details={"pack": pack}) from None
    return newest_known


def rollback_quietly(con: Any) -> None:
    """Roll the open transaction back; none being open (the failure came before BEGIN took effect) is fine."""
    try:
        con.execute("ROLLBACK")
    except DB_ERRORS:
        pass


def schema_versions(con: Any) -> dict[str, int]:
    rows = con.execute(f"SELECT pack, max(version) FROM {META_SCHEMA}.migrations GROUP BY pack").fetchall()
    return {p: v for p, v in rows}


_STATEMENT_KINDS: dict[str, tuple[str, ...]] = {}  # SQL text -> statement kinds (the text alone decides them)
_STATEMENT_CACHE_SIZE = 4096
_PARSER: duckdb.DuckDBPyConnection | None = None  # classifies pack SQL (DuckDB's dialect) for other backends
_PARSER_LOCK = threading.Lock()


def statement_kinds(sql: str, verb: str) -> tuple[str, ...]:
    """The kinds of the statements in ``sql`` (SELECT, INSERT, …), parsed once per text by DuckDB's parser:
    pack SQL is written in DuckDB's dialect whichever backend runs it (other backends translate it)."""
    global _PARSER
    kinds = _STATEMENT_KINDS.get(sql)
    if kinds is None:  # parsing costs ~0.2 ms; packs reuse a few dozen SQL strings, so parse each once
        with _PARSER_LOCK:
            if _PARSER is None:
                _PARSER = duckdb.connect(":memory:")
            try:
                kinds = tuple(s.type.name for s in _PARSER.extract_statements(sql))
            except Exception as exc:  # noqa: BLE001 - a statement DuckDB's Python API cannot classify
                raise ReadOnlyViolation(f"cannot classify the statement, so it is refused: {type(exc).__name__}: "
                                        f"{exc}", verb=verb) from None
        if "SELECT" in kinds:
            kinds += _function_kinds(sql)
        if len(_STATEMENT_KINDS) >= _STATEMENT_CACHE_SIZE:
            _STATEMENT_KINDS.clear()
        _STATEMENT_KINDS[sql] = kinds
    return kinds


def _function_kinds(sql: str) -> tuple[str, ...]:
    """What the functions a SELECT calls may do, from DuckDB's parse tree (quoted names, comments and schemas
    already undone by the parser): ``SEQUENCE_CALL`` for nextval/setval, ``FUNCTION <name>`` for a table function
    that is not a plain read, ``UNCLASSIFIED`` when the tree cannot be had (refused in a read-only call). Called
    under ``_PARSER_LOCK``."""
    assert _PARSER is not None
    try:
        tree = json.loads(_PARSER.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    except Exception:  # noqa: BLE001 - whatever DuckDB cannot serialise is not known to be a plain read
        return ("UNCLASSIFIED",)
    if tree.get("error"):
        return ("UNCLASSIFIED",)
    out: list[str] = []

    def walk(node: Any, table: bool) -> None:
        if isinstance(node, dict):
            name = node.get("function_name")
            if isinstance(name, str):
                name = name.lower()
                if name in WRITING_FUNCTIONS:
                    out.append("SEQUENCE_CALL")
                elif table and name not in READING_TABLE_FUNCTIONS and not name.startswith(READING_TABLE_PREFIXES):
                    out.append(f"FUNCTION {name}")
            for key, value in node.items():
                walk(value, key == "function" and node.get("type") == "TABLE_FUNCTION")
        elif isinstance(node, list):
            for value in node:
                walk(value, False)

    walk(tree, False)
    return tuple(dict.fromkeys(out))


class TransactionFrame(Protocol):
    """What a :class:`Database` needs of the call it serves: whether its transaction has begun."""

    began: bool


class Database:
    """The handle a verb gets: the call's transaction, read-only for assertive verbs.

    Only ``execute``/``executemany``/``fetch*`` are offered, so a handler cannot commit, roll back or close the
    connection behind the runtime's back. In read-only mode each statement is parsed first and anything but
    SELECT raises :class:`ReadOnlyViolation` (and the runtime rolls the transaction back regardless; on PostgreSQL
    the transaction itself is READ ONLY). Pack SQL is DuckDB's dialect with ``?`` placeholders on every backend;
    ``dialect`` says which backend runs it, for the rare statement that must differ.
    """

    def __init__(self, store: Any, *, read_only: bool, verb: str, frame: "TransactionFrame | None" = None) -> None:
        self._store = store
        self._con = store.con
        self.read_only = read_only
        self._verb = verb
        self._frame = frame
        self.dialect = store.backend

    def _begin(self) -> None:
        """Open the call's transaction at its first statement (the runtime commits or rolls back if it began)."""
        if self._frame is not None and not self._frame.began:
            try:
                self._store.begin(read_only=self.read_only)
            except DB_ERRORS as exc:
                raise store_error(f"cannot start a transaction: {exc}", exc, self._verb) from None
            self._frame.began = True

    def columns(self, table: str) -> list[tuple[str, str]]:
        """``(column, type)`` of ``schema.table`` in order, the type as DuckDB spells it on either backend."""
        schema, name = table.split(".")
        rows = self.query("SELECT column_name, data_type, udt_name FROM information_schema.columns "
                          "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", [schema, name])
        if self.dialect != "postgres":
            return [(c, t.upper()) for c, t, _ in rows]
        from palimpsest_memory.runtime.storage.pg_dialect import duckdb_type

        return [(c, duckdb_type(table, c, t, udt)) for c, t, udt in rows]

    def files_beside(self, suffix: str) -> Path | None:
        """A folder beside the store's file for derived data (``<file><suffix>``), None when the store is not a
        file (in memory, or a database server): the data then stays in the rows."""
        return self._store.files_beside(suffix)

    def _guard(self, sql: str) -> None:
        kinds = statement_kinds(sql, self._verb)
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
        except DB_ERRORS as exc:
            raise store_error(f"query failed: {exc}", exc, self._verb) from exc
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> "Database":
        self._guard(sql)
        self._begin()
        try:
            self._con.executemany(sql, list(rows))
        except DB_ERRORS as exc:
            raise store_error(f"query failed: {exc}", exc, self._verb) from exc
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

"""The packs' half of export and import (issue 17, item 4; ADR 0018): the rows a pack pages out and writes back.

:class:`Table` describes one of a pack's tables, :func:`export_page` pages its rows out as records and
:func:`import_page` writes records back (portable SQL through the call's ``ctx.db``, the same on DuckDB and
PostgreSQL). :func:`register_portable` registers a pack's two sub-handler verbs built on them,
``<pack>.export_records`` and ``<pack>.import_records``, for a pack that declares ``Pack(portable=True)``: one
definition for every pack, with the pack's own step before an export or after an import as a hook. The runtime's
half, the file itself, is :mod:`palimpsest_memory.runtime.exportfile`; the runtime never imports a pack.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Optional

from pydantic import BaseModel, Field

from palimpsest_memory.runtime.errors import Conflict, InvalidParams, PackLoadError, StorageError
from palimpsest_memory.runtime.pack import Act, Visibility
from palimpsest_memory.runtime.params import NamespacedParams

if TYPE_CHECKING:
    from palimpsest_memory.runtime.dispatch import Context
    from palimpsest_memory.runtime.pack import Pack

PAGE = 2000  # rows per export_records call / records per import_records call


@dataclass(frozen=True)
class Table:
    """One exported table of a pack."""

    type: str                      # the record type in the file
    table: str                     # schema.table
    key: tuple[str, ...]           # a unique key: the export's keyset order
    where: str = "namespace = ?"   # the namespace's rows (one ? for the namespace)
    namespace_column: Optional[str] = "namespace"  # rewritten to the target namespace on import
    unique: tuple[str, ...] = ()   # store-wide ids that must be free in the target
    sequences: tuple[tuple[str, str], ...] = ()  # (sequence, column): advanced past the imported ids
    generated: tuple[str, ...] = ()  # surrogate key columns the target's defaults number: not exported nor imported


# -- the verbs' models (shared by every portable pack) ----------------------------------------------------------
class Record(BaseModel):
    type: str = Field(min_length=1, max_length=64, description="The record type (a table of the pack).")
    data: dict[str, Any] = Field(description="The row's columns, without the namespace.")


class ExportParams(NamespacedParams):
    cursor: Optional[str] = Field(None, max_length=4096, description="next_cursor of the previous page.")
    limit: int = Field(PAGE, ge=1, le=10_000, description="Most records a page holds.")
    namespaces: bool = Field(False, description="Instead of a page: list every namespace that holds rows of the "
                                                "pack's tables (``pal copy`` copies them all).")


class ExportResult(BaseModel):
    records: list[Record]
    next_cursor: Optional[str] = None
    namespaces: Optional[list[str]] = None


class ImportParams(NamespacedParams):
    records: list[Record] = Field(default_factory=list, max_length=10_000, description="Records of an export.")
    check_only: bool = Field(False, description="Validate against the target and write nothing.")
    first: bool = Field(False, description="The first call of an import: the namespace must be empty.")
    finish: bool = Field(False, description="The last call: advance sequences and reload the pack's mirrors.")


class ImportResult(BaseModel):
    imported: dict[str, int]
    keys: dict[str, list[str]] = Field(
        default_factory=dict, description="The first call only: each record type's key (its columns), which no two "
                                          "records of a file may share, so a file is checked whole before the "
                                          "first write (issue 46, F5).")


# -- for packs ----------------------------------------------------------------------------------------------------
def _columns(ctx: "Context", table: str) -> list[tuple[str, str]]:
    """The table's ``(column, type)`` in order; the type as DuckDB spells it on either backend."""
    return ctx.db.columns(table)


def _out(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, list) and kind.endswith("[]"):  # e.g. TIMESTAMP[]: each element as its type's text
        return [_out(v, kind[:-2]) for v in value]
    return value


def _in(value: Any, kind: str, where: str) -> Any:
    if value is None:
        return None
    if kind.endswith("[]") and isinstance(value, list):  # checked here, sent as text (PostgreSQL binds nested
        return [_out(_in(v, kind[:-2], where), kind[:-2]) for v in value]  # arrays as JSON rows)
    try:
        if kind.startswith("TIMESTAMP"):
            return datetime.fromisoformat(value)
        if kind == "BLOB":
            return base64.b64decode(value, validate=True)
        if kind == "JSON" and not isinstance(value, str):
            return json.dumps(value)
    except (TypeError, ValueError, binascii.Error) as exc:
        raise InvalidParams(f"{where}: not a {kind}: {exc}") from None
    return value


def _cursor(index: int, key: Optional[list[Any]]) -> str:
    return base64.urlsafe_b64encode(json.dumps([index, key]).encode()).decode()


def namespaces_of(ctx: "Context", tables: list[Table]) -> list[str]:
    """Every namespace that holds rows of the tables (the whole store's, not only the call's)."""
    found: set[str] = set()
    for t in tables:
        if t.namespace_column:
            found.update(r[0] for r in ctx.db.query(f"SELECT DISTINCT {t.namespace_column} FROM {t.table}"))
    return sorted(found)


def export_page(ctx: "Context", tables: list[Table], cursor: Optional[str], limit: int, *,
                namespaces: bool = False) -> ExportResult:
    """The next ``limit`` rows of the pack's tables (in order, each by its key) as records; with ``namespaces``,
    no records but the list of namespaces that hold any (:func:`namespaces_of`)."""
    if namespaces:
        return ExportResult(records=[], namespaces=namespaces_of(ctx, tables))
    index, after = 0, None
    if cursor is not None:
        try:
            index, after = json.loads(base64.urlsafe_b64decode(cursor))
            if not isinstance(index, int) or not 0 <= index < len(tables) or after is not None and (
                    not isinstance(after, list) or len(after) != len(tables[index].key)
                    or not all(isinstance(v, (str, float, type(None))) or isinstance(v, int) and
                               -(2**63) <= v < 2**63 for v in after)):
                raise ValueError("not a cursor of these tables")  # forged: refused here, not by the database
        except (ValueError, TypeError, binascii.Error):
            raise InvalidParams("cursor is not a next_cursor of this export",
                                details={"errors": [{"loc": ["cursor"], "msg": "invalid cursor"}]}) from None
    records: list[Record] = []
    while index < len(tables) and len(records) < limit:
        t = tables[index]
        cols = _columns(ctx, t.table)
        names = [c for c, _ in cols]
        where, args = t.where, [ctx.namespace]
        if after is not None:
            where += f" AND ({', '.join(t.key)}) > ({', '.join('?' * len(t.key))})"
            args += list(after)
        rows = ctx.db.query(f"SELECT {', '.join(names)} FROM {t.table} WHERE {where} ORDER BY {', '.join(t.key)} "
                            f"LIMIT {limit - len(records)}", args)
        for row in rows:
            data = {c: _out(v, k) for (c, k), v in zip(cols, row)}
            if t.namespace_column:
                data.pop(t.namespace_column)
            for c in t.generated:
                data.pop(c)
            records.append(Record(type=t.type, data=data))
        if len(records) < limit:  # this table is done
            index, after = index + 1, None
        else:
            last = rows[-1]
            after = [_out(last[names.index(k)], "") for k in t.key]
    return ExportResult(records=records, next_cursor=_cursor(index, after) if index < len(tables) else None)


def import_page(ctx: "Context", tables: list[Table], p: ImportParams) -> ImportResult:
    """Check (and unless ``check_only`` write) records of the pack's tables into ``ctx.namespace``."""
    by_type = {t.type: t for t in tables}
    if p.first:
        for t in tables:
            if t.namespace_column and ctx.db.query(f"SELECT count(*) FROM {t.table} WHERE {t.where}",
                                                   [ctx.namespace])[0][0]:
                raise Conflict(f"namespace {ctx.namespace!r} already holds {t.table} rows: import into an empty "
                               "namespace", details={"table": t.table})
    groups: dict[str, list[dict[str, Any]]] = {}
    for i, r in enumerate(p.records):
        if r.type not in by_type:
            raise InvalidParams(f"record {i}: unknown type {r.type!r} (known: {sorted(by_type)})",
                                details={"errors": [{"loc": ["records", i, "type"], "msg": "unknown type"}]})
        groups.setdefault(r.type, []).append(r.data)
    counts: dict[str, int] = {}
    for type_, rows in groups.items():
        t = by_type[type_]
        cols = [(c, k) for c, k in _columns(ctx, t.table) if c != t.namespace_column and c not in t.generated]
        names = {c for c, _ in cols}
        for j, row in enumerate(rows):
            extra = set(row) - names
            if extra:
                raise InvalidParams(f"{type_} record {j}: unknown columns {sorted(extra)}")
        values = [[_in(row.get(c), k, f"{type_}.{c}") for row in rows] for c, k in cols]
        for col in t.unique:
            ids = [row.get(col) for row in rows]
            bad = next((j for j, v in enumerate(ids) if not isinstance(v, int) or isinstance(v, bool)), None)
            if bad is not None:
                raise InvalidParams(f"{type_} record {bad}: {col} must be an integer id, got {ids[bad]!r}")
            taken = ctx.db.query(f"SELECT {col} FROM {t.table} WHERE {col} IN (SELECT unnest(?::BIGINT[])) LIMIT 1",
                                 [ids])
            if taken:
                raise Conflict(f"{t.table}.{col} {taken[0][0]} is already used in this store: import into a store "
                               "where the exported ids are free (ids are preserved)",
                               details={"table": t.table, "id": taken[0][0]})
        counts[type_] = len(rows)
        insert = [c for c, _ in cols] + ([t.namespace_column] if t.namespace_column else [])
        sel = [f"unnest(?::{k}[])" for _, k in cols]
        try:  # the check pass inserts too (types, NOT NULL, CHECK constraints) and deletes again: net nothing
            ctx.db.execute(f"INSERT INTO {t.table} ({', '.join(insert)}) SELECT *{', ?' if t.namespace_column else ''}"
                           f" FROM (SELECT {', '.join(sel)})",
                           [*([ctx.namespace] if t.namespace_column else []), *values])
            if p.check_only:
                if t.namespace_column:
                    ctx.db.execute(f"DELETE FROM {t.table} WHERE {t.namespace_column} = ?", [ctx.namespace])
                else:
                    col = t.unique[0]
                    ctx.db.execute(f"DELETE FROM {t.table} WHERE {col} IN (SELECT unnest(?::BIGINT[]))",
                                   [[row.get(col) for row in rows]])
        except StorageError as exc:
            raise InvalidParams(f"{type_} records do not fit {t.table}: {str(exc.message).splitlines()[0]}",
                                details={"type": type_}) from None
    if p.finish and not p.check_only:
        for t in tables:
            for seq, col in t.sequences:
                advance_sequence(ctx, seq, f"SELECT max({col}) FROM {t.table}")
    return ImportResult(imported=counts, keys={t.type: list(t.key) for t in tables} if p.first else {})


def advance_sequence(ctx: "Context", sequence: str, max_sql: str) -> None:
    """Move ``sequence`` past the largest id ``max_sql`` finds (imported ids must never be handed out again)."""
    (top,) = ctx.db.query(max_sql)[0]
    if top is None:
        return
    (nxt,) = ctx.db.query(f"SELECT nextval('{sequence}')")[0]
    if nxt < top:
        ctx.db.query(f"SELECT max(nextval('{sequence}')) FROM range(?)", [int(top - nxt)])


def register_portable(pack: "Pack", tables: list[Table], *, export_act: Act = Act.ASSERTIVE,
                      before_export: Optional[Callable[[Any], None]] = None,
                      after_import: Optional[Callable[[Any], None]] = None) -> None:
    """Register ``<pack>.export_records`` and ``<pack>.import_records`` over ``tables``.

    ``before_export(ctx)`` runs before the first page of a namespace's export (the brain writes the serves it
    holds in memory first, so its export is commissive: ``export_act``). ``after_import(ctx)`` runs once the
    import's last call has advanced the sequences, before the pack's mirrors reload from the imported rows.
    """
    if not pack.portable:
        raise PackLoadError(f"pack {pack.name!r} registers export/import verbs but does not declare portable=True")
    kinds = ", ".join(t.type for t in tables)

    def export_records(params: ExportParams, ctx: Any) -> ExportResult:
        if before_export is not None and params.cursor is None and not params.namespaces:
            before_export(ctx)
        return export_page(ctx, tables, params.cursor, params.limit, namespaces=params.namespaces)

    def import_records(params: ImportParams, ctx: Any) -> ImportResult:
        res = import_page(ctx, tables, params)
        if params.finish and not params.check_only:
            if after_import is not None:
                after_import(ctx)
            ctx.reload_mirrors()
        return res

    export_records.__doc__ = f"A page of the namespace's {pack.name} records ({kinds}), or the namespaces holding any."
    import_records.__doc__ = (f"Check or write exported {pack.name} records into an empty namespace, ids preserved; "
                              "the last call advances the sequences and reloads the pack's mirrors.")
    pack.verb("export_records", act=export_act, visibility=Visibility.SUBHANDLER)(export_records)
    pack.verb("import_records", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER, bulk=True)(import_records)

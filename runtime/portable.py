"""Export and import of a namespace as versioned JSONL (issue 17, item 4; ADR 0018).

Two halves, and the runtime never imports a pack:
- **for packs**: :class:`Table` describes one of a pack's tables, :func:`export_page` pages its rows out as
  records and :func:`import_page` writes records back (portable SQL through the call's ``ctx.db``: the same code
  will serve the PostgreSQL backend). A pack that declares ``Pack(portable=True)`` registers two sub-handler
  verbs built on them, ``<pack>.export_records`` and ``<pack>.import_records``.
- **for the runtime**: :func:`export_namespace` writes the file by paging every portable pack's
  ``export_records`` (packs in dependency order), :func:`import_file` checks the whole file against the target
  (a dry pass through every ``import_records``), then writes it.

The file (format ``palimpsest-export``, version 1): a header line ``{"format", "version", "namespace",
"exported_at", "packs": {name: {"version", "schema"}}}``, then one line per row ``{"pack", "type", "data"}``
(``data``: the row's columns; timestamps ISO 8601, blobs base64, JSON columns as JSON text), then a trailer
``{"end": true, "records": N}`` so a truncated file is refused. Ids are preserved: the target namespace must be
empty and the ids free in the target store (a fresh store, or another store's unused ids); the namespace may
be renamed.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator, Optional

from pydantic import BaseModel, Field

from palimpsest_memory.runtime.errors import Conflict, InvalidParams, PackLoadError, StorageError
from palimpsest_memory.runtime.params import NamespacedParams

if TYPE_CHECKING:
    from palimpsest_memory.runtime.dispatch import Context
    from palimpsest_memory.runtime.engine import Runtime

FORMAT = "palimpsest-export"
VERSION = 1
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


# -- for packs ----------------------------------------------------------------------------------------------------
# PostgreSQL's information_schema names (udt_name for arrays) → the DuckDB type words the SQL below is written in
_PG_TYPES = {"character varying": "VARCHAR", "text": "VARCHAR", "bytea": "BLOB", "double precision": "DOUBLE",
             "real": "FLOAT", "timestamp without time zone": "TIMESTAMP", "timestamp with time zone": "TIMESTAMPTZ",
             "jsonb": "JSON", "json": "JSON"}
_PG_ARRAYS = {"_varchar": "VARCHAR[]", "_text": "VARCHAR[]", "_int8": "BIGINT[]", "_int4": "INTEGER[]",
              "_int2": "SMALLINT[]", "_float8": "DOUBLE[]", "_float4": "FLOAT[]", "_bool": "BOOLEAN[]"}


def _columns(ctx: "Context", table: str) -> list[tuple[str, str]]:
    """The table's ``(column, type)`` in order; the type as DuckDB spells it on either backend."""
    schema, name = table.split(".")
    rows = ctx.db.query("SELECT column_name, data_type, udt_name FROM information_schema.columns "
                        "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position", [schema, name])
    if ctx.db.dialect != "postgres":
        return [(c, t.upper()) for c, t, _ in rows]
    out = []
    for c, t, udt in rows:
        kind = _PG_ARRAYS.get(udt) if t == "ARRAY" else _PG_TYPES.get(t, t.upper())
        if kind is None:
            raise StorageError(f"{table}.{c}: array type {udt} is not carried by the export format")
        out.append((c, kind))
    return out


def _out(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    return value


def _in(value: Any, kind: str, where: str) -> Any:
    if value is None:
        return None
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
            index = int(index)
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
        cols = [(c, k) for c, k in _columns(ctx, t.table) if c != t.namespace_column]
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
    return ImportResult(imported=counts)


def advance_sequence(ctx: "Context", sequence: str, max_sql: str) -> None:
    """Move ``sequence`` past the largest id ``max_sql`` finds (imported ids must never be handed out again)."""
    (top,) = ctx.db.query(max_sql)[0]
    if top is None:
        return
    (nxt,) = ctx.db.query(f"SELECT nextval('{sequence}')")[0]
    if nxt < top:
        ctx.db.query(f"SELECT max(nextval('{sequence}')) FROM range(?)", [int(top - nxt)])


# -- for the runtime ----------------------------------------------------------------------------------------------
def portable_packs(rt: "Runtime") -> list[str]:
    """The packs that declare ``portable=True``, in dependency order (a pack after those it requires)."""
    packs = rt.catalog.packs
    out: list[str] = []

    def visit(name: str) -> None:
        if name in out or name not in packs:
            return
        for req in packs[name].requires:
            visit(req)
        if getattr(packs[name], "portable", False):
            for verb in ("export_records", "import_records"):
                if f"{name}.{verb}" not in {v.full_name for v in rt.verbs(include_subhandlers=True)}:
                    raise PackLoadError(f"pack {name!r} is portable but has no {name}.{verb} verb")
            out.append(name)

    for name in sorted(packs):
        visit(name)
    return out


def export_namespace(rt: "Runtime", out: IO[str], namespace: Optional[str] = None,
                     exported_at: Optional[datetime] = None) -> int:
    """Write the namespace as JSONL to ``out``; returns the number of records."""
    ns = namespace or rt.default_namespace
    packs = portable_packs(rt)
    versions = rt.schema_versions()
    header = {"format": FORMAT, "version": VERSION, "namespace": ns,
              "exported_at": (exported_at or rt.clock()).isoformat(),
              "packs": {p: {"version": rt.catalog.packs[p].version, "schema": versions.get(p, 0)} for p in packs}}
    out.write(json.dumps(header) + "\n")
    n = 0
    for pack in packs:
        cursor: Optional[str] = None
        while True:
            page = rt.call(f"{pack}.export_records", {"cursor": cursor, "limit": PAGE}, namespace=ns, internal=True)
            for r in page.records:
                out.write(json.dumps({"pack": pack, "type": r.type, "data": r.data}, ensure_ascii=False) + "\n")
            n += len(page.records)
            cursor = page.next_cursor
            if cursor is None:
                break
    out.write(json.dumps({"end": True, "records": n}) + "\n")
    return n


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidParams(f"{path}:{no}: not JSON ({exc.msg})", details={"line": no}) from None
            if not isinstance(obj, dict):
                raise InvalidParams(f"{path}:{no}: a line must be a JSON object", details={"line": no})
            yield no, obj


def read_header(path: Path) -> dict[str, Any]:
    for no, obj in _lines(path):
        if obj.get("format") != FORMAT:
            raise InvalidParams(f"{path}:{no}: not a palimpsest export (no format {FORMAT!r} header)",
                                details={"line": no})
        if obj.get("version") != VERSION:
            raise InvalidParams(f"{path}:{no}: export format version {obj.get('version')!r}; this palimpsest "
                                f"reads version {VERSION}", details={"line": no})
        return obj
    raise InvalidParams(f"{path}: empty file")


def _batches(path: Path, packs: list[str]) -> Iterator[tuple[str, list[dict[str, Any]], list[int]]]:
    """(pack, records, their line numbers) in file order, at most PAGE per batch; the trailer must close the file."""
    seen, ended, pack, batch, lines = 0, False, None, [], []
    for no, obj in _lines(path):
        if "format" in obj:
            continue
        if ended:
            raise InvalidParams(f"{path}:{no}: a line after the end marker", details={"line": no})
        if obj.get("end") is True:
            if obj.get("records") != seen:
                raise InvalidParams(f"{path}:{no}: the end marker counts {obj.get('records')} records, the file "
                                    f"holds {seen}", details={"line": no})
            ended = True
            continue
        if obj.get("pack") not in packs or not isinstance(obj.get("type"), str) or \
                not isinstance(obj.get("data"), dict):
            raise InvalidParams(f"{path}:{no}: a record needs pack (one of {packs}), type and data",
                                details={"line": no})
        if (obj["pack"] != pack or len(batch) >= PAGE) and batch:
            yield pack, batch, lines  # type: ignore[misc]
            batch, lines = [], []
        pack = obj["pack"]
        batch.append({"type": obj["type"], "data": obj["data"]})
        lines.append(no)
        seen += 1
    if not ended:
        raise InvalidParams(f"{path}: no end marker: the file is truncated")
    if batch:
        yield pack, batch, lines  # type: ignore[misc]


def _line_of(message: str, batch: list[dict[str, Any]], lines: list[int]) -> str:
    """The file line a batch error is about ("<type> record j": the j-th record of that type), else the range."""
    import re

    m = re.search(r"(?:^|: )(?:(\w+) )?record (\d+)", message)
    if m:
        kind, j = m.group(1), int(m.group(2))
        picked = [ln for r, ln in zip(batch, lines) if kind is None or r["type"] == kind]
        if j < len(picked):
            return str(picked[j])
    return f"{lines[0]}-{lines[-1]}"


def import_file(rt: "Runtime", path: str | Path, namespace: Optional[str] = None) -> dict[str, dict[str, int]]:
    """Import an export into ``namespace`` (default: the one it was exported from). The whole file is checked
    against the target first (every batch through ``import_records`` with ``check_only``); only then written."""
    path = Path(path)
    header = read_header(path)
    ns = namespace or header.get("namespace") or rt.default_namespace
    packs = portable_packs(rt)
    missing = [p for p in header.get("packs", {}) if p not in packs]
    if missing:
        raise InvalidParams(f"the export holds data of packs that are not loaded here: {missing}")
    counts: dict[str, dict[str, int]] = {}
    for check in (True, False):
        first = set(packs)
        for pack, batch, lines in _batches(path, packs):
            try:
                res = rt.call(f"{pack}.import_records", {"records": batch, "check_only": check,
                                                         "first": pack in first}, namespace=ns, internal=True)
            except InvalidParams as exc:  # name the line: "record 3" / "<type> record 3" of this batch
                where = _line_of(exc.message, batch, lines)
                raise InvalidParams(f"{path}:{where}: {exc.message}", details={"line": where}) from None
            first.discard(pack)
            if not check:
                for k, v in res.imported.items():
                    counts.setdefault(pack, {})[k] = counts.get(pack, {}).get(k, 0) + v
        for pack in first:  # packs without records: still checked for an empty namespace
            rt.call(f"{pack}.import_records", {"records": [], "check_only": check, "first": True}, namespace=ns,
                    internal=True)
    for pack in packs:
        rt.call(f"{pack}.import_records", {"finish": True}, namespace=ns, internal=True)
    return counts

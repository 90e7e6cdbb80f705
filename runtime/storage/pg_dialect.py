"""DuckDB-dialect SQL as PostgreSQL's (ADR 0016): what ``postgres.PgConnection`` runs for every statement a pack writes.

Pack SQL is DuckDB's dialect with ``?`` (or ``$1``, ``$name``) placeholders. :func:`translate` turns each statement
text into PostgreSQL's once (cached): placeholders become psycopg's ``%s``, the few DuckDB-only spellings the packs
use (``list``, ``len``, ``epoch``, ``range``, ``list_has_any``…, ``DOUBLE``, ``BLOB``, nested ``unnest``) become
PostgreSQL's, and a construct without a mechanical translation is refused with a :class:`StorageError`.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

import numpy as np

from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.storage.base import META_SCHEMA

__all__ = ["Translated", "plain", "translate"]

_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*")
_PLACEHOLDER = re.compile(r"\?|\$(\d+)|\$([A-Za-z_]\w*)")
_SLOT = "\x00{}\x00"
_TYPE_WORDS = [(re.compile(r"\bDOUBLE\b(?!\s+PRECISION)", re.I), "double precision"),
               (re.compile(r"\bBLOB\b", re.I), "bytea")]
_FUNCTIONS = [(re.compile(r"\blist\(", re.I), "array_agg("),
              (re.compile(r"\bstring_split\(", re.I), "string_to_array("),
              (re.compile(r"\blen\(", re.I), "cardinality("), (re.compile(r"\bepoch\(", re.I), "date_part('epoch', ")]
_RANGE = re.compile(r"\brange\(\s*(\x00\d+\x00)\s*\)", re.I)
_NESTED = re.compile(r"\bunnest\((\x00\d+\x00)::([a-z ]+?)\[\]\[\]\)", re.I)
_BARE_UNNEST = re.compile(r"\bunnest\((\x00(\d+)\x00)\)", re.I)
_OPERATORS = {"list_has_any": "({0} && {1})", "list_has_all": "({0} @> {1})", "list_contains": "({1} = ANY({0}))"}


class Translated:
    """One statement in PostgreSQL's dialect: its text with ``%s`` (and ``{cast}`` marks) and where each
    placeholder's value comes from."""

    __slots__ = ("sql", "sources", "json_rows", "bare", "named")

    def __init__(self, sql: str, sources: list[Any], json_rows: set[int], bare: set[int], named: bool) -> None:
        self.sql, self.sources, self.json_rows, self.bare, self.named = sql, sources, json_rows, bare, named

    def bind(self, params: Sequence[Any] | Mapping[str, Any] | None) -> tuple[str, list[Any] | None]:
        if params is None:
            return self.sql.replace("{cast}", ""), None
        values = [params[src] for src in self.sources]
        values = [plain(v) for v in values]
        casts = []
        for slot, v in enumerate(values):
            if slot in self.json_rows:  # ragged nested lists: one JSON array per row, unpacked by _palimpsest.jarr
                values[slot] = [None if row is None else json.dumps(row) for row in v]
            if slot in self.bare:
                casts.append(_array_cast(v))
        it = iter(casts)
        sql = re.sub(r"\{cast\}", lambda _m: next(it), self.sql) if self.bare else self.sql
        return sql, values


def _array_cast(values: Any) -> str:
    """The cast a bare ``unnest(?)`` needs: PostgreSQL cannot pick the array type of a list of text (or NULLs)."""
    if not isinstance(values, list):
        return ""
    kinds = {type(v) for v in values if v is not None}
    if not kinds or kinds <= {str}:
        return "::text[]"
    if kinds <= {bool}:
        return "::boolean[]"
    if kinds <= {int}:
        return "::bigint[]"
    if kinds <= {int, float}:
        return "::double precision[]"
    if kinds <= {bytes}:
        return "::bytea[]"
    if all(hasattr(k, "isoformat") and hasattr(k, "hour") for k in kinds):
        return "::timestamp[]"
    return ""


def _rewrite_calls(code: str) -> str:
    """``list_has_any(a, b)`` and friends → PostgreSQL array operators (arguments split at top-level commas)."""
    for name, template in _OPERATORS.items():
        pattern = re.compile(rf"\b{name}\(", re.I)
        while (m := pattern.search(code)) is not None:
            depth, args, start, i = 1, [], m.end(), m.end()
            while depth:
                ch = code[i]
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                elif ch == "," and depth == 1:
                    args.append(code[start:i].strip())
                    start = i + 1
                i += 1
            args.append(code[start:i - 1].strip())
            code = code[:m.start()] + template.format(*args) + code[i:]
    return code


_CACHE: dict[tuple[str, bool], Translated] = {}


def translate(sql: str, with_params: bool) -> Translated:
    """DuckDB-dialect SQL → PostgreSQL (cached per text). Refuses constructs that have no mechanical translation."""
    key = (sql, with_params)
    done = _CACHE.get(key)
    if done is not None:
        return done
    quoted: list[str] = []

    def keep(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x01{len(quoted) - 1}\x01"

    code = _QUOTED.sub(keep, sql)
    if re.search(r"\bINSERT\s+OR\s+(REPLACE|IGNORE)\b", code, re.I):
        raise StorageError("INSERT OR REPLACE/IGNORE is DuckDB-only: write INSERT … ON CONFLICT … DO UPDATE/NOTHING")
    sources: list[Any] = []
    named = False
    if with_params:
        positional = 0

        def slot(m: re.Match[str]) -> str:
            nonlocal positional, named
            if m.group(0) == "?":
                sources.append(positional)
                positional += 1
            elif m.group(1):
                sources.append(int(m.group(1)) - 1)
            else:
                sources.append(m.group(2))
                named = True
            return _SLOT.format(len(sources) - 1)

        code = code.replace("%", "%%")
        code = _PLACEHOLDER.sub(slot, code)
    for pattern, word in _TYPE_WORDS:
        code = pattern.sub(word, code)
    for pattern, word in _FUNCTIONS:
        code = pattern.sub(word, code)
    code = _RANGE.sub(r"generate_series(1, \1)", code)
    json_rows = {int(m.group(1).strip("\x00")) for m in _NESTED.finditer(code)}
    code = _NESTED.sub(rf"{META_SCHEMA}.jarr(unnest(\1::text[]))::\2[]", code)
    bare = {int(m.group(2)) for m in _BARE_UNNEST.finditer(code)}
    code = _BARE_UNNEST.sub(r"unnest(\1{cast})", code)
    code = _rewrite_calls(code)
    code = re.sub(r"\x00\d+\x00", "%s", code)
    out = re.sub(r"\x01(\d+)\x01",
                 lambda m: quoted[int(m.group(1))].replace("%", "%%") if with_params else quoted[int(m.group(1))],
                 code)
    # bare-unnest slots in text order (the {cast} marks appear in the same order as their slots)
    order = sorted(bare)
    done = Translated(out, sources, json_rows, set(order), named)
    if len(_CACHE) > 4096:
        _CACHE.clear()
    _CACHE[key] = done
    return done


def plain(value: Any) -> Any:
    """numpy values (which DuckDB takes as they are) as plain Python values for psycopg."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# PostgreSQL's information_schema names (udt_name for arrays) → the DuckDB type words pack SQL is written in
_PG_TYPES = {"character varying": "VARCHAR", "text": "VARCHAR", "bytea": "BLOB", "double precision": "DOUBLE",
             "real": "FLOAT", "timestamp without time zone": "TIMESTAMP", "timestamp with time zone": "TIMESTAMPTZ",
             "jsonb": "JSON", "json": "JSON"}
_PG_ARRAYS = {"_varchar": "VARCHAR[]", "_text": "VARCHAR[]", "_int8": "BIGINT[]", "_int4": "INTEGER[]",
              "_int2": "SMALLINT[]", "_float8": "DOUBLE[]", "_float4": "FLOAT[]", "_bool": "BOOLEAN[]",
              "_timestamp": "TIMESTAMP[]"}


def duckdb_type(table: str, column: str, data_type: str, udt_name: str) -> str:
    """A PostgreSQL column's type as DuckDB spells it (what the export format carries)."""
    from palimpsest_memory.runtime.errors import StorageError

    kind = _PG_ARRAYS.get(udt_name) if data_type == "ARRAY" else _PG_TYPES.get(data_type, data_type.upper())
    if kind is None:
        raise StorageError(f"{table}.{column}: array type {udt_name} is not carried by the export format")
    return kind

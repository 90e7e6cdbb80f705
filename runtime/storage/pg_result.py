"""One PostgreSQL statement's answer, read the way DuckDB's connection answers (ADR 0016): rows one at a time or
all, a row count for DML without RETURNING, and numpy columns typed by the column's PostgreSQL type."""
from __future__ import annotations

from typing import Any

import numpy as np


class PgResult:
    """One statement's answer, read as DuckDB's: rows, one at a time or all, or as numpy columns."""

    def __init__(self, con: Any, cur: Any) -> None:  # con: the PgConnection (its _fail names a lost connection)
        self._con, self._cur = con, cur
        self._rows: list[tuple[Any, ...]] | None = None

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        d = self._cur.description if self._cur is not None else None
        return [(c.name, c.type_code) for c in d] if d else None

    def _all(self) -> list[tuple[Any, ...]]:
        import psycopg

        if self._rows is None:
            if self._cur is None:
                self._rows = []
            elif self._cur.description is None:  # DML without RETURNING: DuckDB answers with the row count
                self._rows = [(max(self._cur.rowcount, 0),)] if self._cur.statusmessage and \
                    self._cur.statusmessage.split()[0] in ("INSERT", "UPDATE", "DELETE") else []
            else:
                try:
                    self._rows = self._cur.fetchall()
                except psycopg.Error as exc:
                    raise self._con._fail(exc, "") from None
        return self._rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._all(), []
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._all()
        return rows.pop(0) if rows else None

    def fetchnumpy(self) -> dict[str, Any]:
        desc = self.description or []
        rows = self.fetchall()
        cols = list(zip(*rows)) if rows else [() for _ in desc]
        return {d[0]: _column(list(c), _OID_KIND.get(d[1])) for d, c in zip(desc, cols)}


# PostgreSQL type OIDs → how fetchnumpy holds the column (the type decides, not the values: a column of NULLs
# is still a timestamp column)
_OID_KIND = {1114: "t", 1184: "t", 20: "i", 21: "i", 23: "i", 700: "f", 701: "f", 1700: "f", 16: "b"}


def _column(values: list[Any], kind: str | None) -> Any:
    """One result column as DuckDB's fetchnumpy gives it: typed arrays, masked where NULL."""
    mask = np.array([v is None for v in values], dtype=bool)
    if kind == "t":
        out = np.array([np.datetime64("NaT") if v is None else np.datetime64(v.replace(tzinfo=None), "us")
                        for v in values], dtype="datetime64[us]")
        return np.ma.masked_array(out, mask=mask) if mask.any() else out
    if kind == "b":
        dtype: Any = bool
        fill: Any = False
    elif kind == "i":
        dtype, fill = np.int64, 0
    elif kind == "f":
        dtype, fill = np.float64, 0.0
    else:
        dtype, fill = object, None
    data = np.array([fill if v is None else v for v in values], dtype=dtype)
    return np.ma.masked_array(data, mask=mask) if mask.any() else data

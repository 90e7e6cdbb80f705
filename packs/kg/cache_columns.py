"""The columnar half of the kg cache (cache.py; adr/0014-kg-scale.md): a namespace's committed current versions as
numpy columns sorted by subject (:class:`Columns`), and the per-subject view writers and readers use
(:class:`Subjects`: rows materialised on touch, writes kept in an override dict that wins over the columns).

Split from cache.py to keep both modules readable: this file knows how the rows are held, cache.py when they are
built, trusted and changed.
"""
from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from palimpsest_memory.packs.kg.fact_rows import ROW_COLUMNS, FactRow, as_fact_row, intern_times

if TYPE_CHECKING:
    from palimpsest_memory.runtime.storage import Database

LOAD_COLUMNS = "subject_id, " + ROW_COLUMNS


# The row fields after subject_id, in FactRow order, and how each is held in :class:`Columns`:
# s = string (dictionary code), i = integer, n = nullable integer, t = timestamp (NaT = NULL), b = bool, f = float.
FIELDS = (("predicate", "s"), ("fact_id", "i"), ("version_id", "i"), ("object_id", "n"), ("object_value", "s"),
          ("object_text", "s"), ("valid_from", "t"), ("valid_to", "t"), ("valid_to_source", "s"),
          ("superseded_by", "n"), ("coexisting", "b"), ("confidence", "f"), ("combined_confidence", "f"),
          ("evidence_count", "i"), ("source_id", "s"), ("first_recorded_at", "t"), ("recorded_at", "t"))
assert tuple(n for n, _ in FIELDS) == FactRow._fields
_STRINGS = [n for n, k in FIELDS if k == "s"]
_CURRENT = "FROM kg.facts WHERE namespace = $ns AND retracted_at IS NULL"


class Columns:
    """The committed current versions of a namespace as numpy columns, sorted by (subject_id, version_id).

    Strings are int32 codes into a per-column array of the distinct values (DuckDB computes the codes, so no
    Python string is made per fact); code -1 is NULL (the last entry of each array is None). Read-only: writes go
    to :class:`Subjects`' override dict.
    """

    def __init__(self, db: "Database", namespace: str) -> None:
        ns = {"ns": namespace}
        dicts = ", ".join(f"d_{c} AS (SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS INTEGER) AS code FROM "
                          f"(SELECT DISTINCT {c} AS v {_CURRENT} AND {c} IS NOT NULL))" for c in _STRINGS)
        cols = ", ".join(f"coalesce(d_{n}.code, -1) AS {n}" if k == "s" else f"cur.{n}" for n, k in FIELDS)
        joins = " ".join(f"LEFT JOIN d_{c} ON d_{c}.v = cur.{c}" for c in _STRINGS)
        # one snapshot: the build runs inside the call's transaction, so both statements see the same rows
        got = db.execute(f"WITH cur AS (SELECT {LOAD_COLUMNS} {_CURRENT}), {dicts} "
                             f"SELECT cur.subject_id, {cols} FROM cur {joins}", ns).fetchnumpy()
        values = db.query("SELECT " + ", ".join(f"(SELECT list(v ORDER BY v) FROM (SELECT DISTINCT {c} AS v "
                                                    f"{_CURRENT} AND {c} IS NOT NULL))" for c in _STRINGS), ns)[0]
        order = np.lexsort((np.ma.getdata(got["version_id"]), np.ma.getdata(got["subject_id"])))
        sids = np.ma.getdata(got["subject_id"])[order]
        first = np.flatnonzero(np.r_[True, sids[1:] != sids[:-1]]) if len(sids) else np.zeros(0, np.intp)
        self.sids = sids[first]                                   # distinct subject ids, ascending
        self.starts = np.r_[first, len(sids)].astype(np.intp)    # rows of sids[i]: starts[i]:starts[i + 1]
        vals = iter(values)
        self.data: list[tuple[str, np.ndarray, Any]] = []  # per field: (kind, column, NULL mask or string values)
        for name, kind in FIELDS:
            a = got[name]
            mask = np.ma.getmaskarray(a)[order] if isinstance(a, np.ma.MaskedArray) else None
            a = np.ma.getdata(a)[order]
            if kind == "s":
                self.data.append((kind, a.astype(np.int32), np.array([*(next(vals) or []), None], dtype=object)))
            elif kind == "t":
                if mask is not None and mask.any():
                    a = a.copy()
                    a[mask] = np.datetime64("NaT")
                self.data.append((kind, a, None))
            else:
                self.data.append((kind, a, mask if mask is not None and mask.any() else None))

    def __len__(self) -> int:
        return len(self.sids)

    def find(self, sids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (into self.sids) of the given subject ids that have rows, and which of them do."""
        pos = np.searchsorted(self.sids, sids)
        pos[pos == len(self.sids)] = 0
        hit = self.sids[pos] == sids if len(self.sids) else np.zeros(len(sids), bool)
        return pos, hit

    def rows(self, idx: np.ndarray) -> list[tuple]:
        """The rows at the given positions, stored form (plain tuples of Python objects equal to what SQL returns)."""
        out = []
        for kind, a, extra in self.data:
            if kind == "s":
                out.append(extra[a[idx]].tolist())
            elif kind == "n" and extra is not None and extra[idx].any():
                out.append([None if m else v for v, m in zip(a[idx].tolist(), extra[idx].tolist())])
            else:
                out.append(a[idx].tolist())
        return list(zip(*out))

    def subject(self, sid: int) -> tuple[tuple, ...] | None:
        i = int(np.searchsorted(self.sids, sid))
        if i == len(self.sids) or self.sids[i] != sid:
            return None
        return tuple(self.rows(np.arange(self.starts[i], self.starts[i + 1])))

    def subjects(self, sids: list[int]) -> dict[int, tuple[tuple, ...]]:
        """Rows of many subjects at once (one vectorised pass): {sid: rows} for those that have rows."""
        want = np.asarray(sids, dtype=np.int64)
        pos, hit = self.find(want)
        want, pos = want[hit], pos[hit]
        if not len(pos):
            return {}
        lo, hi = self.starts[pos], self.starts[pos + 1]
        n = hi - lo
        ends = np.cumsum(n)
        idx = np.arange(ends[-1]) + np.repeat(lo - (ends - n), n)
        rows = self.rows(idx)
        return {sid: tuple(rows[e - k:e]) for sid, e, k in zip(want.tolist(), ends.tolist(), n.tolist())}


_GONE = object()


class Subjects(MutableMapping):
    """subject id → its current versions: the override dict (rows written since the build) over the columns.

    The override dict keeps plain tuples, which the cycle collector stops tracking
    (:mod:`palimpsest_memory.packs.kg.fact_rows`); they are handed out as :class:`FactRow`."""

    def __init__(self, base: Columns | None = None) -> None:
        self.base = base if base is not None and len(base) else None
        self.over: dict[int, Any] = {}  # sid → plain-tuple rows, or _GONE (the columns' rows no longer hold)

    def get(self, sid: int, default: Any = None) -> Any:  # type: ignore[override]
        rows = self.over.get(sid)
        if rows is None:
            rows = self.base.subject(sid) if self.base is not None else None
        return default if rows is None or rows is _GONE else tuple(map(as_fact_row, rows))

    def __getitem__(self, sid: int) -> tuple[FactRow, ...]:
        rows = self.get(sid)
        if rows is None:
            raise KeyError(sid)
        return rows

    def stored(self, sid: int) -> tuple[tuple, ...]:
        """The subject's rows in their stored form (plain tuples, see :mod:`palimpsest_memory.packs.kg.fact_rows`);
        () if none."""
        rows = self.over.get(sid)
        if rows is None:
            rows = self.base.subject(sid) if self.base is not None else None
        return () if rows is None or rows is _GONE else rows

    def __setitem__(self, sid: int, rows: tuple[tuple, ...]) -> None:
        """Set the subject's rows, given in their stored form (plain tuples)."""
        self.over[sid] = rows

    def __delitem__(self, sid: int) -> None:
        if self.get(sid) is None:
            raise KeyError(sid)
        if self.base is not None and self.base.subject(sid) is not None:
            self.over[sid] = _GONE
        else:
            del self.over[sid]

    def __iter__(self) -> Iterator[int]:
        if self.base is not None:
            yield from (s for s in self.base.sids.tolist() if s not in self.over)
        yield from (s for s, rows in self.over.items() if rows is not _GONE)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def load(self, sids: Iterable[int], interned: dict[Any, Any]) -> None:
        """Move these subjects' rows from the columns into the override dict (a write is about to use them)."""
        if self.base is None:
            return
        todo = [s for s in set(sids) if s not in self.over]
        if not todo:
            return
        for sid, rows in self.base.subjects(todo).items():
            self.over[sid] = tuple(intern_times(r, interned) for r in rows)

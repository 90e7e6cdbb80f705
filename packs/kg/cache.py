"""Per-namespace, in-process cache of the kg state that lookups and supersession need (see adr/0014-kg-scale.md).

Why: DuckDB 2.0.1 scans ``kg.facts`` for ``subject_id = ?`` (it stops using the ART index once rows were appended),
so every ``kg.facts`` lookup and every batch's timeline load paid a scan that grew with the table. The cache holds,
per namespace: every entity key (name or alias → entity id), entity names, declared cardinalities, and the
transaction-current version of every fact grouped by subject. Closed versions stay in SQL only (``known_at``,
``fact_history``).

How it stays equal to the store (the store is the source of truth):
- it is built from SQL at first use in a runtime (a reopen starts empty, so it is rebuilt from the file), and
  only from committed data: never in a transaction that already wrote kg data for the namespace;
- a kg write verb first marks the namespace *pending* with the DuckDB transaction id (``txid_current()``) and the
  subjects / keys it will touch, then writes SQL, then hands its final state to ``ctx.on_commit``: the cache
  changes only after COMMIT, so a rolled-back call never reaches it;
- while a pending mark of the *current* transaction exists, reads and writes of that namespace use SQL (they see
  the uncommitted rows, the cache does not);
- a pending mark of *another* transaction means that one never ran its commit hook (it rolled back, or a hook
  before ours failed): what it touched is reloaded from SQL before the cache is used again.
How it is held: the build loads the current versions as numpy columns sorted by subject (:class:`Columns`:
strings as dictionary codes computed by DuckDB, no Python object per fact), so a first call on a 1M-fact store
waits about a second instead of building a million tuples. A subject's rows become tuples only when it is
touched: a read materialises them and lets them go, a write keeps its final rows in :class:`Subjects`' override
dict (which then wins over the columns). Cached rows are tuples of atomic values, so Python's cycle collector
stops tracking them; writers work on :class:`Fact` copies, never on cached rows.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

import numpy as np

from runtime import Context

from packs.kg.models import FactOut
from packs.kg.timeline import Fact

# A cached row: one transaction-current version (positions 1.. match Fact's fields, recorded_at last).
Row = tuple
LOAD_COLUMNS = ("subject_id, predicate, fact_id, version_id, object_id, object_value, object_text, valid_from, "
                "valid_to, valid_to_source, superseded_by, coexisting, confidence, combined_confidence, "
                "evidence_count, source_id, first_recorded_at, recorded_at")


# The row fields after subject_id, in Row order, and how each is held in :class:`Columns`:
# s = string (dictionary code), i = integer, n = nullable integer, t = timestamp (NaT = NULL), b = bool, f = float.
FIELDS = (("predicate", "s"), ("fact_id", "i"), ("version_id", "i"), ("object_id", "n"), ("object_value", "s"),
          ("object_text", "s"), ("valid_from", "t"), ("valid_to", "t"), ("valid_to_source", "s"),
          ("superseded_by", "n"), ("coexisting", "b"), ("confidence", "f"), ("combined_confidence", "f"),
          ("evidence_count", "i"), ("source_id", "s"), ("first_recorded_at", "t"), ("recorded_at", "t"))
assert LOAD_COLUMNS == ", ".join(["subject_id", *(n for n, _ in FIELDS)])
_STRINGS = [n for n, k in FIELDS if k == "s"]
_CURRENT = "FROM kg.facts WHERE namespace = $ns AND retracted_at IS NULL"


class Columns:
    """The committed current versions of a namespace as numpy columns, sorted by (subject_id, version_id).

    Strings are int32 codes into a per-column array of the distinct values (DuckDB computes the codes, so no
    Python string is made per fact); code -1 is NULL (the last entry of each array is None). Read-only: writes go
    to :class:`Subjects`' override dict.
    """

    def __init__(self, ctx: Context) -> None:
        ns = {"ns": ctx.namespace}
        dicts = ", ".join(f"d_{c} AS (SELECT v, CAST(row_number() OVER (ORDER BY v) - 1 AS INTEGER) AS code FROM "
                          f"(SELECT DISTINCT {c} AS v {_CURRENT} AND {c} IS NOT NULL))" for c in _STRINGS)
        cols = ", ".join(f"coalesce(d_{n}.code, -1) AS {n}" if k == "s" else f"cur.{n}" for n, k in FIELDS)
        joins = " ".join(f"LEFT JOIN d_{c} ON d_{c}.v = cur.{c}" for c in _STRINGS)
        # one snapshot: the build runs inside the call's transaction, so both statements see the same rows
        got = ctx.db.execute(f"WITH cur AS (SELECT {LOAD_COLUMNS} {_CURRENT}), {dicts} "
                             f"SELECT cur.subject_id, {cols} FROM cur {joins}", ns).fetchnumpy()
        values = ctx.db.query("SELECT " + ", ".join(f"(SELECT list(v ORDER BY v) FROM (SELECT DISTINCT {c} AS v "
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

    def rows(self, idx: np.ndarray) -> list[Row]:
        """The rows at the given positions, as tuples (Python objects equal to what SQL returns)."""
        out = []
        for kind, a, extra in self.data:
            if kind == "s":
                out.append(extra[a[idx]].tolist())
            elif kind == "n" and extra is not None and extra[idx].any():
                out.append([None if m else v for v, m in zip(a[idx].tolist(), extra[idx].tolist())])
            else:
                out.append(a[idx].tolist())
        return list(zip(*out))

    def subject(self, sid: int) -> tuple[Row, ...] | None:
        i = int(np.searchsorted(self.sids, sid))
        if i == len(self.sids) or self.sids[i] != sid:
            return None
        return tuple(self.rows(np.arange(self.starts[i], self.starts[i + 1])))

    def subjects(self, sids: list[int]) -> dict[int, tuple[Row, ...]]:
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
    """subject id → its current versions: the override dict (rows written since the build) over the columns."""

    def __init__(self, base: Columns | None = None) -> None:
        self.base = base if base is not None and len(base) else None
        self.over: dict[int, Any] = {}  # sid → rows, or _GONE (the columns' rows no longer hold)

    def get(self, sid: int, default: Any = None) -> Any:  # type: ignore[override]
        rows = self.over.get(sid)
        if rows is None:
            rows = self.base.subject(sid) if self.base is not None else None
            return default if rows is None else rows
        return default if rows is _GONE else rows

    def __getitem__(self, sid: int) -> tuple[Row, ...]:
        rows = self.get(sid)
        if rows is None:
            raise KeyError(sid)
        return rows

    def __setitem__(self, sid: int, rows: tuple[Row, ...]) -> None:
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
        t = interned.setdefault
        for sid, rows in self.base.subjects(todo).items():
            self.over[sid] = tuple((r[0], r[1], r[2], r[3], r[4], r[5], r[6] if r[6] is None else t(r[6], r[6]),
                                    r[7] if r[7] is None else t(r[7], r[7]), r[8], r[9], r[10], r[11], r[12],
                                    r[13], r[14], t(r[15], r[15]), t(r[16], r[16])) for r in rows)


@dataclass
class NsCache:
    keys: dict[str, int]                       # name key (canonical name or alias) → entity id
    names: dict[int, str]                      # entity id → canonical name
    cards: dict[str, str]                      # declared predicate → cardinality
    subjects: Subjects                         # subject id → its current versions (predicate first in each row)
    interned: dict[Any, Any] = field(default_factory=dict)  # one object per distinct time value (memory)


@dataclass
class Pending:
    txid: int
    writers: int = 0              # write calls of this transaction whose commit hook has not run yet
    keys: bool = False
    cards: bool = False
    subjects: set[int] = field(default_factory=set)


def fact_from_row(r: Row) -> Fact:
    """A mutable copy of a cached (or freshly loaded) row, for the supersession algorithm."""
    return Fact(r[1], r[2], f"e:{r[3]}" if r[3] is not None else f"v:{r[4]}", r[3], r[4], r[5], r[6], r[7], r[8],
                r[9], r[10], r[11], r[12], r[13], r[14], r[15], r[16], False, False, r)


def row_of(predicate: str, f: Fact, interned: dict[Any, Any]) -> Row:
    if f.row is not None and not (f.interval_changed or f.evidence_changed):
        return f.row  # untouched by this call: the cached row is still exact
    t = interned.setdefault
    return (predicate, f.fact_id, f.version_id, f.object_id, f.object_value, f.object_text,
            f.valid_from if f.valid_from is None else t(f.valid_from, f.valid_from),
            f.valid_to if f.valid_to is None else t(f.valid_to, f.valid_to), f.valid_to_source, f.superseded_by,
            f.coexisting, f.confidence, f.combined_confidence, f.evidence_count, f.source_id,
            t(f.first_recorded_at, f.first_recorded_at), t(f.recorded_at, f.recorded_at))


def load_rows(ctx: Context, subjects: Iterable[int] | None = None) -> list[tuple]:
    """Transaction-current versions of the namespace (or of some subjects): ``(subject_id, *row)`` tuples."""
    sql = f"SELECT {LOAD_COLUMNS} FROM kg.facts WHERE namespace = ? AND retracted_at IS NULL"
    args: list[Any] = [ctx.namespace]
    if subjects is not None:
        sql += " AND subject_id IN (SELECT unnest(?::BIGINT[]))"
        args.append(sorted(set(subjects)))
    return ctx.db.query(sql, args)


def _group(rows: list[tuple], interned: dict[Any, Any]) -> dict[int, tuple[Row, ...]]:
    t = interned.setdefault
    out: dict[int, list[Row]] = defaultdict(list)
    for r in rows:
        vf, vt, fr, rec = r[7], r[8], r[16], r[17]
        out[r[0]].append((r[1], r[2], r[3], r[4], r[5], r[6], vf if vf is None else t(vf, vf),
                          vt if vt is None else t(vt, vt), r[9], r[10], r[11], r[12], r[13], r[14], r[15],
                          t(fr, fr), t(rec, rec)))
    return {s: tuple(v) for s, v in out.items()}


def _load_keys(ctx: Context, c: NsCache) -> None:
    rows = ctx.db.query("SELECT k.key, e.id, e.name FROM kg.entity_keys k JOIN kg.entities e ON e.id = k.entity_id "
                        "WHERE k.namespace = ?", [ctx.namespace])
    c.keys = {k: i for k, i, _ in rows}
    c.names = {i: n for _, i, n in rows}


def _load_cards(ctx: Context, c: NsCache) -> None:
    c.cards = dict(ctx.db.query("SELECT name, cardinality FROM kg.predicates WHERE namespace = ?", [ctx.namespace]))


def _build(ctx: Context) -> NsCache:
    c = NsCache(keys={}, names={}, cards={}, subjects=Subjects())
    _load_keys(ctx, c)
    _load_cards(ctx, c)
    c.subjects = Subjects(Columns(ctx))
    return c


def _stores(ctx: Context) -> tuple[dict[str, NsCache], dict[str, Pending]]:
    st = ctx.state
    if getattr(st, "kg_cache", None) is None:
        st.kg_cache, st.kg_pending = {}, {}
    return st.kg_cache, st.kg_pending


def _txid(ctx: Context) -> int:
    return ctx.db.query("SELECT txid_current()")[0][0]


def _settle(ctx: Context, pend: Pending) -> None:
    """A pending mark whose transaction is over without our commit hook: reload what it touched from SQL."""
    caches, pendings = _stores(ctx)
    c = caches.get(ctx.namespace)
    if c is not None:
        if pend.keys:
            _load_keys(ctx, c)
        if pend.cards:
            _load_cards(ctx, c)
        if pend.subjects:
            fresh = _group(load_rows(ctx, pend.subjects), c.interned)
            for sid in pend.subjects:
                if sid in fresh:
                    c.subjects[sid] = fresh[sid]
                else:
                    c.subjects.pop(sid, None)
    del pendings[ctx.namespace]


def readable(ctx: Context) -> NsCache | None:
    """The namespace's cache for a read, or None when this transaction has uncommitted kg writes (use SQL)."""
    caches, pendings = _stores(ctx)
    pend = pendings.get(ctx.namespace)
    if pend is not None:  # rare: only between a kg write and its commit hook, or after a rollback
        if pend.txid == _txid(ctx):
            return None
        _settle(ctx, pend)
    c = caches.get(ctx.namespace)
    if c is None:
        c = caches[ctx.namespace] = _build(ctx)
    return c


class Writer:
    """One kg write call's view of the cache: marks the namespace pending, collects the final state, and applies
    it after commit. ``cache`` is None when an earlier write of this transaction made the cache stale (use SQL)."""

    def __init__(self, ctx: Context, need_cache: bool = True) -> None:
        caches, pendings = _stores(ctx)
        self._ctx, self._caches, self._pendings = ctx, caches, pendings
        txid = _txid(ctx)
        pend = pendings.get(ctx.namespace)
        if pend is not None and pend.txid != txid:
            _settle(ctx, pend)
            pend = None
        if pend is None:
            self.cache: NsCache | None = caches.get(ctx.namespace)
            if self.cache is None and need_cache:  # built before the mark below: only committed data is visible
                self.cache = caches[ctx.namespace] = _build(ctx)
            pend = pendings[ctx.namespace] = Pending(txid)
        else:
            self.cache = None
        pend.writers += 1
        self.pending = pend
        self.keys: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self.cards: dict[str, str] = {}
        self.timelines: dict[tuple[int, str], list[Row]] = {}

    # -- before writing SQL: say what will change (a failed call's marks make the next use reload these) --------
    def touch_keys(self) -> None:
        self.pending.keys = True

    def touch_cards(self) -> None:
        self.pending.cards = True

    def touch_subjects(self, ids: Iterable[int]) -> None:
        self.pending.subjects.update(ids)

    # -- the final state, applied after commit ---------------------------------------------------------------
    def add_keys(self, keys: dict[str, int], names: dict[int, str]) -> None:
        self.keys.update(keys)
        self.names.update(names)

    def set_card(self, predicate: str, cardinality: str) -> None:
        self.cards[predicate] = cardinality

    def set_timeline(self, subject_id: int, predicate: str, facts: list[Fact]) -> None:
        """The complete current versions of (subject, predicate) once this call's SQL is written.

        Kept as rows, not as the facts: a batch's Fact copies then die when the call returns instead of living
        (and being walked by the cycle collector) until the commit hook runs."""
        c = self._caches.get(self._ctx.namespace)
        interned = c.interned if c is not None else {}
        self.timelines[(subject_id, predicate)] = [row_of(predicate, f, interned) for f in facts]

    def commit(self) -> None:
        self._ctx.on_commit(self._apply)

    def _apply(self) -> None:
        ns, pend = self._ctx.namespace, self.pending
        c = self._caches.get(ns)
        if c is not None:
            c.keys.update(self.keys)
            c.names.update(self.names)
            c.cards.update(self.cards)
            by_subject: dict[int, dict[str, list[Row]]] = defaultdict(dict)
            for (sid, pred), rows in self.timelines.items():
                by_subject[sid][pred] = rows
            for sid, preds in by_subject.items():
                kept = [r for r in c.subjects.get(sid, ()) if r[0] not in preds]
                kept += [r for rows in preds.values() for r in rows]
                if kept:
                    c.subjects[sid] = tuple(kept)
                else:
                    c.subjects.pop(sid, None)
        pend.writers -= 1
        # a write of this transaction that failed (its error caught by a caller that still committed) never
        # reaches here: its mark then stays, and the next use reloads everything the mark names
        if pend.writers == 0 and self._pendings.get(ns) is pend:
            del self._pendings[ns]


def timelines_of(c: NsCache, keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], list[Fact]]:
    """Mutable copies of the current versions of each (subject id, predicate)."""
    keys = list(keys)
    c.subjects.load((sid for sid, _ in keys), c.interned)
    out: dict[tuple[int, str], list[Fact]] = {}
    for sid, pred in keys:
        out[(sid, pred)] = [fact_from_row(r) for r in c.subjects.get(sid, ()) if r[0] == pred]
    return out


def fact_out(c: NsCache, sid: int, r: Row) -> FactOut:
    return FactOut(
        fact_id=r[1], version_id=r[2], subject={"id": sid, "name": c.names[sid]}, predicate=r[0], object=r[5],
        object_id=r[3], literal=r[4] is not None, valid_from=r[6], valid_to=r[7], recorded_at=r[15],
        version_recorded_at=r[16], retracted_at=None, confidence=r[11], combined_confidence=r[12],
        evidence_count=r[13], source_id=r[14], superseded_by=r[9], coexisting=r[10])


def current_facts(c: NsCache, sid: int, predicate: str | None, obj: tuple[str, int | None] | None,
                  when: datetime | None, limit: int) -> list[FactOut]:
    """kg.facts for one subject from the cache, with the SQL path's filters and order (see queries.facts)."""
    rows = [r for r in c.subjects.get(sid, ())
            if (predicate is None or r[0] == predicate)
            and (obj is None or r[4] == obj[0] or (obj[1] is not None and r[3] == obj[1]))
            and (when is None or ((r[6] is None or r[6] <= when) and (r[7] is None or r[7] > when)))]
    rows.sort(key=lambda r: (r[6] is not None, r[6] or datetime.min, r[1]))
    return [fact_out(c, sid, r) for r in rows[:limit]]

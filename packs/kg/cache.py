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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from runtime import Context

from packs.kg.cache_columns import LOAD_COLUMNS, Columns, Row, Subjects
from packs.kg.models import FactOut
from packs.kg.timeline import Fact

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

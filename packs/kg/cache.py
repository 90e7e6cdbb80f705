"""The fact cache: a mirror of the kg state that lookups and supersession need, per namespace (adr/0014-kg-scale.md).

Why: DuckDB 2.0.1 scans ``kg.facts`` for ``subject_id = ?`` (it stops using the ART index once rows were appended),
so every ``kg.facts`` lookup and every batch's timeline load paid a scan that grew with the table. The cache holds,
per namespace: every entity key (name or alias → entity id), entity names, declared cardinalities, and the
transaction-current version of every fact grouped by subject. Closed versions stay in SQL only (``known_at``,
``fact_history``).

How it stays equal to the store (the store is the source of truth), through the runtime's mirror seam:
- a namespace is built from SQL at its first use in a runtime (opening stays cheap; a reopen starts empty), and
  only from committed data: never in a transaction that has uncommitted kg writes for the namespace;
- a kg write verb records one :class:`KgChange` at its start (``ctx.record_change``) and fills it as it goes;
  the runtime hands it to :meth:`FactCache.apply` after COMMIT, never after a rollback;
- while this transaction has such a change for the namespace (``ctx.uncommitted()``), reads and writes of that
  namespace use SQL: only SQL sees the uncommitted rows (:class:`palimpsest_memory.packs.kg.store.KgStore` makes that
  choice).
How it is held: see :mod:`palimpsest_memory.packs.kg.cache_columns` (numpy columns from the build, tuples for subjects
written since).
"""
from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.mirror import Change, Mirror

from palimpsest_memory.packs.kg.cache_columns import Columns, Subjects
from palimpsest_memory.packs.kg.models import FactOut
from palimpsest_memory.packs.kg.fact_rows import (FACT_ID, OBJECT_ID, OBJECT_VALUE, PREDICATE, VALID_FROM, VALID_TO,
                                             as_fact_row)
from palimpsest_memory.packs.kg.timeline import Fact

if TYPE_CHECKING:
    from palimpsest_memory.runtime.storage import Database

WRITE = "write"  # the one change kind of the kg pack: a KgChange


@dataclass
class KgChange:
    """What one kg write call changed in its namespace: recorded when the call starts writing, filled as it goes
    (so reads later in the same transaction know to use SQL), read by the mirrors after commit."""

    keys: dict[str, tuple[int, str, str]] = field(default_factory=dict)  # new name key → (entity id, name, kind)
    kinds: dict[int, str] = field(default_factory=dict)                  # entity id → its new kind
    cards: dict[str, str] = field(default_factory=dict)                  # predicate → declared cardinality
    # (subject id, predicate) → every current version once the call's SQL is written, as stored rows (plain
    # tuples in FactRow order, packs/kg/fact_rows.py), not Fact copies: a batch's copies then die when the call returns
    # instead of living, walked by the cycle collector, until commit
    timelines: dict[tuple[int, str], tuple[tuple, ...]] = field(default_factory=dict)
    dropped: set[int] = field(default_factory=set)  # entity ids erased (kg.forget): their keys and names go
    cleared: bool = False                            # the whole namespace was erased (kg.forget everything)

    @property
    def entities_changed(self) -> bool:
        return bool(self.keys or self.kinds or self.dropped or self.cleared)


@dataclass
class NsCache:
    """One namespace's committed kg state."""

    keys: dict[str, int]                       # name key (canonical name or alias) → entity id
    names: dict[int, str]                      # entity id → canonical name
    cards: dict[str, str]                      # declared predicate → cardinality
    subjects: Subjects                         # subject id → its current versions
    interned: dict[Any, Any] = field(default_factory=dict)  # one object per distinct time value (memory)

    @classmethod
    def build(cls, db: "Database", namespace: str) -> NsCache:
        rows = db.query("SELECT k.key, e.id, e.name FROM kg.entity_keys k JOIN kg.entities e ON e.id = k.entity_id "
                        "WHERE k.namespace = ?", [namespace])
        cards = dict(db.query("SELECT name, cardinality FROM kg.predicates WHERE namespace = ?", [namespace]))
        return cls(keys={k: i for k, i, _ in rows}, names={i: n for _, i, n in rows}, cards=cards,
                   subjects=Subjects(Columns(db, namespace)))

    def timelines(self, keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], list[Fact]]:
        """Mutable copies of the current versions of each (subject id, predicate)."""
        keys = list(keys)
        self.subjects.load((sid for sid, _ in keys), self.interned)
        stored = self.subjects.stored
        return {(sid, pred): [as_fact_row(t).fact(t) for t in stored(sid) if t[PREDICATE] == pred]
                for sid, pred in keys}

    def current_facts(self, sid: int, predicate: str | None, obj: tuple[str, int | None] | None,
                      when: datetime | None, limit: int,
                      after: tuple[datetime | None, int] | None = None) -> list[FactOut]:
        """kg.facts for one subject, with the SQL path's filters and order (see queries.facts)."""
        # filtered as held (stored tuples, by field index), so only the hits become FactRows (lookup latency)
        rows = [r for r in self.subjects.stored(sid)
                if (predicate is None or r[PREDICATE] == predicate)
                and (obj is None or r[OBJECT_VALUE] == obj[0] or (obj[1] is not None and r[OBJECT_ID] == obj[1]))
                and (when is None or ((r[VALID_FROM] is None or r[VALID_FROM] <= when)
                                      and (r[VALID_TO] is None or r[VALID_TO] > when)))]
        def key(r: tuple) -> tuple:
            return (r[VALID_FROM] is not None, r[VALID_FROM] or datetime.min, r[FACT_ID])
        rows.sort(key=key)
        if after is not None:  # the SQL path's keyset cursor
            cut = (after[0] is not None, after[0] or datetime.min, after[1])
            rows = [r for r in rows if key(r) > cut]
        name = self.names[sid]
        return [as_fact_row(r).out(sid, name) for r in rows[:limit]]

    def take(self, change: KgChange) -> None:
        """Apply one committed change."""
        if change.cleared:
            self.keys.clear()
            self.names.clear()
            self.cards.clear()
            for sid in list(self.subjects):
                del self.subjects[sid]
        if change.dropped:
            for key in [k for k, eid in self.keys.items() if eid in change.dropped]:
                del self.keys[key]
            for eid in change.dropped:
                self.names.pop(eid, None)
                self.subjects.pop(eid, None)
        for key, (eid, name, _) in change.keys.items():
            self.keys[key] = eid
            self.names[eid] = name
        self.cards.update(change.cards)
        by_subject: dict[int, dict[str, tuple[tuple, ...]]] = defaultdict(dict)
        for (sid, pred), rows in change.timelines.items():
            by_subject[sid][pred] = rows
        for sid, preds in by_subject.items():  # stored rows throughout: nothing is converted
            kept = [r for r in self.subjects.stored(sid) if r[PREDICATE] not in preds]
            kept += [r for rows in preds.values() for r in rows]
            if kept:
                self.subjects[sid] = tuple(kept)
            else:
                self.subjects.pop(sid, None)

    def digest(self) -> tuple:
        rows = sorted(((sid, *r) for sid, rs in self.subjects.items() for r in rs), key=lambda r: (r[0], r[3]))
        return (sorted(self.keys.items()), sorted(self.names.items()), sorted(self.cards.items()), len(rows),
                hashlib.sha256(repr(rows).encode()).hexdigest())


FACT_BYTES = 400  # one current fact version held as a tuple (ids, strings, times), an estimate for the budget
KEY_BYTES = 150  # one entity key and name


class FactCache(Mirror):
    """The fact cache of every namespace used since the runtime opened (a namespace is built at its first use)."""

    per_namespace = True

    def __init__(self, hold: Iterable[str] = ()) -> None:
        # ``hold``: namespaces the next ``load`` builds at once (a consistency check compares with a fresh load)
        self.namespaces: dict[str, NsCache | None] = dict.fromkeys(hold)

    def get(self, ctx: Context) -> NsCache:
        """The namespace's cache, built now if it is not held (the caller checked that only committed kg data
        is visible to this transaction)."""
        c = self.namespaces.get(ctx.namespace)
        if c is None:
            c = self.namespaces[ctx.namespace] = NsCache.build(ctx.db, ctx.namespace)
        return c

    def held(self, namespace: str) -> NsCache | None:
        return self.namespaces.get(namespace)

    def load(self, ctx: Context, namespace: str | None = None) -> None:
        """Build one namespace (the runtime loads a namespace at its first call; ADR 0016); without one, rebuild
        the namespaces held (a consistency check's ``hold``)."""
        for ns in [namespace] if namespace is not None else list(self.namespaces):
            self.namespaces[ns] = NsCache.build(ctx.db, ns)

    def evict(self, namespace: str) -> None:
        self.namespaces.pop(namespace, None)

    def size_bytes(self, namespace: str) -> int:
        c = self.namespaces.get(namespace)
        if c is None:
            return 0
        base = c.subjects.base
        columns = sum(v.nbytes for v in vars(base).values() if hasattr(v, "nbytes")) if base is not None else 0
        written = sum(len(rows) for rows in c.subjects.over.values() if isinstance(rows, tuple))
        return columns + FACT_BYTES * written + KEY_BYTES * len(c.keys)

    def apply(self, changes: Sequence[Change]) -> None:
        for ch in changes:
            c = self.namespaces.get(ch.namespace) if ch.kind == WRITE else None
            if c is not None:  # a namespace not held is built from the store, changes included, when used
                c.take(ch.data)

    def digest(self) -> Any:
        return {ns: c.digest() for ns, c in sorted(self.namespaces.items()) if c is not None}

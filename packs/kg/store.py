"""One call's access to kg's stored state: :class:`KgStore` owns the choice between the fact cache and SQL, and
the call's pending change (adr/0014-kg-scale.md).

The cache (:mod:`palimpsest_memory.packs.kg.cache`) shows committed data only. So a read uses it unless this transaction
has uncommitted kg writes in the namespace (``ctx.uncommitted``), and a write first takes what it needs from it (or
from SQL, by the same rule) and then records its :class:`KgChange`, which it fills as it writes and the runtime
hands to the mirrors after commit. Verbs call the store's methods and never make that choice themselves.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from palimpsest_memory.runtime import Context

from palimpsest_memory.packs.kg.cache import WRITE, KgChange, NsCache
from palimpsest_memory.packs.kg.cache_columns import LOAD_COLUMNS
from palimpsest_memory.packs.kg.detect import Detector
from palimpsest_memory.packs.kg.models import FactOut, name_key
from palimpsest_memory.packs.kg.sql_reads import lookup_keys, read_facts, tx_filter, valid_filter
from palimpsest_memory.packs.kg.fact_rows import stored_row, subject_rows
from palimpsest_memory.packs.kg.timeline import Claim, Fact

EntityIds = dict[str, tuple[int, str]]  # name key → (entity id, canonical name)


class KgStore:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._mirror = ctx.state.facts
        self.change: KgChange | None = None  # set by begin_write
        self._cache: NsCache | None = None    # what this write may use (None: SQL)

    # -- reads ---------------------------------------------------------------------------------------------------
    def readable(self) -> NsCache | None:
        """The namespace's cache for a read, or None while this transaction has uncommitted kg writes (use SQL)."""
        if self.ctx.uncommitted(WRITE) or self.ctx.mirrors_stale():
            return None
        return self._mirror.get(self.ctx)

    def facts(self, subject: str | None, predicate: str | None, obj: str | None, as_of: datetime | None,
              known_at: datetime | None, include_superseded: bool, limit: int,
              after: tuple[datetime | None, int] | None = None) -> list[FactOut]:
        """kg.facts: from the cache for a current-belief query about one subject, else from SQL. ``after``: a keyset
        cursor (valid_from, fact_id) in the answer's order (unknown starts first); only facts after it."""
        ctx = self.ctx
        c = self.readable() if subject is not None and known_at is None else None
        if c is not None:  # the current versions of one subject are in memory: answer without SQL
            sid = c.keys.get(name_key(subject))
            if sid is None:
                return []
            hit = None if obj is None else (obj, c.keys.get(name_key(obj)))
            when = None if as_of is None and include_superseded else (as_of or ctx.now())
            return c.current_facts(sid, predicate, hit, when, limit, after)
        args: list[Any] = []
        where = [tx_filter(known_at, args)]
        if subject is not None:
            found = lookup_keys(ctx, [name_key(subject)]).get(name_key(subject))
            if found is None:
                return []
            where.append("f.subject_id = ?")
            args.append(found[0])
        if predicate is not None:
            where.append("f.predicate = ?")
            args.append(predicate)
        if obj is not None:
            found = lookup_keys(ctx, [name_key(obj)]).get(name_key(obj))
            where.append("(f.object_value = ? OR f.object_id = ?)")
            args.extend([obj, found[0] if found else None])
        if as_of is not None or not include_superseded:
            where.append(valid_filter(as_of or known_at or ctx.now(), args))
        if after is not None:  # portable SQL: NULL starts sort first
            if after[0] is None:
                where.append("((f.valid_from IS NULL AND f.fact_id > ?) OR f.valid_from IS NOT NULL)")
                args.append(after[1])
            else:
                where.append("(f.valid_from > ? OR (f.valid_from = ? AND f.fact_id > ?))")
                args.extend([after[0], after[0], after[1]])
        return read_facts(ctx, " AND ".join(where), args, limit=limit)

    def detector(self) -> Detector:
        return self.ctx.state.detectors.detector(self.ctx)

    # -- writes --------------------------------------------------------------------------------------------------
    def begin_write(self, need_cache: bool = True) -> KgChange:
        """Start this call's change (before its first SQL write). ``need_cache``: build the namespace's cache if
        it is not held yet (bulk assertions want it; single writes use it only when it is already there)."""
        ctx = self.ctx
        if ctx.uncommitted(WRITE) or ctx.mirrors_stale():  # an earlier write of this transaction: not in the cache
            self._cache = None
        else:
            self._cache = self._mirror.get(ctx) if need_cache else self._mirror.held(ctx.namespace)
        self.change = KgChange()
        ctx.record_change(WRITE, self.change)
        return self.change

    def entity_ids(self, wanted: list[tuple[str, str]]) -> EntityIds:
        """key → (entity id, canonical name) for each ``(name, kind)``, creating unknown ones (first kind wins)."""
        by_key: dict[str, tuple[str, str]] = {}
        for name, kind in wanted:
            by_key.setdefault(name_key(name), (name, kind))
        c = self._cache
        if c is not None:
            out = {k: (c.keys[k], c.names[c.keys[k]]) for k in by_key if k in c.keys}
        else:
            out = {k: (v[0], v[1]) for k, v in lookup_keys(self.ctx, by_key).items()}
        missing = [k for k in by_key if k not in out]
        for key, eid in zip(missing, self.create_entities([by_key[k] for k in missing])):
            out[key] = (eid, by_key[key][0])
        return out

    def create_entities(self, items: list[tuple[str, str]]) -> list[int]:
        """Insert new entities ``(name, kind)`` (names not known yet, distinct keys) and their name keys."""
        if not items:
            return []
        ctx, now = self.ctx, self.ctx.now()
        ids = [r[0] for r in ctx.db.query("SELECT nextval('kg.entity_seq') FROM range(?)", [len(items)])]
        names = [n for n, _ in items]
        keys = [name_key(n) for n in names]
        ctx.db.execute(
            "INSERT INTO kg.entities SELECT unnest(?::BIGINT[]), ?, unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), ?, ?",
            [ids, ctx.namespace, names, [k for _, k in items], now, now])
        ctx.db.execute(
            "INSERT INTO kg.entity_keys SELECT ?, unnest(?::VARCHAR[]), unnest(?::BIGINT[]), unnest(?::VARCHAR[]), "
            "true, ?", [ctx.namespace, keys, ids, names, now])
        self.change.keys.update({k: (i, n, kind) for k, i, (n, kind) in zip(keys, ids, items)})
        return ids

    def add_aliases(self, entity: tuple[int, str, str], aliases: dict[str, str]) -> None:
        """New keys ``{key: alias text}`` for ``entity`` = (id, canonical name, kind)."""
        ctx = self.ctx
        ctx.db.execute("INSERT INTO kg.entity_keys SELECT ?, unnest(?::VARCHAR[]), ?, unnest(?::VARCHAR[]), false, ?",
                       [ctx.namespace, list(aliases), entity[0], list(aliases.values()), ctx.now()])
        self.change.keys.update(dict.fromkeys(aliases, entity))

    def set_kind(self, entity_id: int, kind: str) -> None:
        self.ctx.db.execute("UPDATE kg.entities SET kind = ?, updated_at = ? WHERE namespace = ? AND id = ?",
                            [kind, self.ctx.now(), self.ctx.namespace, entity_id])
        self.change.kinds[entity_id] = kind

    def cardinalities(self, predicates: set[str]) -> dict[str, str]:
        if self._cache is not None:
            known = self._cache.cards
        else:
            known = dict(self.ctx.db.query(
                "SELECT name, cardinality FROM kg.predicates WHERE namespace = ? AND name IN "
                "(SELECT unnest(?::VARCHAR[]))", [self.ctx.namespace, sorted(predicates)]))
        return {p: known.get(p, self.ctx.settings.default_cardinality) for p in predicates}

    def set_cardinality(self, predicate: str, cardinality: str) -> None:
        self.change.cards[predicate] = cardinality

    def timelines(self, keys: set[tuple[int, str]]) -> dict[tuple[int, str], list[Fact]]:
        """Copies of the transaction-current versions of every (subject_id, predicate) in ``keys``."""
        if self._cache is not None:
            return self._cache.timelines(keys)
        out: dict[tuple[int, str], list[Fact]] = {k: [] for k in keys}
        rows = self.ctx.db.query(f"SELECT {LOAD_COLUMNS} FROM kg.facts WHERE namespace = ? AND retracted_at IS NULL "
                                 "AND subject_id IN (SELECT unnest(?::BIGINT[]))",
                                 [self.ctx.namespace, sorted({sid for sid, _ in keys})])
        for sid, row in subject_rows(rows):
            if (sid, row.predicate) in out:
                out[(sid, row.predicate)].append(row.fact())
        return out

    def claims(self, keys: set[tuple[int, str]]) -> dict[tuple[int, str], list[Claim]]:
        """The live claims of every (subject_id, predicate) in ``keys`` (SQL: claims are not cached)."""
        out: dict[tuple[int, str], list[Claim]] = {k: [] for k in keys}
        if not keys:
            return out
        rows = self.ctx.db.query(
            "SELECT subject_id, predicate, object_id, object_value, object_text, valid_from, valid_to, confidence, "
            "coexisting, claim_id FROM kg.claims WHERE namespace = ? AND retracted_at IS NULL "
            "AND subject_id IN (SELECT unnest(?::BIGINT[]))", [self.ctx.namespace, sorted({s for s, _ in keys})])
        for sid, pred, oid, oval, otext, vf, vt, conf, coex, cid in rows:
            if (sid, pred) in out:
                out[(sid, pred)].append(Claim(f"e:{oid}" if oid is not None else f"v:{oval}", oid, oval, otext, vf,
                                              vt, conf, coex, cid))
        return out

    def claim_ids(self, n: int) -> list[int]:
        return [r[0] for r in self.ctx.db.query("SELECT nextval('kg.claim_seq') FROM range(?)", [n])]

    def insert_claims(self, claims: list[tuple[int, str, Claim]], now: datetime) -> None:
        """One INSERT of this call's new claims (set-wise)."""
        if not claims:
            return
        cols = list(zip(*((c.claim_id, sid, pred, c.object_id, c.object_value, c.object_text, c.valid_from,
                           c.valid_to, c.confidence, c.coexisting) for sid, pred, c in claims)))
        types = ("BIGINT", "BIGINT", "VARCHAR", "BIGINT", "VARCHAR", "VARCHAR", "TIMESTAMP", "TIMESTAMP", "DOUBLE",
                 "BOOLEAN")
        sel = ", ".join(f"unnest(?::{t}[])" for t in types)
        self.ctx.db.execute(
            "INSERT INTO kg.claims (claim_id, subject_id, predicate, object_id, object_value, object_text, valid_from, "
            f"valid_to, confidence, coexisting, namespace, recorded_at) SELECT *, ?, ? FROM (SELECT {sel})",
            [self.ctx.namespace, now, *map(list, cols)])

    def retract_claims(self, claim_ids: list[int], now: datetime) -> None:
        if claim_ids:
            self.ctx.db.execute("UPDATE kg.claims SET retracted_at = ? WHERE namespace = ? AND claim_id IN "
                                "(SELECT unnest(?::BIGINT[]))", [now, self.ctx.namespace, claim_ids])

    def set_timeline(self, subject_id: int, predicate: str, facts: Iterable[Fact]) -> None:
        """The complete current versions of (subject, predicate) once this call's SQL is written."""
        held = self._mirror.held(self.ctx.namespace)
        interned = held.interned if held is not None else {}
        self.change.timelines[(subject_id, predicate)] = tuple(stored_row(predicate, f, interned) for f in facts)

"""The writes of a memory index (:class:`palimpsest_memory.packs.memory.engine.index.MemoryIndex`): committed notes
added as columns, thread links and episodes, vectors, in-place edits and forgetting. Each bumps the index's
``version``, which is what recall's kept values (recall_cache.py) are checked against.

A part of the index, not a half of it: :class:`IndexWrites` is given its index and changes it through what the index
and its parts offer in the open (the slots' ``assign``, the columns, the rows, the links, the legs), and keeps only
its own helpers; the index's write methods call it.
"""
from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from palimpsest_memory.packs.memory.engine.bags import expanded
from palimpsest_memory.packs.memory.engine.context_signals import render_dated
from palimpsest_memory.packs.memory.engine.rowstore import (NAT, TYPES, Coded, NoteRow, from_micros, objects, per_value,
                                                    seconds_of, to_micros)
from palimpsest_memory.packs.memory.engine.text import tokenize
from palimpsest_memory.packs.memory.engine.threads import Episodes
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex

EPOCH = datetime(1970, 1, 1)
KINDS = ("decision", "milestone", "problem", "preference", "emotional")
KIND_CODE = {k: i + 1 for i, k in enumerate(KINDS)}  # 0: no kind (or one this index does not know)


def seconds(ts: datetime | None) -> float:
    return math.nan if ts is None else (ts - EPOCH).total_seconds()


def index_text(content: str, occurred_at: datetime) -> str:
    """What the legs see of a note: its words plus its date in words ("8 May 2023"), so dated queries match."""
    return render_dated(content, occurred_at)


class IndexWrites:
    """The writes of a MemoryIndex (committed changes only), to its columns, rows, links, legs and ``version``."""

    FIELDS = ("id", "namespace", "content", "memory_type", "kind", "scope", "thread", "tags", "salience",
              "decay_factor", "occurred_at", "created_at", "superseded_at", "archived_at", "kind_source", "source_id",
              "key", "superseded_by")  # NoteRow's fields; a batch for add_columns holds one sequence per field

    def __init__(self, index: Any) -> None:
        self.index = index  # the MemoryIndex this part writes to (index.py imports this module, not the reverse)

    def add(self, rows: Sequence[NoteRow], vectors: dict[str, np.ndarray], *, text_index: bool = True) -> None:
        """Index committed notes. ``text_index=False``: their BM25 rows are already in the index's ``bm25`` (restored
        from a snapshot), so only the columns and thread links are built — no tokenising."""
        if not rows:
            return
        batch = {f: [getattr(r, f) for r in rows] for f in self.FIELDS}
        self.add_columns(batch, vectors, text_index=text_index,
                         tokens=[self.tokens_of(r) for r in rows] if text_index else None)

    def add_columns(self, b: dict[str, Any], vectors: dict[str, np.ndarray] | None = None, *,
                    text_index: bool = True, tokens: list[list[str]] | None = None, defer_graph: bool = False) -> None:
        """Index committed notes given as columns (``FIELDS``: lists, arrays, or what ``fetchnumpy`` returns, NULLs
        masked): a load fills the index from whole batches without a Python object per note (rowstore.py).
        ``tokens``: each note's own BM25 tokens when the caller has them; ``defer_graph``: their vectors' graph
        work waits (``VectorIndex.add(defer=True)``)."""
        ix = self.index
        ids = np.asarray(b["id"], dtype=np.int64)
        if not ids.size:
            return
        if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # id order: what a load and the links expect
            order = np.argsort(ids, kind="stable")
            b = {k: (v if isinstance(v, str) else (v[order] if isinstance(v, (np.ndarray, Coded))
                                                   else [v[j] for j in order])) for k, v in b.items()}
            tokens = None if tokens is None else [tokens[j] for j in order]
            ids = ids[order]
        ix.version += 1
        ix.dirty = True
        c, rc, rows = ix.cols, ix.rows.cols, ix.rows
        at = ix.space.assign(ids)
        again = np.flatnonzero(rc["held"][at])
        for j in again.tolist():  # an id held already (a re-add): unlink it first, as the links did
            ix.expander.links.remove(int(ids[j]))
        rows.count += ids.size - again.size
        ns = b["namespace"]
        ns_codes = np.full(ids.size, ix.namespaces.get(ns), dtype=np.int32) if isinstance(ns, str) else \
            ix.namespaces.many(ns)
        content, scope, thread = objects(b["content"]), objects(b["scope"]), objects(b["thread"])
        kind = b["kind"]
        occ, cre = to_micros(b["occurred_at"]), to_micros(b["created_at"])
        sup, arc = to_micros(b["superseded_at"]), to_micros(b["archived_at"])
        by = b["superseded_by"]
        if isinstance(by, np.ma.MaskedArray):
            by = np.where(np.ma.getmaskarray(by), -1, np.asarray(by.data, dtype=np.int64))
        else:
            by = np.array([-1 if v is None else v for v in by], dtype=np.int64)
        # the row columns (rowstore.NoteRows) and the index's
        rc["held"][at] = True
        rc["content"][at] = content
        rc["source_id"][at], rc["key"][at] = objects(b["source_id"]), objects(b["key"])
        rc["kind"][at] = rows.kinds.many(kind)
        rc["ksrc"][at] = rows.kind_sources.many(b["kind_source"])
        raw = rows.threads.many(thread)
        rc["thread"][at] = raw
        rc["occurred"][at], rc["created"][at], rc["superseded"][at], rc["archived"][at] = occ, cre, sup, arc
        rc["superseded_by"][at] = by
        rows.text_chars += sum(map(len, content))
        c["alive"][at] = arc == NAT
        c["archived"][at] = arc != NAT
        c["ns"][at] = ns_codes
        c["mtype"][at] = per_value(b["memory_type"], lambda t: TYPES.index(t) + 1)
        c["kind"][at] = per_value(kind, lambda k: KIND_CODE.get(k, 0) if k is not None else 0)
        c["scope"][at] = scope_codes = ix.scopes.many(scope)
        c["salience"][at] = np.asarray(b["salience"], dtype=np.float64)
        c["decay"][at] = np.asarray(b["decay_factor"], dtype=np.float64)
        c["occurred"][at], c["created"][at], c["superseded"][at] = seconds_of(occ), seconds_of(cre), seconds_of(sup)
        c["prefix"][at] = 0  # hashed when first read (prefixes): a recall reads a few hundred, a load writes all
        tags = b["tags"]
        if isinstance(tags, np.ma.MaskedArray):  # a load's: NULL where a note has no tags (most notes)
            maybe = np.flatnonzero(~np.ma.getmaskarray(tags)).tolist()
            tags = tags.data
        else:
            maybe = [j for j, t in enumerate(tags) if t is not None]
        for j in maybe:
            if not len(tags[j]):
                continue
            t = tuple(tags[j])
            i = int(ids[j])
            rows.tags[i], ix.tags[i] = t, frozenset(t)
        # thread keys: the caller's thread in its scope, else the inferred episode (codes in id order of first use)
        keys = self._thread_codes(ids, raw, ns_codes, scope_codes, c["occurred"][at])
        changed_old = ix.expander.links.add_sorted(at, ids, keys)
        if text_index:
            if tokens is None:
                tokens = [self._tokens(x, from_micros(int(o))) for x, o in zip(content, occ.tolist())]
            ix.expander.keep_tokens(zip(ids.tolist(), tokens))
            prev = c["prev"][at]
            changed: dict[int, None] = {}
            for i, p_ in zip(ids.tolist(), prev.tolist()):
                changed[i] = None
                if p_ >= 0:
                    changed[p_] = None
            for j in changed_old.tolist():
                changed[j] = None
            notes = np.fromiter(changed, dtype=np.int64, count=len(changed))
            at_notes = ix.slots(notes)
            bags = expanded(notes, c["prev"][at_notes], c["next"][at_notes], ix.expander.tokens,
                            ix.expander.weight)
            # The token lists are cached for this batch only: a later bag that needs one (the next batch's first
            # note's predecessor, an older note arriving, a forget or an edit) re-tokenises that note from its row,
            # about one note per thread per batch. Kept for every note they were a list per note (~300 B) held for
            # the process's life, and most of what the cyclic GC walked: 3-4 s of GC per 100k notes ingested at
            # 100k-400k (bench/RESULTS.md, issue 18).
            ix.expander.forget_tokens()
            ix.bm25.add_flat(notes, bags)
            ix.bm25.set_groups(notes, self.group_of(at_notes))
        else:  # restored rows: their scope groups are not in the snapshot
            ix.bm25.set_groups(ids, self.group_of(at))
        for model, matrix in (vectors or {}).items():
            self.add_vectors(model, ids, matrix, defer=defer_graph)

    def _thread_codes(self, ids: np.ndarray, raw: np.ndarray, ns: np.ndarray, scope: np.ndarray,
                      occurred: np.ndarray) -> np.ndarray:
        """The ``threads`` code of each note's thread key (``thread_key``) from its raw thread, namespace and scope
        codes: the caller's thread in its scope, else the inferred episode. A key is made once per distinct
        (namespace, scope, thread) of the batch and once per episode, not once a note (a load passes a million),
        and the codes are created in id order of first use, as a live index makes them."""
        ix = self.index
        nsv, scv, tv = ix.namespaces.values, ix.scopes.values, ix.rows.threads.values
        firsts: list[tuple[int, Any]] = []  # (row of first use, key): the threaded rows' groups, then the episodes
        has = np.flatnonzero(raw)
        group = np.zeros(ids.size, dtype=np.int64)
        if has.size:
            order = has[np.lexsort((raw[has], scope[has], ns[has]))]  # threaded rows by (ns, scope, thread), then row
            new = np.r_[True, (np.diff(ns[order]) != 0) | (np.diff(scope[order]) != 0) | (np.diff(raw[order]) != 0)]
            group[order] = np.cumsum(new) - 1
            firsts += [(j, (nsv[int(ns[j])], scv[int(scope[j])], tv[int(raw[j])]))  # a group's first row (stable)
                       for j in order[new].tolist()]
        groups = len(firsts)
        bare = np.flatnonzero(raw == 0)
        episode, episodes, begins = ix.episodes.batch(
            ids[bare], self.scope_group(ns[bare], scope[bare]), lambda g: (nsv[g >> 32], scv[g & 0xFFFFFFFF]),
            occurred[bare])
        firsts += zip(bare[begins].tolist(), episodes)
        code = np.zeros(len(firsts), dtype=np.int32)  # per group, then per episode
        get = ix.threads.get
        for f in sorted(range(len(firsts)), key=lambda f: firsts[f][0]):
            code[f] = get(firsts[f][1])
        out = np.zeros(ids.size, dtype=np.int32)
        out[has] = code[group[has]]
        if episodes:
            out[bare] = np.where(episode >= 0, code[groups + episode], 0)
        return out

    def reinfer_episodes(self) -> None:
        """Infer every thread-less note's episode again, in id order (what a rebuild does), and re-link and
        re-index the notes whose neighbours changed. Run when a thread-less note's scope is edited; O(notes)."""
        ix = self.index
        ix.version += 1
        ix.episodes = Episodes(ix.episodes.gap)
        c, rc = ix.cols, ix.rows.cols
        n = ix.space.used
        slots = np.flatnonzero(rc["held"][:n] & (rc["thread"][:n] == 0))  # held notes without a thread
        slots = slots[np.argsort(ix.slot_id[slots], kind="stable")]  # in id order
        keys: dict[int, Hashable] = {}
        for at in slots.tolist():
            i = int(ix.slot_id[at])
            keys[i] = ix.episodes.key(i, ix.namespaces.values[int(c["ns"][at])],
                                        ix.scopes.values[int(c["scope"][at])], float(rc["occurred"][at]) / 1e6)
        self._relink(keys)

    def _relink(self, keys: dict[int, Hashable]) -> None:
        """Move each note to its thread key's thread, where that changed, and re-index the notes whose neighbours
        changed (their bags hold their neighbours' words)."""
        ix = self.index
        links, c = ix.expander.links, ix.cols
        changed: set[int] = set()
        for i, key in keys.items():
            if links.thread_of(i) == key:
                continue
            changed.update(j for j in (i, *links.neighbours(i)) if j is not None)
            links.remove(i)
            links.add(i, key)
            c["thread"][ix.slot(i)] = ix.threads.get(key)
            changed.update(j for j in (i, *links.neighbours(i)) if j is not None)
        if not changed:
            return
        ix.dirty, ix.appended_only = True, False
        self._index_bags({j: ix.expander.bag(j) for j in changed})
        self._link(changed)

    @staticmethod
    def scope_group(ns: Any, scope: Any) -> Any:
        """The BM25 group (bm25_scope.py) of a namespace code and a scope code, or of arrays of them: one int64."""
        return (np.asarray(ns, dtype=np.int64) << 32) | np.asarray(scope, dtype=np.int64)

    def group_of(self, at: np.ndarray) -> np.ndarray:
        """The BM25 group of each slot's note: its namespace and scope."""
        ix = self.index
        return self.scope_group(ix.cols["ns"][at], ix.cols["scope"][at])

    def _index_bags(self, bags: dict[int, Any]) -> None:
        """(Re-)index notes' BM25 bags, each row in its note's scope group."""
        ix = self.index
        ids = np.fromiter(bags, dtype=np.int64, count=len(bags))
        ix.bm25.add_weighted(ids, list(bags.values()))
        ix.bm25.set_groups(ids, self.group_of(ix.slots(ids)))

    def _link(self, notes: Iterable[int]) -> None:
        """Write the prev/next columns (thread neighbours, as note ids) of ``notes``."""
        ix = self.index
        links = ix.expander.links
        js, ps, ns = [], [], []
        for j in notes:
            p, n = links.neighbours(j)
            js.append(j)
            ps.append(-1 if p is None else p)
            ns.append(-1 if n is None else n)
        if js:
            at = ix.slots(np.array(js, dtype=np.int64))
            keep = at > 0  # never write slot 0
            ix.cols["prev"][at[keep]] = np.array(ps, dtype=np.int64)[keep]
            ix.cols["next"][at[keep]] = np.array(ns, dtype=np.int64)[keep]

    def thread_key(self, r: NoteRow) -> Hashable | None:
        """A note's thread as the index links it: the caller's ``thread`` in the note's scope (the same name in
        two scopes is two threads: importers and agents reuse names like ``session_1`` or ``main``), else the
        inferred episode of its scope (``threads.Episodes``; None when inference is off)."""
        ix = self.index
        if r.thread is not None:
            return (r.namespace, r.scope, r.thread)
        return ix.episodes.key(r.id, r.namespace, r.scope, seconds(r.occurred_at))

    @staticmethod
    def tokens_of(r: NoteRow) -> list[str]:
        """The BM25 tokens of a note's own text (dated), before thread expansion."""
        return tokenize(index_text(r.content, r.occurred_at))

    @staticmethod
    def _tokens(content: str, occurred_at: datetime) -> list[str]:
        return tokenize(index_text(content, occurred_at))

    def add_vectors(self, model: str, ids: np.ndarray, matrix: np.ndarray, *, build: bool = True,
                    defer: bool = False) -> None:
        ix = self.index
        ix.version += 1
        index = ix.vectors.get(model)
        if index is None:
            index = ix.vectors[model] = VectorIndex(matrix.shape[1], ann=ix.ann)
        index.add(ids, matrix, build=build, defer=defer)

    def adopt_vectors(self, model: str, ids: np.ndarray, matrix: np.ndarray) -> None:
        """A load's vectors: ``matrix`` (normalised; its first ``len(ids)`` rows, maybe mapped from a file, with spare
        rows after them) becomes the model's matrix as it is, with no copy."""
        ix = self.index
        ix.version += 1
        ix.vectors.pop(model, None)
        vi = ix.vectors[model] = VectorIndex(matrix.shape[1], ann=ix.ann)
        vi.adopt(ids, matrix)

    def set_superseded(self, note_id: int, when: datetime | None, by: int | None = None) -> None:
        ix = self.index
        ix.version += 1
        at = ix.slot(note_id)
        if at:
            ix.cols["superseded"][at] = seconds(when)
        ix.rows.set(note_id, "superseded_at", when)
        ix.rows.set(note_id, "superseded_by", by)

    def set_metadata(self, note_id: int, fields: Iterable[tuple[str, Any]]) -> None:
        """Apply memory.update's in-place edits (tags, salience, decay_factor, kind, scope) to the row and columns."""
        ix = self.index
        ix.version += 1
        if note_id not in ix.rows:
            return
        c, at = ix.cols, ix.slot(note_id)
        for name, value in fields:
            ix.rows.set(note_id, name, value)
            if name == "tags":
                if value:
                    ix.tags[note_id] = frozenset(value)
                else:
                    ix.tags.pop(note_id, None)
            elif name == "salience":
                c["salience"][at] = value
            elif name == "decay_factor":
                c["decay"][at] = value
            elif name == "kind":
                c["kind"][at] = KINDS.index(value) + 1 if value in KINDS else 0
            elif name == "scope":
                c["scope"][at] = ix.scopes.get(value)
                ix.bm25.set_groups([note_id], self.group_of(np.array([at])))
                raw = int(ix.rows.cols["thread"][at])
                if raw:  # its thread is the caller's thread in its scope: now the new scope's
                    self._relink({note_id: self.thread_key(ix.rows[note_id])})
                elif ix.episodes.gap > 0:
                    self.reinfer_episodes()  # its episode came from its scope: infer as a rebuild would

    def set_archived(self, note_id: int, when: datetime | None) -> None:
        ix = self.index
        ix.version += 1
        at = ix.slot(note_id)
        if at:
            ix.cols["archived"][at] = when is not None
            ix.cols["alive"][at] = when is None
        ix.rows.set(note_id, "archived_at", when)

    def forget(self, note_ids: Iterable[int]) -> None:
        """Erase notes (memory.forget): their rows, columns, tags, BM25 postings and vectors go, and their thread
        neighbours are linked and re-expanded as if the notes had never been (what a fresh load builds)."""
        ix = self.index
        gone = [int(i) for i in note_ids if int(i) in ix.rows]
        if not gone:
            return
        ix.version += 1
        ix.dirty, ix.appended_only = True, False
        c, rc = ix.cols, ix.rows.cols
        gone_at = ix.slots(np.array(gone, dtype=np.int64))
        threadless = bool(np.any(rc["thread"][gone_at] == 0))  # their episodes are inferred (threads.py)
        rebag: dict[int, Any] = {}
        for i, at in zip(gone, gone_at.tolist()):
            ix.rows.text_chars -= len(rc["content"][at])
            rc["held"][at] = False
            rc["content"][at] = rc["source_id"][at] = rc["key"][at] = None
            ix.rows.count -= 1
            ix.tags.pop(i, None)
            ix.rows.tags.pop(i, None)
            rebag.pop(i, None)
            for j, bag in ix.expander.remove(i).items():
                rebag[j] = bag
            # its slot stays, dead, with the defaults slot 0 holds (an id keeps its slot)
            c["alive"][at] = c["archived"][at] = False
            for name in ("ns", "mtype", "kind", "scope", "thread", "salience", "decay", "occurred", "created",
                         "prefix"):
                c[name][at] = 0
            c["superseded"][at] = math.nan
            c["prev"][at] = c["next"][at] = -1
        ix.bm25.remove(gone)
        ix.bm25.own_postings()  # memory.forget deletes the snapshot files: none may stay mapped (ADR 0018)
        rebag = {j: b for j, b in rebag.items() if j in ix.rows}
        if rebag:  # neighbours' bags held the forgotten notes' words: re-index them without
            self._index_bags(rebag)
        self._link(rebag)
        for model, index in list(ix.vectors.items()):
            index.remove(gone)
            index.own_rows()
            if not len(index):  # a fresh load holds no index for a model without vectors
                del ix.vectors[model]
        if threadless:  # a fresh load infers the episodes without the forgotten notes: so must the live index
            self.reinfer_episodes()

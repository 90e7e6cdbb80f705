"""The in-memory search state of the memory pack: note metadata as columns, BM25, vectors, thread links.

This module is the data structure only; :mod:`palimpsest_memory.packs.memory.index_mirror` makes it a mirror of the
store (rebuilt when a runtime opens, kept in step with each committed write through the runtime's mirror seam), so
it never holds a note that was rolled back and never needs a full rebuild per insert. Arrays are indexed by
slot: a dense per-index position given to each note when it is added (``slot_id`` maps slots back to note ids,
``slots`` maps ids to slots), so an index holds columns for its own notes only, however high the store-wide note
ids of its namespace run (ADR 0016). Every filter is a numpy mask over the slots: namespaces are separated by that
mask before any leg ranks a note. Slot 0 holds no note: an id the index does not hold reads its defaults there.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.context_signals import ThreadExpander
from palimpsest_memory.packs.memory.engine.idrows import IdRows
from palimpsest_memory.packs.memory.engine.index_writes import KINDS, IndexWrites, seconds
from palimpsest_memory.packs.memory.engine.rowstore import TYPES, Codes, NoteRows, SlotLinks
from palimpsest_memory.packs.memory.engine.threads import Episodes
from palimpsest_memory.packs.memory.engine.vector_graph import Ann
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex

# the columns of a note, in NoteRow's field order
FULL_COLUMNS = ("id, namespace, content, memory_type, kind, scope, thread, tags, salience, decay_factor, "
                "occurred_at, created_at, superseded_at, archived_at, kind_source, source_id, key, superseded_by")


class Allowed:
    """A recall mask over an index's slots, asked by note id: what the BM25 and vector legs and the walk take as
    ``allowed`` (``allows`` for an array of ids, ``in`` for one). The answer for a leg's whole row-id array
    (``allows(x._ids[:n])``, asked every recall) is kept: the mask read through the row→slot map once per array.
    recall_cache.py keeps an Allowed per filter set until the index's next write, which is when those arrays change."""

    __slots__ = ("index", "mask", "rows", "_count")

    def __init__(self, index: "MemoryIndex", mask: np.ndarray) -> None:
        self.index, self.mask = index, mask
        self.rows: dict[tuple[int, int], np.ndarray] = {}
        self._count: int | None = None

    @property
    def count(self) -> int:
        """How many notes pass (counted once: the mask does not change while it is kept)."""
        if self._count is None:
            self._count = int(np.count_nonzero(self.mask))
        return self._count

    def allows(self, ids: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Which of ``ids`` pass; with ``rows``, which of ``ids[rows]`` (``ids`` a whole row-id array)."""
        base = ids.base
        if base is None or ids.size < 4096:  # not a leg's row array: answered as asked
            slots = self.index.row_slots(np.asarray(ids, dtype=np.int64))
            return self.mask[slots if rows is None else slots[rows]]
        key = (id(base), ids.size)
        ok = self.rows.get(key)
        if ok is None:
            if len(self.rows) >= 4:
                self.rows.clear()
            ok = self.rows[key] = self.mask[self.index.row_slots(ids)]
            ok.flags.writeable = False
        return ok if rows is None else ok[rows]

    def __contains__(self, note_id: int) -> bool:
        return bool(self.mask[self.index.slot(note_id)])


class Column:
    """One column of an index read by note id (``column[ids]``), for code written against id-indexed arrays."""

    __slots__ = ("index", "name")

    def __init__(self, index: "MemoryIndex", name: str) -> None:
        self.index, self.name = index, name

    def __getitem__(self, ids: Any) -> np.ndarray:
        if self.name == "prefix":
            return self.index.prefixes(self.index.slots(ids))
        return self.index.cols[self.name][self.index.slots(ids)]


class MemoryIndex(IndexWrites):
    """The columns, the legs and the links of one namespace's notes; the writes are in :class:`IndexWrites`."""

    COLUMNS = {"alive": bool, "ns": np.int32, "mtype": np.int8, "kind": np.int8, "scope": np.int32,
               "thread": np.int32, "salience": np.float64, "decay": np.float64, "occurred": np.float64,
               "created": np.float64, "superseded": np.float64, "archived": bool, "prefix": np.int64,
               "prev": np.int64, "next": np.int64}  # prev/next: thread neighbours, -1 for none

    def __init__(self, *, k1: float, b: float, max_query_terms: int, expansion_weight: float,
                 prefix_chars: int = 0, ann: Ann = Ann(), episode_gap_seconds: float = 0.0) -> None:
        self.prefix_chars = prefix_chars  # near-duplicate detection: a hash of each note's opening characters
        self.ann = ann
        self.bm25 = BM25Index(k1=k1, b=b, max_query_terms=max_query_terms)
        self.expander = ThreadExpander(weight=expansion_weight, tokens_of=lambda i: self.tokens_of(self.rows[i]))
        self.expander.links = SlotLinks(self)  # the links live in the prev/next/thread columns (rowstore.py)
        self.episodes = Episodes(episode_gap_seconds)  # the thread of a note remembered without one (ADR 0008)
        self.dirty = False  # changed since it was loaded: a snapshot (snapshot.py) is worth writing
        # +1 on every write below; what recall derives from the index and keeps (recall_cache.py: the notes' own
        # information, the filter masks) is valid while it holds
        self.version = 0
        self.derived: dict[str, Any] = {}
        # the stored BM25 snapshot covers the first saved_notes notes, and only notes were added since (snapshot.py)
        self.saved_notes, self.appended_only = 0, False
        self.vectors: dict[str, VectorIndex] = {}
        self.namespaces, self.scopes, self.threads = Codes(), Codes(), Codes()
        self.tags: dict[int, frozenset[str]] = {}
        self.rows = NoteRows(self)  # every note, as columns, for answers without a SQL round trip
        self._cap = 0
        self.cols: dict[str, np.ndarray] = {}  # indexed by slot
        self.slot_id = np.zeros(0, dtype=np.int64)  # slot -> note id (-1: slot 0, no note)
        self._n = 1  # slots in use, slot 0 included
        self._ascending = True  # slot_id[1:_n] increases: ids_of needs no sort
        self._slot_of = IdRows()  # note id -> slot (idrows.py: the BM25 and vector indexes' id -> row map)
        self._row_cache: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}  # see row_slots
        self._grow(64)

    def reserve(self, notes: int) -> None:
        """Room for ``notes`` more notes (a load: one allocation instead of doubling)."""
        self._grow(self._n + notes)

    def _grow(self, need: int) -> None:
        if need <= self._cap:
            return
        cap = max(need, self._cap * 2)
        for name, dtype in self.COLUMNS.items():
            new = np.zeros(cap, dtype=dtype)
            if name == "superseded":
                new[:] = np.nan  # never superseded
            elif name in ("prev", "next"):
                new[:] = -1
            if name in self.cols:
                new[: self._cap] = self.cols[name]
            self.cols[name] = new
        sid = np.full(cap, -1, dtype=np.int64)
        sid[: self._cap] = self.slot_id
        self.slot_id = sid
        self.rows.grow(self._cap, cap)
        self._cap = cap

    # -- note ids <-> slots ----------------------------------------------------------------------------------
    def slots(self, ids: Any) -> np.ndarray:
        """The slots of note ids (an array of any shape, or an iterable); 0 for an id this index does not hold.
        One gather from an array indexed by id (a recall asks ~10 times for its few hundred pooled ids: a binary
        search over the held ids cost ~0.8 ms a recall at 1M notes)."""
        if not isinstance(ids, (np.ndarray, list, tuple)):
            ids = list(ids)
        ids = np.asarray(ids, dtype=np.int64)
        return np.maximum(self._slot_of.rows_of(ids), 0)

    def slot(self, note_id: int) -> int:
        """``slots`` of one id, without arrays: a served recall asks for each of its notes' rows."""
        return self._slot_of.get(int(note_id), 0)

    def row_slots(self, ids: np.ndarray) -> np.ndarray:
        """``slots(ids)`` for the row-id arrays of the BM25 and vector indexes (``x._ids[:n]``), which a recall
        asks for whole: remembered per array and extended when rows were only appended, so a recall does not
        look up 100k ids again."""
        base = ids.base
        if base is None or ids.size < 4096:
            return self.slots(ids)
        hit = self._row_cache.get(id(base))
        if hit is not None:
            n, old, slots = hit
            m = old.size
            if m <= ids.size and np.array_equal(ids[:m], old):
                if n != self._n:  # ids unknown before may have slots now
                    miss = np.flatnonzero(slots == 0)
                    if miss.size:
                        slots = slots.copy()
                        slots[miss] = self.slots(old[miss])
                if m < ids.size:
                    slots = np.concatenate([slots, self.slots(ids[m:])])
                if m < ids.size or n != self._n:
                    self._row_cache[id(base)] = (self._n, ids.copy(), slots)
                return slots
        slots = self.slots(ids)
        if len(self._row_cache) >= 8:
            self._row_cache.clear()
        self._row_cache[id(base)] = (self._n, ids.copy(), slots)
        return slots

    def _assign(self, ids: np.ndarray) -> np.ndarray:
        """The slots of ``ids``, giving the ids this index does not hold yet new slots (in id order)."""
        s = self.slots(ids)
        new = ids[s == 0]
        if new.size > 1 and not bool(np.all(new[1:] > new[:-1])):  # (a load's batches ascend: no sort needed)
            new = np.unique(new)
        if new.size:
            n = self._n
            self._grow(n + new.size)
            if self._ascending and n > 1 and new[0] < self.slot_id[n - 1]:
                self._ascending = False
            self.slot_id[n: n + new.size] = new
            self._n = n + new.size
            self._slot_of.set_many(new, np.arange(n, n + new.size))
            s = self.slots(ids)
        return s

    def prefixes(self, slots: np.ndarray) -> np.ndarray:
        """The near-duplicate hashes (of each note's opening ``prefix_chars`` characters, stripped and lower-cased)
        at ``slots``, hashed on first read (0: not yet, or no note)."""
        col, p = self.cols["prefix"], self.prefix_chars
        if p:
            todo = np.unique(slots[(col[slots] == 0) & (slots > 0)])
            if todo.size:
                text = self.rows.cols["content"]
                col[todo] = [hash(text[s][:p].strip().lower()) if text[s] is not None else 0 for s in todo.tolist()]
        return col[slots]

    def ids_of(self, mask: np.ndarray) -> np.ndarray:
        """The note ids of a mask over slots, ascending."""
        ids = self.slot_id[np.flatnonzero(mask)]
        return ids if self._ascending else np.sort(ids)

    def column(self, name: str) -> Column:
        return Column(self, name)

    def allowed(self, mask: np.ndarray) -> Allowed:
        return Allowed(self, mask)

    def __len__(self) -> int:
        return int(self.cols["alive"].sum())

    # -- reads --------------------------------------------------------------------------------------------
    def mask(self, namespace: str, f: Any, ids: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask over this index's slots (``ids_of`` and ``allowed`` read it by note id): in this
        namespace, alive, and passing the recall filters ``f``.

        With ``ids`` the mask covers just those notes (``mask[j]`` is about ``ids[j]``): the fuse stage checks
        a few hundred pooled notes instead of re-masking the whole store.
        """
        n = self._n
        if ids is None:
            c = {k: v[:n] for k, v in self.cols.items()}
        else:
            at = self.slots(ids)
            c = {k: v[at] for k, v in self.cols.items()}
        ns = self.namespaces.get(namespace, create=False)
        m = c["alive"] & (c["ns"] == ns)
        if f.memory_type is not None:
            m &= c["mtype"] == TYPES.index(f.memory_type) + 1
        if f.kind is not None:
            m &= c["kind"] == (KINDS.index(f.kind) + 1 if f.kind in KINDS else 0)
        if f.scope is not None:
            m &= c["scope"] == self.scopes.get(f.scope, create=False)
        if f.min_salience is not None:
            m &= c["salience"] >= f.min_salience
        if f.created_after is not None:
            m &= c["created"] >= seconds(f.created_after)
        if f.created_before is not None:
            m &= c["created"] < seconds(f.created_before)
        if f.as_of is not None:
            m &= c["created"] <= seconds(f.as_of)
        if not f.include_superseded:
            sup = c["superseded"]
            cut = seconds(f.as_of) if f.as_of is not None else math.inf
            m &= ~(sup <= cut)  # NaN (never superseded) compares False, so it stays
        if f.tags:
            want, none = set(f.tags), frozenset()
            pos = np.flatnonzero(m)
            note = self.slot_id[pos] if ids is None else ids[pos]
            if f.tag_mode == "all":
                ok = [j for j, i in zip(pos, note) if want <= self.tags.get(int(i), none)]
            else:
                ok = [j for j, i in zip(pos, note) if want & self.tags.get(int(i), none)]
            m = np.zeros_like(m)
            m[np.array(ok, dtype=np.int64)] = True
        return m

    def thread_of(self, note_id: int) -> int | None:
        t = int(self.cols["thread"][self.slot(note_id)])
        return t or None

    def neighbours(self, note_id: int) -> tuple[int | None, int | None]:
        return self.expander.links.neighbours(note_id)

    def features(self, ids: Iterable[int]) -> dict[str, np.ndarray]:
        idx = self.slots(np.fromiter(ids, dtype=np.int64))
        return {k: self.cols[k][idx] for k in ("salience", "decay", "occurred")}

"""The in-memory search state of the memory pack: note metadata as columns, BM25, vectors, thread links.

This module is the data structure only; :mod:`palimpsest_memory.packs.memory.mirrors.index` makes it a mirror of the
store (rebuilt when a runtime opens, kept in step with each committed write through the runtime's mirror seam), so
it never holds a note that was rolled back and never needs a full rebuild per insert. Arrays are indexed by
slot: a dense per-index position given to each note when it is added (``slot_id`` maps slots back to note ids,
``slots`` maps ids to slots), so an index holds columns for its own notes only, however high the store-wide note
ids of its namespace run (ADR 0016). Every filter is a numpy mask over the slots: namespaces are separated by that
mask before any leg ranks a note. Slot 0 holds no note: an id the index does not hold reads its defaults there.
"""
from __future__ import annotations

import math
from datetime import datetime
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.context_signals import ThreadExpander
from palimpsest_memory.packs.memory.engine.index_writes import KINDS, IndexWrites, seconds
from palimpsest_memory.packs.memory.engine.rowstore import TYPES, Codes, NoteRow, NoteRows, SlotLinks
from palimpsest_memory.packs.memory.engine.slots import Columns, Slots
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


class MemoryIndex:
    """The columns, the legs and the links of one namespace's notes. It has its parts: its ``space`` (the slots every
    column is indexed by, slots.py), its own filter columns (``cols``), its note rows (``rows``, rowstore.py), the
    BM25 and vector legs, the thread links and episodes, and its ``writes`` (index_writes.py), through which every
    committed change comes; the write methods below are the writes part's."""

    COLUMNS = {"alive": bool, "ns": np.int32, "mtype": np.int8, "kind": np.int8, "scope": np.int32,
               "thread": np.int32, "salience": np.float64, "decay": np.float64, "occurred": np.float64,
               "created": np.float64, "superseded": np.float64, "archived": bool, "prefix": np.int64,
               "prev": np.int64, "next": np.int64}  # prev/next: thread neighbours, -1 for none
    DEFAULTS = {"superseded": np.nan, "prev": -1, "next": -1}  # never superseded, no neighbour; the rest 0
    FIELDS = IndexWrites.FIELDS  # NoteRow's fields; a batch for add_columns holds one sequence per field
    tokens_of = staticmethod(IndexWrites.tokens_of)
    scope_group = staticmethod(IndexWrites.scope_group)

    def __init__(self, *, k1: float, b: float, max_query_terms: int, expansion_weight: float,
                 prefix_chars: int = 0, ann: Ann = Ann(), episode_gap_seconds: float = 0.0) -> None:
        self.prefix_chars = prefix_chars  # near-duplicate detection: a hash of each note's opening characters
        self.ann = ann
        self.bm25 = BM25Index(k1=k1, b=b, max_query_terms=max_query_terms)
        self.expander = ThreadExpander(weight=expansion_weight, tokens_of=lambda i: self.tokens_of(self.rows[i]))
        self.expander.links = SlotLinks(self)  # the links live in the prev/next/thread columns (rowstore.py)
        self.episodes = Episodes(episode_gap_seconds)  # the thread of a note remembered without one (ADR 0008)
        self.dirty = False  # changed since it was loaded: a snapshot (snapshot.py) is worth writing
        # +1 on every write; what recall derives from the index and keeps (recall_cache.py: the notes' own
        # information, the filter masks) is valid while it holds
        self.version = 0
        self.derived: dict[str, Any] = {}
        # the stored BM25 snapshot covers the first saved_notes notes, and only notes were added since (snapshot.py)
        self.saved_notes, self.appended_only = 0, False
        self.vectors: dict[str, VectorIndex] = {}
        self.namespaces, self.scopes, self.threads = Codes(), Codes(), Codes()
        self.tags: dict[int, frozenset[str]] = {}
        self.rows = NoteRows(self)  # every note, as columns, for answers without a SQL round trip
        own = Columns(self.COLUMNS, self.DEFAULTS)
        self.cols = own.cols  # indexed by slot (the dict stays; its arrays are replaced as the slots grow)
        self.space = Slots([own, self.rows])
        # note ids <-> slots are the space's (bound here: a recall asks for them often, through no extra call)
        self.slots, self.slot, self.row_slots, self.ids_of = (self.space.slots, self.space.slot,
                                                              self.space.row_slots, self.space.ids_of)
        self.writes = IndexWrites(self)

    @property
    def slot_id(self) -> np.ndarray:
        """Slot -> note id (-1: slot 0, and slots not used yet)."""
        return self.space.slot_id

    def reserve(self, notes: int) -> None:
        """Room for ``notes`` more notes (a load: one allocation instead of doubling)."""
        self.space.reserve(notes)

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
        n = self.space.used
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

    # -- writes (committed changes only: index_writes.py) ------------------------------------------------------
    def add(self, rows: Sequence[NoteRow], vectors: dict[str, np.ndarray], *, text_index: bool = True) -> None:
        self.writes.add(rows, vectors, text_index=text_index)

    def add_columns(self, b: dict[str, Any], vectors: dict[str, np.ndarray] | None = None, *,
                    text_index: bool = True, tokens: list[list[str]] | None = None, defer_graph: bool = False) -> None:
        self.writes.add_columns(b, vectors, text_index=text_index, tokens=tokens, defer_graph=defer_graph)

    def add_vectors(self, model: str, ids: np.ndarray, matrix: np.ndarray, *, build: bool = True,
                    defer: bool = False) -> None:
        self.writes.add_vectors(model, ids, matrix, build=build, defer=defer)

    def adopt_vectors(self, model: str, ids: np.ndarray, matrix: np.ndarray) -> None:
        self.writes.adopt_vectors(model, ids, matrix)

    def set_superseded(self, note_id: int, when: datetime | None, by: int | None = None) -> None:
        self.writes.set_superseded(note_id, when, by)

    def set_metadata(self, note_id: int, fields: Iterable[tuple[str, Any]]) -> None:
        self.writes.set_metadata(note_id, fields)

    def set_archived(self, note_id: int, when: datetime | None) -> None:
        self.writes.set_archived(note_id, when)

    def forget(self, note_ids: Iterable[int]) -> None:
        self.writes.forget(note_ids)

    def reinfer_episodes(self) -> None:
        self.writes.reinfer_episodes()

    def thread_key(self, r: NoteRow) -> Hashable | None:
        return self.writes.thread_key(r)

    def group_of(self, at: np.ndarray) -> np.ndarray:
        return self.writes.group_of(at)

"""The in-memory search state of the memory pack: note metadata as columns, BM25, vectors, thread links.

This module is the data structure only; :mod:`palimpsest_memory.packs.memory.index_mirror` makes it a mirror of the store
(rebuilt when a runtime opens, kept in step with each committed write through the runtime's mirror seam), so
it never holds a note that was rolled back and never needs a full rebuild per insert. Arrays are indexed by
note id (ids come from one sequence, so they are dense), which makes every filter a numpy mask: namespaces are
separated by that mask before any leg ranks a note.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

from palimpsest_memory.packs.memory.bm25 import BM25Index
from palimpsest_memory.packs.memory.context import ThreadExpander, render_dated
from palimpsest_memory.packs.memory.text import tokenize
from palimpsest_memory.packs.memory.threads import Episodes
from palimpsest_memory.packs.memory.vectors import Ann, VectorIndex

EPOCH = datetime(1970, 1, 1)
KINDS = ("decision", "milestone", "problem", "preference", "emotional")
TYPES = ("episodic", "semantic")
KIND_CODE = {k: i + 1 for i, k in enumerate(KINDS)}  # 0: no kind (or one this index does not know)
# the columns of a note, in NoteRow's field order
FULL_COLUMNS = ("id, namespace, content, memory_type, kind, scope, thread, tags, salience, decay_factor, "
                "occurred_at, created_at, superseded_at, archived_at, kind_source, source_id, key, superseded_by")


def seconds(ts: datetime | None) -> float:
    return math.nan if ts is None else (ts - EPOCH).total_seconds()


def index_text(content: str, occurred_at: datetime) -> str:
    """What the legs see of a note: its words plus its date in words ("8 May 2023"), so dated queries match."""
    return render_dated(content, occurred_at)


@dataclass(slots=True)
class NoteRow:
    """One stored note as the index keeps it: recall hydrates its answers from these, without SQL.

    Field order is ``FULL_COLUMNS`` (above), so a row of that SELECT unpacks into it.
    """

    id: int
    namespace: str
    content: str
    memory_type: str
    kind: str | None
    scope: str | None
    thread: str | None
    tags: Sequence[str]
    salience: float
    decay_factor: float
    occurred_at: datetime
    created_at: datetime
    superseded_at: datetime | None = None
    archived_at: datetime | None = None
    kind_source: str = "caller"
    source_id: str | None = None
    key: str | None = None
    superseded_by: int | None = None


class Codes:
    """Strings ↔ small ints, so string filters become integer compares."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}

    def get(self, value: str | None, create: bool = True) -> int:
        if value is None:
            return 0
        c = self.code.get(value)
        if c is None:
            if not create:
                return -1  # matches nothing
            c = self.code[value] = len(self.code) + 1
        return c


class MemoryIndex:
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
        self.episodes = Episodes(episode_gap_seconds)  # the thread of a note remembered without one (ADR 0008)
        self.dirty = False  # changed since it was loaded: a snapshot (snapshot.py) is worth writing
        # the stored BM25 snapshot covers the first saved_notes notes, and only notes were added since (snapshot.py)
        self.saved_notes, self.appended_only = 0, False
        self.vectors: dict[str, VectorIndex] = {}
        self.namespaces, self.scopes, self.threads = Codes(), Codes(), Codes()
        self.tags: dict[int, frozenset[str]] = {}
        self.thread_names: dict[int, str] = {}
        self.rows: dict[int, NoteRow] = {}  # every note, for answers without a SQL round trip
        self._cap = 0
        self.cols: dict[str, np.ndarray] = {}
        self._grow(1024)

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
        self._cap = cap

    def __len__(self) -> int:
        return int(self.cols["alive"].sum())

    # -- writes (committed changes only) -----------------------------------------------------------------
    def add(self, rows: Sequence[NoteRow], vectors: dict[str, np.ndarray], *, text_index: bool = True) -> None:
        """Index committed notes. ``text_index=False``: their BM25 rows are already in ``self.bm25`` (restored
        from a snapshot), so only the columns and thread links are built — no tokenising."""
        if not rows:
            return
        self.dirty = True
        self._grow(max(r.id for r in rows) + 1)
        c = self.cols
        ids = np.array([r.id for r in rows], dtype=np.int64)
        keys = {r.id: self.thread_key(r) for r in rows}  # once per note: episode inference is stateful
        # column by column over the batch (a numpy item assignment per field and note cost ~1 s at 100k on open)
        c["alive"][ids] = [r.archived_at is None for r in rows]
        c["archived"][ids] = [r.archived_at is not None for r in rows]
        c["ns"][ids] = [self.namespaces.get(r.namespace) for r in rows]
        c["mtype"][ids] = [TYPES.index(r.memory_type) + 1 for r in rows]
        c["kind"][ids] = [KIND_CODE.get(r.kind, 0) if r.kind is not None else 0 for r in rows]
        c["scope"][ids] = [self.scopes.get(r.scope) for r in rows]
        c["thread"][ids] = [self.threads.get(keys[r.id]) for r in rows]
        c["salience"][ids] = [r.salience for r in rows]
        c["decay"][ids] = [r.decay_factor for r in rows]
        c["occurred"][ids] = [seconds(r.occurred_at) for r in rows]
        c["created"][ids] = [seconds(r.created_at) for r in rows]
        c["superseded"][ids] = [seconds(r.superseded_at) for r in rows]
        p = self.prefix_chars
        c["prefix"][ids] = [hash(r.content[:p].strip().lower()) for r in rows] if p else 0
        for r in rows:
            if r.tags:
                self.tags[r.id] = frozenset(r.tags)
        self.rows.update((r.id, r) for r in rows)
        links = self.expander.links
        if text_index:
            bags = self.expander.add_many((r.id, keys[r.id], self.tokens_of(r)) for r in rows)
            self.bm25.add_weighted(list(bags), list(bags.values()))
            changed: Iterable[int] = bags
        else:
            changed = set()
            for r in rows:
                links.add(r.id, keys[r.id])
                changed.update(j for j in (r.id, *links.neighbours(r.id)) if j is not None)
        for j in changed:  # the notes whose thread neighbours may have changed
            p, n = links.neighbours(j)
            c["prev"][j], c["next"][j] = -1 if p is None else p, -1 if n is None else n
        for model, matrix in vectors.items():
            self.add_vectors(model, ids, matrix)

    def reinfer_episodes(self) -> None:
        """Infer every thread-less note's episode again, in id order (what a rebuild does), and re-link and
        re-index the notes whose neighbours changed. Run when a thread-less note's scope is edited; O(notes)."""
        self.episodes = Episodes(self.episodes.gap)
        links, c = self.expander.links, self.cols
        changed: set[int] = set()
        for i in sorted(self.rows):
            r = self.rows[i]
            if r.thread is not None:
                continue
            key = self.episodes.key(i, r.namespace, r.scope, seconds(r.occurred_at))
            if links.thread_of(i) == key:
                continue
            changed.update(j for j in (i, *links.neighbours(i)) if j is not None)
            links.remove(i)
            links.add(i, key)
            c["thread"][i] = self.threads.get(key)
            changed.update(j for j in (i, *links.neighbours(i)) if j is not None)
        if not changed:
            return
        self.dirty, self.appended_only = True, False
        bags = {j: self.expander.bag(j) for j in changed}
        self.bm25.add_weighted(list(bags), list(bags.values()))
        for j in changed:
            p, n = links.neighbours(j)
            c["prev"][j], c["next"][j] = -1 if p is None else p, -1 if n is None else n

    def thread_key(self, r: NoteRow) -> Hashable | None:
        """A note's thread as the index links it: the caller's ``thread`` (per namespace), else the inferred
        episode of its scope (``threads.Episodes``; None when inference is off)."""
        if r.thread is not None:
            return (r.namespace, r.thread)
        return self.episodes.key(r.id, r.namespace, r.scope, seconds(r.occurred_at))

    @staticmethod
    def tokens_of(r: NoteRow) -> list[str]:
        """The BM25 tokens of a note's own text (dated), before thread expansion."""
        return tokenize(index_text(r.content, r.occurred_at))

    def add_vectors(self, model: str, ids: np.ndarray, matrix: np.ndarray, *, build: bool = True,
                    adopt: bool = False) -> None:
        index = self.vectors.get(model)
        if index is None:
            index = self.vectors[model] = VectorIndex(matrix.shape[1], ann=self.ann)
        index.add(ids, matrix, build=build, adopt=adopt)

    def set_superseded(self, note_id: int, when: datetime | None, by: int | None = None) -> None:
        if note_id < self._cap:
            self.cols["superseded"][note_id] = seconds(when)
        row = self.rows.get(note_id)
        if row is not None:
            row.superseded_at, row.superseded_by = when, by

    def set_metadata(self, note_id: int, fields: Iterable[tuple[str, Any]]) -> None:
        """Apply memory.update's in-place edits (tags, salience, decay_factor, kind, scope) to the row and columns."""
        row = self.rows.get(note_id)
        if row is None:
            return
        c = self.cols
        for name, value in fields:
            setattr(row, name, value)
            if name == "tags":
                if value:
                    self.tags[note_id] = frozenset(value)
                else:
                    self.tags.pop(note_id, None)
            elif name == "salience":
                c["salience"][note_id] = value
            elif name == "decay_factor":
                c["decay"][note_id] = value
            elif name == "kind":
                c["kind"][note_id] = KINDS.index(value) + 1 if value in KINDS else 0
            elif name == "scope":
                c["scope"][note_id] = self.scopes.get(value)
                if row.thread is None and self.episodes.gap > 0:
                    self.reinfer_episodes()  # its episode came from its scope: infer as a rebuild would

    def set_archived(self, note_id: int, when: datetime | None) -> None:
        if note_id < self._cap:
            self.cols["archived"][note_id] = when is not None
            self.cols["alive"][note_id] = when is None
        row = self.rows.get(note_id)
        if row is not None:
            row.archived_at = when

    def forget(self, note_ids: Iterable[int]) -> None:
        """Erase notes (memory.forget): their rows, columns, tags, BM25 postings and vectors go, and their thread
        neighbours are linked and re-expanded as if the notes had never been (what a fresh load builds)."""
        gone = [int(i) for i in note_ids if int(i) in self.rows]
        if not gone:
            return
        self.dirty, self.appended_only = True, False
        threadless = any(self.rows[i].thread is None for i in gone)  # their episodes are inferred (threads.py)
        c = self.cols
        rebag: dict[int, Any] = {}
        for i in gone:
            del self.rows[i]
            self.tags.pop(i, None)
            rebag.pop(i, None)
            for j, bag in self.expander.remove(i).items():
                rebag[j] = bag
            c["alive"][i] = c["archived"][i] = False
            for name in ("ns", "mtype", "kind", "scope", "thread", "salience", "decay", "occurred", "created",
                         "prefix"):
                c[name][i] = 0
            c["superseded"][i] = math.nan
            c["prev"][i] = c["next"][i] = -1
        self.bm25.remove(gone)
        rebag = {j: b for j, b in rebag.items() if j in self.rows}
        if rebag:  # neighbours' bags held the forgotten notes' words: re-index them without
            self.bm25.add_weighted(list(rebag), list(rebag.values()))
        links = self.expander.links
        for j in rebag:
            p, n = links.neighbours(j)
            c["prev"][j], c["next"][j] = -1 if p is None else p, -1 if n is None else n
        for model, index in list(self.vectors.items()):
            index.remove(gone)
            if not len(index):  # a fresh load holds no index for a model without vectors
                del self.vectors[model]
        if threadless:  # a fresh load infers the episodes without the forgotten notes: so must the live index
            self.reinfer_episodes()

    # -- reads --------------------------------------------------------------------------------------------
    def mask(self, namespace: str, f: Any, ids: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask over note ids: in this namespace, alive, and passing the recall filters ``f``.

        With ``ids`` the mask covers just those notes (``mask[j]`` is about ``ids[j]``): the fuse stage checks
        a few hundred pooled notes instead of re-masking the whole store.
        """
        c = self.cols if ids is None else {k: v[ids] for k, v in self.cols.items()}
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
            note = pos if ids is None else ids[pos]
            if f.tag_mode == "all":
                ok = [j for j, i in zip(pos, note) if want <= self.tags.get(int(i), none)]
            else:
                ok = [j for j, i in zip(pos, note) if want & self.tags.get(int(i), none)]
            m = np.zeros_like(m)
            m[np.array(ok, dtype=np.int64)] = True
        return m

    def thread_of(self, note_id: int) -> int | None:
        t = int(self.cols["thread"][note_id]) if note_id < self._cap else 0
        return t or None

    def neighbours(self, note_id: int) -> tuple[int | None, int | None]:
        return self.expander.links.neighbours(note_id)

    def features(self, ids: Iterable[int]) -> dict[str, np.ndarray]:
        idx = np.fromiter(ids, dtype=np.int64)
        return {k: self.cols[k][idx] for k in ("salience", "decay", "occurred")}

"""The notes of an index as columns (ADR 0025): what recall hydrates its answers from, and the thread links.

A namespace's index used to hold one ``NoteRow`` per note in a dict, its thread links as four dicts keyed by note
id, and every field as its own Python object: ~20 µs and ~800 bytes a note to load, 37 s and ~1 GB at 1M notes.
Here each field is a numpy column over the index's slots (``MemoryIndex.slots``; strings many notes share are small
codes into a :class:`Codes` table, times are int64 microseconds), the texts one object array, and a ``NoteRow`` is
built only when one is asked for (``rows[note_id]``: a recall asks for ten). A load fills the columns from a whole
batch at once (:meth:`MemoryIndex.add_columns`) without a Python object per note besides its text.

:class:`SlotLinks` keeps the thread links the same way: each note's thread is the index's ``thread`` column, its
neighbours the ``prev``/``next`` columns, and the only dict is the last note of each thread (one per thread), which
an append (the usual write: ids grow) needs. A batch of notes in id order is linked with a few array operations.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

EPOCH = datetime(1970, 1, 1)
TYPES = ("episodic", "semantic")
NAT = np.iinfo(np.int64).min  # no time (microsecond columns)


@dataclass(slots=True)
class NoteRow:
    """One stored note as the index keeps it: recall hydrates its answers from these, without SQL.

    Field order is ``index.FULL_COLUMNS``, so a row of that SELECT unpacks into it.
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
    """Strings (or any hashable) ↔ small ints, both ways, so string filters become integer compares and a column of
    codes reads back as its strings. Code 0 is None."""

    def __init__(self) -> None:
        self.code: dict[Any, int] = {}
        self.values: list[Any] = [None]

    def get(self, value: Any, create: bool = True) -> int:
        if value is None:
            return 0
        c = self.code.get(value)
        if c is None:
            if not create:
                return -1  # matches nothing
            c = self.code[value] = len(self.values)
            self.values.append(value)
        return c

    def many(self, values: Any) -> np.ndarray:
        """The int32 codes of a column of values (created as needed, in order of first use)."""
        return per_value(values, self.get)


def per_value(column: Any, fn: Callable[[Any], int], dtype: Any = np.int32) -> np.ndarray:
    """``fn`` of each value of a column (a sequence, a masked array: NULL is None, or a :class:`Coded` column),
    ``fn`` called once per distinct value in order of first use — so a :class:`Codes` table creates its codes in
    the order it would row by row — and the rest a dict look-up a row in C (a load passes a million rows)."""
    if isinstance(column, Coded):
        return column.mapped(fn, dtype)
    values = objects(column).tolist()
    table = {v: fn(v) for v in dict.fromkeys(values)}
    return np.fromiter(map(table.__getitem__, values), dtype=dtype, count=len(values))


@dataclass(frozen=True, slots=True)
class Coded:
    """A column of few distinct values given as positions into them: what a load reads its text columns of few values
    as (index_mirror.read_columns), so that filling the index costs a look-up per distinct value, not per note, and
    no Python object per note is made. ``values[0]`` is None (a NULL)."""

    values: np.ndarray  # object array of the distinct values, None first
    pos: np.ndarray  # int64, a position into ``values`` per row

    def __len__(self) -> int:
        return int(self.pos.size)

    def __getitem__(self, rows: Any) -> "Coded":  # a slice or an index array: the same values, those rows
        return Coded(self.values, self.pos[rows])

    def objects(self) -> np.ndarray:
        return self.values[self.pos]

    def mapped(self, fn: Any, dtype: Any = np.int32) -> np.ndarray:
        """``fn`` of each row's value, ``fn`` called once per distinct value in order of first use (a ``Codes``
        table creates its codes in that order, as it would row by row)."""
        used, first = np.unique(self.pos, return_index=True)
        table = np.zeros(self.values.size, dtype=dtype)
        for p in used[np.argsort(first, kind="stable")].tolist():
            table[p] = fn(self.values[p])
        return table[self.pos]


def to_micros(values: Any) -> np.ndarray:
    """int64 microseconds since 1970 (``NAT`` for None/NaT) of datetimes, a datetime64 array or a masked one."""
    if isinstance(values, np.ma.MaskedArray):
        data = np.asarray(values.data).astype("datetime64[us]").astype(np.int64)
        return np.where(np.ma.getmaskarray(values), NAT, data)
    if isinstance(values, np.ndarray) and values.dtype.kind == "M":
        return values.astype("datetime64[us]").astype(np.int64)  # NaT is already int64 min
    out = np.empty(len(values), dtype=np.int64)
    for j, v in enumerate(values):
        if v is None:
            out[j] = NAT
        else:
            v = v.replace(tzinfo=None)  # stored times are naive UTC (remember.py and the stores drop the zone)
            d = v - EPOCH
            out[j] = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    return out


def from_micros(us: int) -> datetime | None:
    return None if us == NAT else EPOCH + timedelta(microseconds=int(us))


def seconds_of(us: np.ndarray) -> np.ndarray:
    """Float seconds since 1970 (NaN for none), as ``index.seconds`` gives them for one datetime."""
    out = us.astype(np.float64) / 1e6
    out[us == NAT] = np.nan
    return out


def objects(values: Any) -> np.ndarray:
    """An object array of ``values`` with None where a masked array (a NULL from fetchnumpy) is masked."""
    if isinstance(values, Coded):
        return values.objects()
    if isinstance(values, np.ma.MaskedArray):
        out = np.asarray(values.data, dtype=object).copy()
        out[np.ma.getmaskarray(values)] = None
        return out
    if isinstance(values, np.ndarray) and values.dtype == object:
        return values
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


class NoteRows(Mapping):
    """The notes an index holds, read by id: ``rows[note_id]`` builds that note's :class:`NoteRow` from the
    columns. Iterates ids ascending. Writes go through the index (``add_columns``, the ``set_*`` methods)."""

    # columns over slots beside the index's own (salience, decay, mtype, scope, ns are read from those)
    COLUMNS = {"held": bool, "kind": np.int16, "ksrc": np.int8, "thread": np.int32, "occurred": np.int64,
               "created": np.int64, "superseded": np.int64, "archived": np.int64, "superseded_by": np.int64}
    OBJECTS = ("content", "source_id", "key")
    DEFAULTS = {"superseded": NAT, "archived": NAT, "superseded_by": -1}

    def __init__(self, index: Any) -> None:
        self.index = index
        self.kinds, self.kind_sources, self.threads = Codes(), Codes(), Codes()
        self.tags: dict[int, tuple[str, ...]] = {}  # as given (order kept), only for notes that have tags
        self.cols: dict[str, np.ndarray] = {}
        self.count = 0
        self.text_chars = 0  # the texts' total length, for the size estimate

    def grow(self, old: int, cap: int) -> None:
        for name, dtype in self.COLUMNS.items():
            new = np.full(cap, self.DEFAULTS.get(name, 0), dtype=dtype)
            if name in self.cols:
                new[:old] = self.cols[name][:old]
            self.cols[name] = new
        for name in self.OBJECTS:
            new = np.full(cap, None, dtype=object)
            if name in self.cols:
                new[:old] = self.cols[name][:old]
            self.cols[name] = new

    def _slot(self, note_id: Any) -> int:
        try:
            s = self.index.slot(int(note_id))
        except (TypeError, ValueError):
            return 0
        return s if s and self.cols["held"][s] else 0

    def __getitem__(self, note_id: int) -> NoteRow:
        s = self._slot(note_id)
        if not s:
            raise KeyError(note_id)
        return self.row_at(s)

    def row_at(self, s: int) -> NoteRow:
        c, ic, ix = self.cols, self.index.cols, self.index
        nid = int(ix.slot_id[s])
        sup_by = int(c["superseded_by"][s])
        return NoteRow(nid, ix.namespaces.values[int(ic["ns"][s])], c["content"][s], TYPES[int(ic["mtype"][s]) - 1],
                       self.kinds.values[int(c["kind"][s])], ix.scopes.values[int(ic["scope"][s])],
                       self.threads.values[int(c["thread"][s])], list(self.tags.get(nid, ())),
                       float(ic["salience"][s]), float(ic["decay"][s]), from_micros(int(c["occurred"][s])),
                       from_micros(int(c["created"][s])), from_micros(int(c["superseded"][s])),
                       from_micros(int(c["archived"][s])), self.kind_sources.values[int(c["ksrc"][s])] or "caller",
                       c["source_id"][s], c["key"][s], None if sup_by < 0 else sup_by)

    def __contains__(self, note_id: object) -> bool:
        return bool(self._slot(note_id))

    def __len__(self) -> int:
        return self.count

    def ids(self) -> np.ndarray:
        """The held note ids, ascending."""
        n = self.index.space.used
        return self.index.ids_of(self.cols["held"][:n])

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids().tolist())

    def max_id(self) -> int:
        ids = self.ids()
        return int(ids[-1]) if ids.size else 0

    def set(self, note_id: int, field: str, value: Any) -> None:
        """One field of a held note (the index's own columns are written by the index)."""
        s = self._slot(note_id)
        if not s:
            return
        c = self.cols
        if field == "superseded_at":
            c["superseded"][s] = to_micros([value])[0]
        elif field == "archived_at":
            c["archived"][s] = to_micros([value])[0]
        elif field == "superseded_by":
            c["superseded_by"][s] = -1 if value is None else int(value)
        elif field == "kind":
            c["kind"][s] = self.kinds.get(value)
        elif field == "kind_source":
            c["ksrc"][s] = self.kind_sources.get(value)
        elif field == "tags":
            if value:
                self.tags[int(note_id)] = tuple(value)
            else:
                self.tags.pop(int(note_id), None)
        elif field not in ("salience", "decay_factor", "scope"):  # those live in the index's columns
            raise KeyError(f"a note's {field} is not edited in place")


class SlotLinks:
    """Previous/next note of the same thread (order by note id), kept in the index's columns; see module doc.

    Same interface as ``threads.ThreadLinks``: ``add``, ``remove``, ``thread_of``, ``neighbours``."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self.last: dict[int, int] = {}  # thread code -> its highest note id

    def _members(self, code: int) -> np.ndarray:
        ix = self.index
        n = ix.space.used
        return np.sort(ix.slot_id[1:n][ix.cols["thread"][1:n] == code])

    def _set(self, note_id: int | None, field: str, value: int | None) -> None:
        if note_id is None:
            return
        s = self.index.slot(note_id)
        if s:
            self.index.cols[field][s] = -1 if value is None else value

    def add(self, note_id: int, thread: Hashable | None) -> None:
        """Link one note whose slot exists (its ``thread`` column is written here)."""
        ix = self.index
        note_id = int(note_id)
        s = ix.slot(note_id)
        if not s:
            return
        if ix.cols["thread"][s]:
            self.remove(note_id)
        if thread is None:
            return
        code = ix.threads.get(thread)
        last = self.last.get(code)
        if last is None or last < note_id:
            prev, nxt = last, None
            self.last[code] = note_id
        else:  # an older note into an existing thread: find its place among the members
            members = self._members(code)
            j = int(np.searchsorted(members, note_id))
            prev = int(members[j - 1]) if j > 0 else None
            nxt = int(members[j]) if j < members.size else None
        ix.cols["thread"][s] = code
        ix.cols["prev"][s] = -1 if prev is None else prev
        ix.cols["next"][s] = -1 if nxt is None else nxt
        self._set(prev, "next", note_id)
        self._set(nxt, "prev", note_id)

    def add_sorted(self, slots: np.ndarray, ids: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Link a batch of new notes (not linked before) given in ascending id order with their thread codes (0:
        none); returns the ids of older notes whose links changed (their previous last notes)."""
        ix = self.index
        c = ix.cols
        c["thread"][slots] = codes
        has = np.flatnonzero(codes > 0)
        if not has.size:
            return np.zeros(0, dtype=np.int64)
        hc, hid, hs = codes[has], ids[has], slots[has]
        uniq, inv = np.unique(hc, return_inverse=True)
        last_of = np.array([self.last.get(code, -1) for code in uniq.tolist()], dtype=np.int64)
        late = np.flatnonzero(last_of[inv] > hid).tolist()
        if late:  # older than their thread's last note: one at a time (rare: ids grow)
            c["thread"][hs[late]] = 0
            for j in late:
                self.add(int(hid[j]), ix.threads.values[int(hc[j])])
            keep = np.ones(hc.size, dtype=bool)
            keep[late] = False
            hc, hid, hs = hc[keep], hid[keep], hs[keep]
            if not hc.size:
                return np.zeros(0, dtype=np.int64)
        order = np.lexsort((hid, hc))  # by thread, then id
        hc, hid, hs = hc[order], hid[order], hs[order]
        first = np.r_[True, hc[1:] != hc[:-1]]
        final = np.r_[hc[1:] != hc[:-1], True]
        prev = np.r_[-1, hid[:-1]]
        nxt = np.r_[hid[1:], -1]
        starts = np.flatnonzero(first)
        before = np.array([self.last.get(code, -1) for code in hc[starts].tolist()], dtype=np.int64)
        prev[starts] = before
        nxt[final] = -1
        c["prev"][hs], c["next"][hs] = prev, nxt
        old = before[before >= 0]
        if old.size:
            c["next"][ix.slots(old)] = hid[starts][before >= 0]
        self.last.update(zip(hc[final].tolist(), hid[final].tolist()))
        return old

    def remove(self, note_id: int) -> None:
        ix = self.index
        note_id = int(note_id)
        s = ix.slot(note_id)
        if not s or not ix.cols["thread"][s]:
            return
        code = int(ix.cols["thread"][s])
        prev, nxt = self.neighbours(note_id)
        self._set(prev, "next", nxt)
        self._set(nxt, "prev", prev)
        if self.last.get(code) == note_id:
            if prev is None:
                del self.last[code]
            else:
                self.last[code] = prev
        ix.cols["thread"][s] = 0
        ix.cols["prev"][s] = ix.cols["next"][s] = -1

    def thread_of(self, note_id: int) -> Hashable | None:
        s = self.index.slot(int(note_id))
        return self.index.threads.values[int(self.index.cols["thread"][s])] if s else None

    def neighbours(self, note_id: int) -> tuple[int | None, int | None]:
        """``(prev_id, next_id)`` inside the note's thread (None at the ends / no thread)."""
        ix = self.index
        s = ix.slot(int(note_id))
        if not s:
            return None, None
        p, n = int(ix.cols["prev"][s]), int(ix.cols["next"][s])
        return (None if p < 0 else p), (None if n < 0 else n)

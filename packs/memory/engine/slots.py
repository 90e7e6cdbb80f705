"""The slots of a memory index (ADR 0016): a dense position given to each note the index holds, in order of arrival.

Every column of the index (its own filter columns, the note rows of rowstore.py) is an array over these slots; this
part owns the map both ways (``slot_id``: slot -> note id, and note id -> slot) and the capacity, and grows the
columns it was given (each an object with ``grow(old, cap)``) when more slots are needed. Slot 0 holds no note: an id
the index does not hold reads its defaults there.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from palimpsest_memory.packs.memory.engine.idrows import IdRows


class Grows(Protocol):
    def grow(self, old: int, cap: int) -> None:
        """Arrays over ``cap`` slots, the first ``old`` as they were."""


class Columns:
    """Arrays over slots, one per name and dtype (``cols``), each slot's value the default of an unheld note."""

    def __init__(self, dtypes: dict[str, Any], fill: dict[str, Any]) -> None:
        self.dtypes, self.fill = dtypes, fill
        self.cols: dict[str, np.ndarray] = {}

    def grow(self, old: int, cap: int) -> None:
        for name, dtype in self.dtypes.items():
            new = np.zeros(cap, dtype=dtype)
            if name in self.fill:
                new[:] = self.fill[name]
            if name in self.cols:
                new[:old] = self.cols[name]
            self.cols[name] = new


class Slots:
    """Note ids <-> slots, and the room the columns over them have; see the module doc."""

    def __init__(self, columns: Sequence[Grows], room: int = 64) -> None:
        self.columns = tuple(columns)
        self.cap = 0
        self.slot_id = np.zeros(0, dtype=np.int64)  # slot -> note id (-1: slot 0, no note)
        self.used = 1  # slots in use, slot 0 included
        self.ascending = True  # slot_id[1:used] increases: ids_of needs no sort
        self._slot_of = IdRows()  # note id -> slot (idrows.py: the BM25 and vector indexes' id -> row map)
        self._row_cache: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}  # see row_slots
        self.grow(room)

    def reserve(self, notes: int) -> None:
        """Room for ``notes`` more notes (a load: one allocation instead of doubling)."""
        self.grow(self.used + notes)

    def grow(self, need: int) -> None:
        """Room for ``need`` slots in every column (at least doubling)."""
        if need <= self.cap:
            return
        cap = max(need, self.cap * 2)
        sid = np.full(cap, -1, dtype=np.int64)
        sid[: self.cap] = self.slot_id
        self.slot_id = sid
        for part in self.columns:
            part.grow(self.cap, cap)
        self.cap = cap

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
                if n != self.used:  # ids unknown before may have slots now
                    miss = np.flatnonzero(slots == 0)
                    if miss.size:
                        slots = slots.copy()
                        slots[miss] = self.slots(old[miss])
                if m < ids.size:
                    slots = np.concatenate([slots, self.slots(ids[m:])])
                if m < ids.size or n != self.used:
                    self._row_cache[id(base)] = (self.used, ids.copy(), slots)
                return slots
        slots = self.slots(ids)
        if len(self._row_cache) >= 8:
            self._row_cache.clear()
        self._row_cache[id(base)] = (self.used, ids.copy(), slots)
        return slots

    def assign(self, ids: np.ndarray) -> np.ndarray:
        """The slots of ``ids``, giving the ids this index does not hold yet new slots (in id order)."""
        s = self.slots(ids)
        new = ids[s == 0]
        if new.size > 1 and not bool(np.all(new[1:] > new[:-1])):  # (a load's batches ascend: no sort needed)
            new = np.unique(new)
        if new.size:
            n = self.used
            self.grow(n + new.size)
            if self.ascending and n > 1 and new[0] < self.slot_id[n - 1]:
                self.ascending = False
            self.slot_id[n: n + new.size] = new
            self.used = n + new.size
            self._slot_of.set_many(new, np.arange(n, n + new.size))
            s = self.slots(ids)
        return s

    def ids_of(self, mask: np.ndarray) -> np.ndarray:
        """The note ids of a mask over slots, ascending."""
        ids = self.slot_id[np.flatnonzero(mask)]
        return ids if self.ascending else np.sort(ids)

"""Note id → row maps for the BM25 and vector indexes, as an array instead of a dict (ADR 0025).

A dict of a million ints held ~100 bytes a note and took ~0.3 s to build on a load; here an int32 array indexed by
note id (-1: none) holds 4 bytes per id up to the highest, and is filled from whole arrays. Ids far beyond what the
array covers (more than eight times the entries held, plus 65,536) — a namespace whose few notes have very large
store-wide ids — go to a small dict instead, so the array never dwarfs what it maps. The interface is the subset of
``dict`` the indexes use.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np


class IdRows:
    __slots__ = ("_rows", "_n", "_extra")

    def __init__(self) -> None:
        self._rows = np.full(0, -1, dtype=np.int32)
        self._n = 0  # entries held in the array
        self._extra: dict[int, int] = {}

    @classmethod
    def of(cls, ids: np.ndarray, rows: np.ndarray) -> "IdRows":
        out = cls()
        out.set_many(np.asarray(ids, dtype=np.int64), np.asarray(rows, dtype=np.int64))
        return out

    def _fits(self, top: int, more: int = 1) -> bool:
        return top < self._rows.size or top <= 8 * (len(self) + more) + 65_536

    def _grow(self, top: int) -> None:
        if top >= self._rows.size:
            grown = np.full(max(top + 1, 2 * self._rows.size), -1, dtype=np.int32)
            grown[: self._rows.size] = self._rows
            self._rows = grown

    def set_many(self, ids: np.ndarray, rows: np.ndarray) -> None:
        """``self[i] = r`` for each pair (the last of a repeated id wins, as dict.update)."""
        if not ids.size:
            return
        if int(ids.min()) < 0 or not self._fits(int(ids.max()), int(ids.size)):
            for i, r in zip(ids.tolist(), rows.tolist()):
                self[i] = r
            return
        self._grow(int(ids.max()))
        self._rows[ids] = rows
        self._n = int(np.count_nonzero(self._rows >= 0))

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """The rows of an array of ids, -1 where none."""
        ids = np.asarray(ids, dtype=np.int64)
        ok = (ids >= 0) & (ids < self._rows.size)
        out = np.full(ids.shape, -1, dtype=np.int64)
        out[ok] = self._rows[ids[ok]]
        if self._extra:
            for j in np.flatnonzero(~ok).tolist():
                out[j] = self._extra.get(int(ids[j]), -1)
        return out

    def get(self, i: int, default: int | None = None) -> int | None:
        if 0 <= i < self._rows.size:
            r = int(self._rows[i])
            return default if r < 0 else r
        return self._extra.get(i, default)

    def __getitem__(self, i: int) -> int:
        r = self.get(i)
        if r is None:
            raise KeyError(i)
        return r

    def __contains__(self, i: object) -> bool:
        return isinstance(i, (int, np.integer)) and self.get(int(i)) is not None

    def __setitem__(self, i: int, r: int) -> None:
        i = int(i)
        if i < 0 or not self._fits(i):
            self._extra[i] = int(r)
            return
        self._grow(i)
        if self._rows[i] < 0:
            self._n += 1
        self._rows[i] = r

    def pop(self, i: int, default: int | None = None) -> int | None:
        if 0 <= i < self._rows.size:
            r = int(self._rows[i])
            if r < 0:
                return default
            self._rows[i] = -1
            self._n -= 1
            return r
        return self._extra.pop(i, default)

    def __len__(self) -> int:
        return self._n + len(self._extra)

    def __bool__(self) -> bool:
        return len(self) > 0

    def ids(self) -> np.ndarray:
        """Every id held, ascending."""
        ids = np.flatnonzero(self._rows >= 0).astype(np.int64)
        if self._extra:
            ids = np.union1d(ids, np.fromiter(self._extra, dtype=np.int64, count=len(self._extra)))
        return ids

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids().tolist())

    def max_id(self) -> int | None:
        ids = self.ids()
        return int(ids[-1]) if ids.size else None

    def update(self, pairs: Iterable[tuple[int, int]]) -> None:
        for i, r in pairs:
            self[i] = r

    @property
    def nbytes(self) -> int:
        return int(self._rows.nbytes) + 100 * len(self._extra)

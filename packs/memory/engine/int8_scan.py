"""An int8 copy of the vector matrix for the scan below the graph's threshold (ADR 0008, issue 18).

Below ``Ann.min_rows`` every recall scores every row. The matrix is 512 bytes a note (256-d float16, ADR 0030;
it was 1 KB of float32 when this was measured), and on this
shared machine the rows are rarely still in cache when the next recall comes (10k notes: 10 MB scanned in
~1.3-1.5 ms cold against ~0.3 ms warm), so the scan is paid at memory speed. Each row is kept here a second
time as int8 with its own scale (``row ≈ int8_row · scale``: 127 levels between ±max|component| of that row),
half the bytes (a quarter of float32's), and scored by numkong's integer dot product (usearch's own kernel library). The
int8 scores choose ``oversample × k`` candidates; ``VectorIndex.search`` rescores those on the held rows, so the
cosines returned stay exact and only the candidate set is approximate, as with the graph above the threshold.

Rows are quantised lazily: the index only appends rows (a replaced id gets a new row), so ``upto`` marks how
far the copy is valid, and a search extends it to the rows added since. A compaction or a new matrix rewrites
rows in place: the index then drops its copy.
"""
from __future__ import annotations

import numkong
import numpy as np

LEVELS = 127  # int8's symmetric range: a component at ±max|row| maps to ±127


def quantise(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(int8 rows, scale per row)`` with ``rows[i] ≈ int8[i] * scale[i]``; a zero row is all zeros, scale 0."""
    rows = np.asarray(rows, dtype=np.float32)
    top = np.abs(rows).max(axis=1) if rows.shape[0] else np.zeros(0, dtype=np.float32)
    inv = np.divide(LEVELS, top, out=np.zeros_like(top), where=top > 0)
    return np.rint(rows * inv[:, None]).astype(np.int8), (top / LEVELS).astype(np.float32)


class Int8Rows:
    """The int8 copy of a matrix's first ``upto`` rows and their scales (see the module docstring)."""

    __slots__ = ("_rows", "_scale", "upto")

    def __init__(self, dim: int) -> None:
        self._rows = np.zeros((0, dim), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self.upto = 0

    def _extend(self, matrix: np.ndarray, n: int) -> None:
        if n > self._rows.shape[0]:  # doubling, as the float32 matrix grows
            cap = max(n, 2 * self._rows.shape[0])
            rows = np.zeros((cap, self._rows.shape[1]), dtype=np.int8)
            scale = np.zeros(cap, dtype=np.float32)
            rows[: self.upto], scale[: self.upto] = self._rows[: self.upto], self._scale[: self.upto]
            self._rows, self._scale = rows, scale
        for s in range(self.upto, n, 8192):  # in chunks: a reopen's first search quantises every row
            e = min(n, s + 8192)
            self._rows[s:e], self._scale[s:e] = quantise(matrix[s:e])
        self.upto = n

    def scores(self, matrix: np.ndarray, n: int, q: np.ndarray) -> np.ndarray:
        """Approximate ``matrix[:n] @ q`` (float32) from the int8 rows, quantising rows added since the last call."""
        if n > self.upto:
            self._extend(matrix, n)
        qi, _ = quantise(q[None, :])  # the query's own scale is one factor for every row: it cannot change the order
        dots = np.asarray(numkong.cdist(qi, self._rows[:n], metric="dot", out_dtype="float32"))[0]
        return dots * self._scale[:n]

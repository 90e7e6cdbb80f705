"""The vector index's rows in half precision, and the cosines computed from them (ADR 0030).

The index holds each normalised vector as 256 float16 values, 512 bytes, half the float32 row: at 1M notes the
float32 matrix was 1 GB, the largest single part of the process (ADR 0025). Cosines are products of the query, rounded
to float16 too, with those rows, summed in float32 by numkong's SIMD kernels (numpy converts float16 to float32 at
~2 ns a value here, five times slower than the float32 product it would replace). They differ from the float32
cosines by at most ~1e-4 (measured on 1M notes: the same exact top-200 for 40 of 40 questions); the table keeps the
embedder's float32 vectors, so nothing is lost for good.

Each row's product is computed on its own: a row's cosine is the same bits whatever other rows a call scores,
in whatever order or batch (a float32 matrix product's last bit depended on them).
"""
from __future__ import annotations

import numkong
import numpy as np

ROW = np.float16  # the dtype of the index's rows (and of the vectors' snapshot files)
ROW_BYTES = np.dtype(ROW).itemsize  # bytes a component
_CHUNK = 2048  # rows per call: numkong's single-row kernel slows down past a few thousand rows at once (measured)


def rows_of(m: np.ndarray) -> np.ndarray:
    """Normalised float32 rows as the index holds them."""
    return np.asarray(m, dtype=np.float32).astype(ROW)


def cosines(matrix: np.ndarray, q: np.ndarray, rows: np.ndarray | None = None, upto: int = 0) -> np.ndarray:
    """float32 products of the normalised query ``q``, rounded to float16 as the rows are, with ``matrix``'s
    ``rows`` (an index array), or with its first ``upto`` rows when ``rows`` is None, within [-1, 1]."""
    q = np.asarray(q, dtype=np.float32).astype(ROW).reshape(1, -1)
    count = int(rows.size) if rows is not None else int(upto)
    out = np.empty(count, dtype=np.float32)
    for s in range(0, count, _CHUNK):
        part = matrix[rows[s:s + _CHUNK]] if rows is not None else matrix[s:min(s + _CHUNK, count)]
        # dtype named: a snapshot file's rows start at an odd offset, and numkong refuses the format numpy gives
        # an unaligned float16 buffer ("=e"); its kernels load unaligned rows (a test holds the same bits)
        out[s:s + part.shape[0]] = np.asarray(numkong.cdist(q, part, metric="dot", dtype="float16",
                                                            out_dtype="float32", threads=1))[0]
    return np.clip(out, -1.0, 1.0, out=out)  # a row's cosine with itself can round to just above 1

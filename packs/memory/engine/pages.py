"""Large, long-lived arrays on plain pages: zero-filled anonymous mappings instead of numpy's allocator.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array of 4 MB or more. Where
the kernel's huge-page defragmentation is "madvise" (a common default, and this machine's), the first touch of
such an array may stall while the kernel compacts memory into 2 MB pages: filling a fresh 1 GB array took 0.2 s in
one minute and 4–11 s in another here, against a steady 0.5–0.6 s on 4 KB pages. The index's vector matrix grows
by doubling (a fresh array, the old rows copied in) and is the largest thing an ingest touches, so it is allocated
here (ADR 0025's last section). Other arrays keep numpy's allocator: a library does not change numpy's setting for
its host.
"""
from __future__ import annotations

import mmap

import numpy as np

__all__ = ["zeros"]

_MIN_BYTES = 4 << 20  # numpy's own threshold for asking for huge pages


def zeros(shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
    """``np.zeros(shape, dtype)``, on an anonymous mapping of its own when it is large (the kernel zero-fills it;
    the mapping is released with the last array that views it). Small arrays, and systems without anonymous
    ``mmap`` flags, get ``np.zeros``."""
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if nbytes < _MIN_BYTES or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.zeros(shape, dtype=dt)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(buf, dtype=dt).reshape(shape)

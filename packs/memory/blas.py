"""One BLAS thread for the query path's matrix-vector products (``vectors.py``).

A matvec is memory-bound; on a shared 2-core machine OpenBLAS's second thread waits for a busy core and turned a
10k x 256 product from 0.45 ms into 8 ms (measured here), so the query path never asks for it. A host
application's own BLAS setting is restored after each product.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy  # noqa: F401  (loads numpy's BLAS before the libraries are looked for below)
from threadpoolctl import ThreadpoolController

# the BLAS libraries loaded at import (OpenBLAS under numpy): found once, because threadpoolctl's own
# ``limit()`` inspects every loaded library again at each call (~0.05 ms cold, as much as the rescoring's matvec);
# found before numpy had loaded its BLAS, the list would be empty and the limit silently a no-op
_BLAS = ThreadpoolController().select(user_api="blas").lib_controllers


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """One BLAS thread for a matrix-vector product, the library's own count restored after."""
    before = [(lib, lib.get_num_threads()) for lib in _BLAS]
    for lib, n in before:
        if n != 1:
            lib.set_num_threads(1)
    try:
        yield
    finally:
        for lib, n in before:
            if n != 1:
                lib.set_num_threads(n)

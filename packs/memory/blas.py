"""One BLAS thread for the query path's matrix-vector products (``vectors.py``).

A matvec is memory-bound; on a shared 2-core machine OpenBLAS's second thread waits for a busy core and turned a
10k x 256 product from 0.45 ms into 8 ms (measured here), so the query path never asks for it. A host
application's own BLAS setting is restored when the last query-path product in the process ends.

OpenBLAS built on pthreads (numpy's wheels) has one thread count for the whole process. threadpoolctl guards it by
letting only the first Python thread that set it set it again while that thread lives, and ignores the others
silently; ``pal serve`` and ``pal mcp`` run calls on a pool of long-lived threads and the recall's vector leg on a
thread of its own, so through that guard only one of them would ever get the limit. The limit is therefore set
here through the library's own setter, and held by a process-wide count: the first product in sets it, the last
one out restores what it found, so concurrent calls (two runtimes in one process) never restore it under each other.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools
import threading
from collections.abc import Callable, Iterator

import numpy  # noqa: F401  (loads numpy's BLAS before the libraries are looked for below)
from threadpoolctl import ThreadpoolController

Getter = Callable[[], int]
Setter = Callable[[int], object]


def _openblas_setter(lib) -> Setter | None:
    """OpenBLAS's own ``openblas_set_num_threads`` under whichever prefix and suffix this build exports
    (``scipy_`` and ``64_`` in numpy's wheels), or None when it exports none of them."""
    dll = ctypes.CDLL(lib.filepath)  # already loaded: this only finds the handle
    for prefix, suffix in itertools.product(("", "scipy_"), ("", "64_", "_64")):
        fn = getattr(dll, f"{prefix}openblas_set_num_threads{suffix}", None)
        if fn is not None:
            fn.argtypes, fn.restype = [ctypes.c_int], None
            return fn
    return None


def _controls() -> list[tuple[Getter, Setter]]:
    """How to read and set each loaded BLAS library's thread count, found once: threadpoolctl's ``limit()``
    inspects every loaded library again at each call (~0.05 ms cold, as much as the rescoring's matvec), and found
    before numpy had loaded its BLAS the list would be empty and the limit silently a no-op."""
    out: list[tuple[Getter, Setter]] = []
    for lib in ThreadpoolController().select(user_api="blas").lib_controllers:
        guarded = lib.internal_api == "openblas" and getattr(lib, "threading_layer", "") != "openmp"
        setter = _openblas_setter(lib) if guarded else None
        out.append((lib.get_num_threads, setter or lib.set_num_threads))
    return out


_CONTROLS = _controls()
_LOCK = threading.Lock()
_held = 0  # query-path products running in the process now
_restore: list[tuple[Setter, int]] = []  # what the first of them found, set back by the last


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """One BLAS thread while any query-path product in the process runs; the library's own count restored after
    the last one ends. Safe from any thread and nested."""
    global _held
    with _LOCK:
        if _held == 0:
            _restore[:] = [(setter, n) for getter, setter in _CONTROLS if (n := getter()) != 1]
            for setter, _ in _restore:
                setter(1)
        _held += 1
    try:
        yield
    finally:
        with _LOCK:
            _held -= 1
            if _held == 0:
                for setter, n in _restore:
                    setter(n)
                _restore.clear()

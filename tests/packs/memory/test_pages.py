"""pages.zeros: np.zeros for large arrays on an anonymous mapping of their own (no transparent huge pages)."""
import gc
import mmap

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine import pages
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex


def owner(a: np.ndarray):  # type: ignore[no-untyped-def]
    """What finally holds an array's memory (None: numpy's allocator)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base.obj if isinstance(a.base, memoryview) else a.base


@pytest.mark.parametrize("shape, dtype", [((3, 5), np.float32), ((4096, 256), np.float32), ((1 << 20,), np.int64)])
def test_zeros_is_np_zeros(shape, dtype) -> None:
    a = pages.zeros(shape, dtype)
    assert a.shape == shape and a.dtype == np.dtype(dtype) and a.flags.writeable and a.flags.c_contiguous
    assert not a.any()
    a[-1] = 7
    assert a.sum() == 7 * (shape[1] if len(shape) == 2 else 1)


def test_a_large_array_has_its_own_mapping_and_outlives_its_first_name() -> None:
    if not hasattr(mmap, "MAP_ANONYMOUS"):
        pytest.skip("no anonymous mmap flags on this system: pages.zeros is np.zeros here")
    a = pages.zeros((8192, 256), np.float32)  # 8 MB
    assert isinstance(owner(a), mmap.mmap)
    assert owner(pages.zeros((16, 16), np.float32)) is None  # small: numpy's own
    a[100, :] = 1.5
    view = a[100:101]
    del a
    gc.collect()
    assert float(view.sum()) == 1.5 * 256  # the mapping lives as long as a view of it


def test_the_vector_matrix_grows_on_plain_pages_and_keeps_its_rows() -> None:
    rng = np.random.default_rng(1)
    vi = VectorIndex(64, initial_capacity=16)
    rows = rng.standard_normal((40_000, 64)).astype(np.float32)
    for s in range(0, rows.shape[0], 5000):
        vi.add(np.arange(s, s + 5000) + 1, rows[s:s + 5000])
    assert vi.rows.mat.shape[0] >= 40_000
    assert isinstance(owner(vi.rows.mat), mmap.mmap) or not hasattr(mmap, "MAP_ANONYMOUS")
    want = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    assert np.array_equal(vi.rows.mat[:40_000], want.astype(np.float16))  # held in half precision (ADR 0030)
    (top, score), = vi.search(want[12_345], k=1)
    assert top == 12_346 and score == pytest.approx(1.0, abs=1e-3)

"""The vector index's half-precision rows and their cosines (``half.py``, ADR 0030)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.memory.engine import half
from palimpsest_memory.packs.memory.engine.vectors import l2_normalize


def unit(n: int, dim: int, seed: int) -> np.ndarray:
    return l2_normalize(np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32))


def test_cosines_are_within_half_precision_of_float32_and_never_past_one() -> None:
    m, q = unit(5000, 256, 1), unit(1, 256, 2)[0]
    got = half.cosines(half.rows_of(m), q, upto=5000)
    assert got.dtype == np.float32 and got.shape == (5000,)
    assert np.abs(got - m @ q).max() < 2e-4
    own = half.cosines(half.rows_of(m), m[7], np.array([7]))
    assert own[0] == pytest.approx(1.0, abs=1e-3) and own[0] <= 1.0


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**16), picks=st.integers(1, 300))
def test_a_rows_cosine_is_the_same_bits_whatever_else_a_call_scores(n: int, seed: int, picks: int) -> None:
    # a float32 BLAS product's last bit depends on the other rows; these products are row by row
    mat, q = half.rows_of(unit(n, 64, seed)), unit(1, 64, seed + 1)[0]
    whole = half.cosines(mat, q, upto=n)  # past one chunk when n > 2048
    rows = np.random.default_rng(seed).integers(0, n, size=picks)
    assert np.array_equal(half.cosines(mat, q, rows), whole[rows])
    assert np.array_equal(half.cosines(mat, q, rows[:1]), whole[rows[:1]])


def test_rows_mapped_at_an_odd_offset_score_as_rows_in_memory(tmp_path) -> None:
    # a snapshot file's rows start after an odd-length header: numpy calls that buffer unaligned
    mat = half.rows_of(unit(3000, 256, 3))
    path = tmp_path / "rows.bin"
    path.write_bytes(b"\0" * 43 + mat.tobytes())
    mapped = np.memmap(path, dtype=half.ROW, mode="c", offset=43, shape=mat.shape)
    assert not mapped.flags.aligned
    q = unit(1, 256, 4)[0]
    assert np.array_equal(half.cosines(mapped, q, upto=3000), half.cosines(mat, q, upto=3000))
    rows = np.array([2999, 5, 2048, 0])
    assert np.array_equal(half.cosines(mapped, q, rows), half.cosines(mat, q, rows))


def test_nothing_to_score_is_an_empty_answer() -> None:
    mat, q = half.rows_of(unit(10, 8, 5)), unit(1, 8, 6)[0]
    assert half.cosines(mat, q, np.zeros(0, dtype=np.int64)).shape == (0,)
    assert half.cosines(mat, q, upto=0).shape == (0,)

"""Cosine vector index over integer note ids (numpy): exact, with a measured prefilter for large scans.

Rows are stored in one float32 matrix with amortised (doubling) growth, so an
insert copies only the new rows.  Rows must be L2-normalised (``add``
normalises defensively; zero rows stay zero and never match).  Cosine is then
a matrix-vector product; top-k uses ``argpartition``.  Removal tombstones a
row; more than a third dead rows triggers compaction.

A scan is memory-bound: 100k x 256 float32 is 100 MB, ~10 ms on one core here.
When a query would scan at least ``Prefilter.min_rows`` rows, the index first
ranks them by a ``dims``-dimensional PCA projection (a quarter of the bytes),
keeps the best ``candidates`` and scores those exactly; the returned cosines
are always exact, only the candidate set is approximate (ADR 0008 records its
measured recall against the exact scan).  Below the threshold every search is
exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from .bm25 import _allowed_filter

__all__ = ["Prefilter", "VectorIndex", "l2_normalize"]


_BLAS = ThreadpoolController()


def single_blas_thread():
    """One BLAS thread for a matrix-vector product.

    A matvec is memory-bound; on a shared 2-core machine OpenBLAS's second thread waits for a busy core and
    turned a 10k x 256 product from 0.45 ms into 8 ms (measured here), so the query path never asks for it.
    """
    return _BLAS.limit(limits=1, user_api="blas")


def l2_normalize(m: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32 (zero rows stay zero)."""
    m = np.asarray(m, dtype=np.float32)
    if m.ndim == 1:
        n = float(np.linalg.norm(m))
        return m / n if n > 0 else m.copy()
    n = np.linalg.norm(m, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (m / n).astype(np.float32, copy=False)


@dataclass(frozen=True)
class Prefilter:
    """When and how a large scan is prefiltered (``min_rows = 0`` turns it off: always exact)."""

    min_rows: int = 0
    dims: int = 64
    candidates: int = 4000
    fit_sample: int = 20000


class VectorIndex:
    """Cosine search; see module docstring."""

    def __init__(self, dim: int, initial_capacity: int = 1024, prefilter: Prefilter = Prefilter()) -> None:
        if dim <= 0:
            raise ValueError("dim must be positive")
        self.dim = int(dim)
        self.prefilter = prefilter
        self._proj: np.ndarray | None = None  # (dim, dims) PCA basis, fitted once the index is large
        self._mean = np.zeros(self.dim, dtype=np.float32)
        self._low = np.zeros((0, 0), dtype=np.float32)  # rows projected on the basis, row-aligned with _mat
        self._fit_rows = 0
        cap = max(16, int(initial_capacity))
        self._mat = np.zeros((cap, self.dim), dtype=np.float32)
        self._ids = np.zeros(cap, dtype=np.int64)
        self._alive = np.zeros(cap, dtype=bool)
        self._row_of: dict[int, int] = {}
        self._n_rows = 0
        self._n_dead = 0

    def __len__(self) -> int:
        return len(self._row_of)

    def __contains__(self, note_id: int) -> bool:
        return int(note_id) in self._row_of

    def _grow(self, need: int) -> None:
        cap = self._mat.shape[0]
        if need <= cap:
            return
        new = max(need, cap * 2)
        mat = np.zeros((new, self.dim), dtype=np.float32)
        mat[: self._n_rows] = self._mat[: self._n_rows]
        ids = np.zeros(new, dtype=np.int64)
        ids[: self._n_rows] = self._ids[: self._n_rows]
        alive = np.zeros(new, dtype=bool)
        alive[: self._n_rows] = self._alive[: self._n_rows]
        self._mat, self._ids, self._alive = mat, ids, alive
        if self._proj is not None:
            low = np.zeros((new, self._proj.shape[1]), dtype=np.float32)
            low[: self._n_rows] = self._low[: self._n_rows]
            self._low = low

    def add(self, ids: Sequence[int] | np.ndarray, matrix: np.ndarray) -> None:
        """Add rows (an existing id is replaced)."""
        m = np.asarray(matrix, dtype=np.float32)
        if m.ndim == 1:
            m = m[None, :]
        if m.shape != (len(ids), self.dim):
            raise ValueError(f"matrix shape {m.shape} != ({len(ids)}, {self.dim})")
        m = l2_normalize(m)
        # last occurrence of a duplicated id wins
        self.remove([i for i in ids if int(i) in self._row_of], _compact=False)
        self._grow(self._n_rows + len(ids))
        start = self._n_rows
        self._mat[start : start + len(ids)] = m
        for j, i in enumerate(ids):
            i = int(i)
            old = self._row_of.get(i)
            if old is not None:  # duplicate inside this batch
                self._alive[old] = False
                self._n_dead += 1
            self._row_of[i] = start + j
            self._ids[start + j] = i
            self._alive[start + j] = True
        self._n_rows += len(ids)
        if self._proj is not None:
            self._low[start : self._n_rows] = self._project(m)
        self._maybe_fit()

    # -- the prefilter's projection --------------------------------------------------------------------------
    def _project(self, m: np.ndarray) -> np.ndarray:
        with single_blas_thread():
            return ((m - self._mean) @ self._proj).astype(np.float32, copy=False)

    def _maybe_fit(self) -> None:
        """Fit the PCA basis when the index first reaches ``min_rows`` and again each time it doubles."""
        pf, live = self.prefilter, len(self._row_of)
        if not pf.min_rows or live < pf.min_rows or pf.dims >= self.dim or live < 2 * self._fit_rows:
            return
        rows = np.flatnonzero(self._alive[: self._n_rows])
        if rows.size > pf.fit_sample:  # a seeded sample: the same rows give the same basis
            rows = np.sort(np.random.default_rng(0).choice(rows, pf.fit_sample, replace=False))
        sample = self._mat[rows].astype(np.float64)
        mean = sample.mean(axis=0)
        centred = sample - mean
        # the principal axes from the dim x dim covariance (eigh): the same subspace as an SVD of the sample,
        # ~30x faster (an SVD of 20,000 x 256 took 1.5 s of every open)
        _, vecs = np.linalg.eigh(centred.T @ centred)
        basis = vecs[:, ::-1][:, : pf.dims]  # eigh sorts ascending: the largest variances last
        self._mean, self._proj = mean.astype(np.float32), np.ascontiguousarray(basis, dtype=np.float32)
        self._low = np.zeros((self._mat.shape[0], pf.dims), dtype=np.float32)
        for start in range(0, self._n_rows, 65536):  # chunks: no 100k x 256 temporary
            stop = min(start + 65536, self._n_rows)
            self._low[start:stop] = self._project(self._mat[start:stop])
        self._fit_rows = live

    def remove(self, ids: Iterable[int], _compact: bool = True) -> int:
        n = 0
        for i in ids:
            r = self._row_of.pop(int(i), None)
            if r is not None:
                self._alive[r] = False
                self._n_dead += 1
                n += 1
        if _compact and self._n_dead > 1024 and self._n_dead * 3 > self._n_rows:
            self._compact()
        return n

    def _compact(self) -> None:
        live = np.flatnonzero(self._alive[: self._n_rows])
        n = live.size
        self._mat[:n] = self._mat[live]
        if self._proj is not None:
            self._low[:n] = self._low[live]
        self._ids[:n] = self._ids[live]
        self._alive[:n] = True
        self._alive[n:] = False
        self._n_rows = n
        self._n_dead = 0
        self._row_of = {int(i): r for r, i in enumerate(self._ids[:n].tolist())}

    def digest(self) -> tuple:
        """The ids held and a hash of their (normalised, rounded) vectors, in id order."""
        ids = sorted(self._row_of)
        rows = np.round(self._mat[[self._row_of[i] for i in ids]], 5) if ids else np.zeros((0, self.dim))
        return tuple(ids), hashlib.sha1(rows.astype(np.float32).tobytes()).hexdigest()

    def get(self, note_id: int) -> np.ndarray | None:
        r = self._row_of.get(int(note_id))
        return None if r is None else self._mat[r].copy()

    def _query(self, qvec: np.ndarray) -> np.ndarray:
        q = l2_normalize(np.asarray(qvec, dtype=np.float32).reshape(-1))
        if q.shape[0] != self.dim:
            raise ValueError(f"query dim {q.shape[0]} != {self.dim}")
        return q

    def search(
        self, qvec: np.ndarray, k: int = 10, allowed=None, min_cosine: float | None = 0.10
    ) -> list[tuple[int, float]]:
        """Top-``k`` ``(id, cosine)`` best first, dropping cosines below ``min_cosine``.

        ``allowed`` as in :func:`packs.memory.bm25.BM25Index.search`.
        """
        if k <= 0 or self._n_rows == 0:
            return []
        if allowed is not None and not isinstance(allowed, np.ndarray) or (
            isinstance(allowed, np.ndarray) and allowed.dtype != np.bool_
        ):
            ids_list = allowed.tolist() if isinstance(allowed, np.ndarray) else list(allowed)
            if len(ids_list) * 4 <= self._n_rows:
                # a narrow scope: score only its rows instead of the whole matrix
                rows = np.array(sorted({r for r in (self._row_of.get(int(i)) for i in ids_list) if r is not None}),
                                dtype=np.int64)
                if rows.size == 0:
                    return []
                with single_blas_thread():
                    sub = self._mat[rows] @ self._query(qvec)
                keep = np.ones(rows.size, dtype=bool) if min_cosine is None else sub >= min_cosine
                return self._top(rows[keep], sub[keep], k)
        n = self._n_rows
        ok = self._alive[:n].copy()
        if allowed is not None:
            ok &= _allowed_filter(allowed, self._ids[:n])
        count = int(ok.sum())
        if count == 0:
            return []
        q = self._query(qvec)
        pf = self.prefilter
        with single_blas_thread():
            if self._proj is not None and count >= pf.min_rows and count > max(pf.candidates, k):
                low = self._low[:n] @ ((q - self._mean) @ self._proj)  # approximate, a quarter of the bytes
                if count < n:
                    low[~ok] = -np.inf
                cand = np.argpartition(low, n - pf.candidates)[n - pf.candidates:]  # the best, unordered
                sc = self._mat[cand] @ q  # exact cosines of the survivors
            elif count * 4 <= n:  # a narrow filter: score only its rows
                cand = np.flatnonzero(ok)
                sc = self._mat[cand] @ q
            else:
                cand = np.flatnonzero(ok)
                sc = (self._mat[:n] @ q)[cand]
        if min_cosine is not None:
            keep = sc >= min_cosine
            cand, sc = cand[keep], sc[keep]
        return self._top(cand, sc, k)

    def search_exact(self, qvec: np.ndarray, k: int, allowed=None,
                     min_cosine: float | None = 0.10) -> list[tuple[int, float]]:
        """``search`` without the prefilter (the benchmark's reference for its recall)."""
        saved, self._proj = self._proj, None
        try:
            return self.search(qvec, k, allowed=allowed, min_cosine=min_cosine)
        finally:
            self._proj = saved

    def _top(self, cand: np.ndarray, sc: np.ndarray, k: int) -> list[tuple[int, float]]:
        if cand.size == 0:
            return []
        if cand.size > k:
            kth = -np.partition(-sc, k - 1)[k - 1]
            keep = sc >= kth  # every tie at the boundary, so the id tie-break is deterministic
            cand, sc = cand[keep], sc[keep]
        order = np.lexsort((self._ids[cand], -sc))[:k]
        return [(int(self._ids[cand[i]]), float(sc[i])) for i in order]

    def score_ids(self, qvec: np.ndarray, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """Cosine of ``qvec`` with each of ``ids`` (0.0 for unknown ids)."""
        q = l2_normalize(np.asarray(qvec, dtype=np.float32).reshape(-1))
        rows = [self._row_of.get(int(i)) for i in ids]
        out = np.zeros(len(ids), dtype=np.float64)
        have = [j for j, r in enumerate(rows) if r is not None]
        if have:
            out[have] = self._mat[[rows[j] for j in have]] @ q
        return out

"""Coverage mechanisms for issue 19's weak spots, measured by ``bench/locomo.py`` and not shipped (ADR 0008).

Multi-hop questions and questions whose evidence spans several sessions were the weak spots: thread propagation
and neighbour smoothing fill the top 10 with the best-matching session. Diversity *by session* had been tried and
lost (it crowds out the answer's own turns); these address *coverage* instead, each a general mechanism for an
agent's memory, none with a constant fitted to LoCoMo:

- ``aspect_coverage`` — query-aspect coverage (xQuAD/PM2-like, multiplicative, no constant): the aspects are the
  query's index terms weighted by idf; over the first places a note gains ``× (1 + ν)``, ``ν`` the share of the
  query's information it says and the notes already placed do not;
- ``xquad`` — the textbook additive form, ``0.5·s + 0.5·ν`` (λ = 0.5: relevance and coverage weighted equally);
- ``residual_round`` — a second retrieval for the part of the query the top notes do not say (its words whose
  terms no top-10 note holds), mixed in with weight ``u`` = that part's share of the query's idf (parameter-free);
- ``lift_share`` — a thread's propagation lift shared out over its notes, best first: the m-th keeps ``1/m``;
- ``lift_own`` — the lift given by how much a note matched on its own (``base / the thread's best base``) or only
  to notes a leg matched;
- ``mmr`` — maximal marginal relevance over the note vectors (λ = 0.5), diversity by content rather than session.

``query_term_matrix`` reads a ``BM25Index``'s postings (read-only, through ``BM25Index.postings``).
"""
from __future__ import annotations

import re

import numpy as np

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.ranking.context_scores import PoolScores
from palimpsest_memory.packs.memory.engine.text import tokenize


def query_term_matrix(bm25: BM25Index, query: str, ids) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(terms, idf, covers)`` for the query's terms the index knows (df > 0): ``idf`` per term (the BM25 leg's)
    and ``covers[t, j]`` True when note ``ids[j]`` holds term ``t`` at weight ≥ 1 — its own words, as the
    information prior counts them (a thread neighbour's word is in the bag at the expansion weight, < 1)."""
    ids = np.asarray(ids, dtype=np.int64)
    rows = np.fromiter((-1 if (r := bm25.row_of(i)) is None else r for i in ids.tolist()), dtype=np.int64,
                       count=ids.size)
    order = np.argsort(rows, kind="stable")
    srows = rows[order]
    terms, idf, mats = [], [], []
    for term in bm25.query_terms(query):
        tid = bm25.postings.vocab.get(term)
        if tid is None or bm25.postings.df[tid] <= 0:
            continue
        df = bm25.postings.df[tid]
        parts = bm25.postings.parts(tid)  # (one part unless restored from a snapshot and appended to since)
        post = np.concatenate([r for r, _ in parts])
        tf = np.concatenate([f for _, f in parts])
        own = post[tf >= 1.0]
        col = np.zeros(ids.size, dtype=bool)
        if own.size and srows.size:
            pos = np.minimum(np.searchsorted(srows, own), srows.size - 1)
            col[order[pos[srows[pos] == own]]] = True
        col &= rows >= 0
        terms.append(term)
        idf.append(float(np.log1p((len(bm25) - df + 0.5) / (df + 0.5))))
        mats.append(col)
    covers = np.vstack(mats) if mats else np.zeros((0, ids.size), dtype=bool)
    return terms, np.asarray(idf, dtype=np.float64), covers


def aspect_coverage(scores, ids, idf: np.ndarray, covers: np.ndarray, depth: int) -> np.ndarray:
    """Greedy over the first ``depth`` places: take the note with the best ``s_j·(1 + ν_j)``, ``ν_j = Σ_t w_t ·
    covers[t, j] · [no placed note says t]``, ``w_t = idf_t / Σ idf``; the rest get ``s·(1 + ν)`` against what
    the placed notes cover. Gains only fall as coverage grows, so the new scores sort in the greedy order."""
    s = np.asarray(scores, dtype=np.float64)
    ids = np.asarray(ids, dtype=np.int64)
    if s.size == 0 or covers.shape[0] == 0 or idf.sum() <= 0:
        return s
    w, cov = idf / idf.sum(), covers.astype(np.float64)
    uncovered, taken, out = np.ones(idf.size), np.zeros(s.size, dtype=bool), s.copy()
    for _ in range(min(depth, s.size)):
        nu = (w * uncovered) @ cov
        gain = np.where(taken, -np.inf, s * (1.0 + nu))
        at = np.flatnonzero(gain == gain.max())
        j = int(at[np.argmin(ids[at])])
        taken[j], out[j] = True, gain[j]
        uncovered = uncovered * (1.0 - cov[:, j])
        if not uncovered.any():
            break
    nu = (w * uncovered) @ cov
    out[~taken] = (s * (1.0 + nu))[~taken]
    return out


def _placed(gains_of, n: int, depth: int, s: np.ndarray) -> np.ndarray:
    """Scores that put the greedy picks (``gains_of(taken, last_pick)`` → gains) first, in pick order, and the
    rest after them in their old order."""
    out = s / (s.max() or 1.0) - 2.0
    taken = np.zeros(n, dtype=bool)
    j = -1
    for place in range(min(depth, n)):
        g = np.where(taken, -np.inf, gains_of(taken, j))
        j = int(np.argmax(g))
        taken[j], out[j] = True, 10.0 - place * 1e-3
    return out


def xquad(scores, idf: np.ndarray, covers: np.ndarray, depth: int) -> np.ndarray:
    """Additive xQuAD with binary term aspects: ``0.5·ŝ + 0.5·ν`` (ŝ = s / max s)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0 or idf.sum() <= 0:
        return s
    w, cov = idf / idf.sum(), covers.astype(np.float64)
    state = {"unc": np.ones(idf.size)}
    sn = s / (s.max() or 1.0)

    def gains(taken, j):
        if j >= 0:
            state["unc"] = state["unc"] * (1.0 - cov[:, j])
        return 0.5 * sn + 0.5 * ((w * state["unc"]) @ cov)
    return _placed(gains, s.size, depth, s)


def mmr(scores, vectors: np.ndarray, depth: int) -> np.ndarray:
    """Maximal marginal relevance, ``0.5·ŝ − 0.5·max cos(note, placed notes)``."""
    s = np.asarray(scores, dtype=np.float64)
    if s.size == 0:
        return s
    v = np.asarray(vectors, dtype=np.float64)
    v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    sn = s / (s.max() or 1.0)
    state = {"red": np.zeros(s.size)}

    def gains(taken, j):
        if j >= 0:
            state["red"] = np.maximum(state["red"], v @ v[j])
        return 0.5 * sn - 0.5 * state["red"]
    return _placed(gains, s.size, depth, s)


def _lift(pool: PoolScores, beta: float) -> np.ndarray:
    """What thread propagation added to each pooled note's final score (β·thread feature × the prior's factor)."""
    return beta * pool.thread * (pool.information if pool.information is not None else 1.0)


def lift_share(pool: PoolScores, code: np.ndarray, beta: float) -> np.ndarray:
    """A thread's m-th best pooled note (by score) keeps ``1/m`` of its propagation lift."""
    order = np.lexsort((pool.ids, -pool.scores))
    t = code[pool.ids[order]]
    o2 = np.argsort(t, kind="stable")
    ts = t[o2]
    start = np.r_[0, np.flatnonzero(ts[1:] != ts[:-1]) + 1]
    m = np.empty(ts.size, dtype=np.int64)
    m[o2] = np.arange(ts.size) - np.repeat(start, np.diff(np.r_[start, ts.size]))
    rank = np.empty_like(m)
    rank[order] = m + 1
    return pool.scores - _lift(pool, beta) * (1.0 - 1.0 / rank)


def lift_own(pool: PoolScores, code: np.ndarray, beta: float, how: str, alpha: float = 0.0) -> np.ndarray:
    """``how = "matched"``: the lift only for notes a leg matched; ``"graded"``: × base / the thread's best base;
    ``"smoothed"``: × (base + α·neighbour) / the thread's best such (a reply keeps the lift its question earns)."""
    if how == "matched":
        keep = (pool.base > 0).astype(np.float64)
    else:
        own = pool.base + alpha * pool.neighbour if how == "smoothed" else pool.base
        t = code[pool.ids]
        best = np.zeros(int(t.max()) + 1 if t.size else 1)
        np.maximum.at(best, t, own)
        keep = np.where(best[t] > 0, own / np.where(best[t] > 0, best[t], 1.0), 0.0)
    return pool.scores - _lift(pool, beta) * (1.0 - keep)


def residual(bm25: BM25Index, query: str, top_ids) -> tuple[str, float]:
    """The part of ``query`` the ``top_ids`` notes do not say: ``(its words whose index terms no top note holds,
    u = their share of the query's idf)``; ``("", 0)`` when the top notes say every term, or none of them (then
    the residual is the whole query and a second round would repeat the first)."""
    terms, idf, cov = query_term_matrix(bm25, query, top_ids)
    if not terms or idf.sum() <= 0:
        return "", 0.0
    miss = ~cov.any(axis=1)
    if not miss.any() or miss.all():
        return "", 0.0
    left = {t for t, m in zip(terms, miss) if m}
    words = " ".join(w for w in re.findall(r"\w+", query) if set(tokenize(w)) & left)
    return words, float(idf[miss].sum() / idf.sum())


def mix(first: list[tuple[int, float]], second: list[tuple[int, float]], u: float) -> dict[int, float]:
    """``s1/max s1 + u · s2/max s2`` over both rounds' notes."""
    hi1 = (first[0][1] if first else 1.0) or 1.0
    hi2 = (second[0][1] if second else 1.0) or 1.0
    out = {i: v / hi1 for i, v in first}
    for i, v in second:
        out[i] = out.get(i, 0.0) + u * v / hi2
    return out


def tail_threads(scores, threads: np.ndarray, head: int, depth: int) -> np.ndarray:
    """The first ``head`` places as ranked; after them, greedily, a note's score × ``1 / (1 + m)``, ``m`` = the
    notes of its thread already placed (head included): the second page covers the threads the first did not.
    Thread code 0 (none) is never discounted."""
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(threads, dtype=np.int64)
    if s.size <= head:
        return s
    order = np.argsort(-s, kind="stable")
    count = np.zeros(int(t.max()) + 1, dtype=np.float64)
    taken = np.zeros(s.size, dtype=bool)
    out = s / (s.max() or 1.0) - 2.0
    for place, j in enumerate(order[:head].tolist()):
        taken[j], out[j] = True, 10.0 - place * 1e-3
        count[t[j]] += t[j] != 0
    for place in range(head, min(depth, s.size)):
        g = np.where(taken, -np.inf, s / (1.0 + count[t]))
        j = int(np.argmax(g))
        taken[j], out[j] = True, 10.0 - place * 1e-3
        count[t[j]] += t[j] != 0
    return out


def vector_residual(qvec: np.ndarray, top_vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """The part of the (unit) query vector the top notes' vectors do not span, by least squares: ``(r / |r|,
    u = |r|²)``, u the share of the query they leave unexplained; ``(r, 0)`` when they explain all of it."""
    q = np.asarray(qvec, dtype=np.float64)
    q = q / (np.linalg.norm(q) or 1.0)
    a = np.asarray(top_vectors, dtype=np.float64).T
    coef, *_ = np.linalg.lstsq(a, q, rcond=None)
    r = q - a @ coef
    u = float(r @ r)
    return (r / np.sqrt(u) if u > 1e-9 else r).astype(np.float32), (u if u > 1e-9 else 0.0)

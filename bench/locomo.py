"""LoCoMo dialog-level evidence recall for the memory pack's retrieval schemes (issue 19).

Usage: python bench/locomo.py [--file PATH ...] [--embedder wordllama|minilm|e5] [--out bench/results/locomo.md]
                              [--no-runtime] [--speed N] [--compare e5 ...] [--only-compare] [--embed-cache DIR]
                              [--coverage-only] [--gap-only]

Every turn of a conversation is one note: content ``"<speaker>: <text>"`` (+ ``" [image: <caption>]"``),
scope = its conversation, occurred_at = the session date, and thread = its session *or nothing* (an agent that
remembers content, time and scope only). Side by side in one run: plain BM25, dense, the old default and the new
default, with and without ``thread``, one store per conversation and one shared store; per category and per
evidence span (one session / several); the session-level table of recall by episode (bench/locomo_sessions.py);
ablations of the new default with a paired bootstrap interval over questions; a leave-one-conversation-out check
of the one tunable tried; then the product itself through the runtime (``bench_runtime_rows.py``). Evidence ids are
normalised as ../shared/data/README.md says; questions whose evidence is empty after normalisation count as recall
1. Nothing about a question but its text is used at retrieval time. ``--file`` takes any LoCoMo-format file
(repeatable); the default is the shared dev file, which is for sanity only: the figures that count are on
conversations nobody tuned on.

The pure part imports only ``packs.memory`` modules (no runtime); its schemes mirror the product's stages.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from palimpsest_memory.packs.memory.ranking import fusion  # noqa: E402
from palimpsest_memory.packs.memory.engine.bm25 import BM25Index  # noqa: E402
from palimpsest_memory.packs.memory.ranking import adjusters  # noqa: E402
from palimpsest_memory.packs.memory.engine.context_signals import ThreadExpander, render_dated  # noqa: E402
from palimpsest_memory.packs.memory.engine.embedders import get_embedder  # noqa: E402
from palimpsest_memory.packs.memory.engine.text import tokenize  # noqa: E402
from palimpsest_memory.packs.memory.engine.threads import Episodes  # noqa: E402
from query_signals import date_window_boost, query_date_windows, speaker_boost  # noqa: E402
from palimpsest_memory.packs.memory.engine.vectors import VectorIndex  # noqa: E402

import locomo_coverage as cov  # noqa: E402  (bench/, on sys.path as this script's folder)
from report import write_report  # noqa: E402

DEFAULT_FILE = ROOT / ".." / "shared" / "data" / "locomo" / "locomo-dev5.json"
KS = (5, 10, 25, 50)
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
POOL = 200  # candidates per leg (the runtime's cap: max(limit*20, 40) <= 200)

_MONTHS = {m.lower(): i for i, m in enumerate(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
     "November", "December"], 1)}


# ------------------------------------------------------------- embedding
def embed_texts(emb, texts: list[str], *, query: bool = False, cache_dir: Path | None = None) -> np.ndarray:
    """``texts`` through ``emb`` — its query side (``embed_queries``) for questions when it has one, as the
    product embeds a recall's query — optionally memoised on disk by model, side and the texts' hash (a slow
    model then embeds a file once across runs; the vectors are the model's, bit for bit)."""
    fn = (getattr(emb, "embed_queries", None) if query else None) or emb.embed
    if cache_dir is None:
        return np.asarray(fn(texts), dtype=np.float32)
    import hashlib
    h = hashlib.sha1(("\x1f".join([emb.name, "q" if query else "d", *texts])).encode()).hexdigest()[:20]
    f = Path(cache_dir) / f"{emb.name}-{h}.npy"
    if f.exists():
        return np.load(f)
    m = np.asarray(fn(texts), dtype=np.float32)
    f.parent.mkdir(parents=True, exist_ok=True)
    np.save(f, m)
    return m


# ------------------------------------------------------------------- data
def parse_session_date(s: str) -> dt.datetime | None:
    m = re.match(r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", s or "")
    if not m:
        return None
    h, mi, ap, d, mon, y = m.groups()
    hour = int(h) % 12 + (12 if ap.lower() == "pm" else 0)
    return dt.datetime(int(y), _MONTHS[mon.lower()], int(d), hour, int(mi))


def normalise_evidence(evidence, valid: set[str]) -> list[str]:
    """Split on ';'/whitespace, normalise "D:11:26"/"D30:05" -> "D11:26"/"D30:5", drop unknown turns."""
    out: list[str] = []
    for e in evidence or []:
        for part in re.split(r"[;\s]+", str(e)):
            m = re.fullmatch(r"D:?(\d+):(\d+)", part.strip())
            if m:
                x = f"D{int(m.group(1))}:{int(m.group(2))}"
                if x in valid and x not in out:
                    out.append(x)
    return out


@dataclass
class Turn:
    id: int
    dia: str
    content: str
    speaker: str
    thread: str
    occurred_at: dt.datetime | None


@dataclass
class Conversation:
    sid: str
    speakers: list[str]
    turns: list[Turn]
    qa: list[dict] = field(default_factory=list)


def load(path: Path | list) -> list[Conversation]:
    """A LoCoMo-format file (a path, or its parsed JSON) as conversations of turns, ids in file order."""
    data = json.loads(Path(path).read_text()) if isinstance(path, (str, Path)) else path
    convs: list[Conversation] = []
    nid = 0
    for s in data:
        c = s["conversation"]
        nums = sorted(int(k.split("_")[1]) for k in c if re.fullmatch(r"session_\d+", k) and isinstance(c[k], list))
        turns: list[Turn] = []
        for n in nums:
            date = parse_session_date(c.get(f"session_{n}_date_time", ""))
            for t in c[f"session_{n}"]:
                content = f"{t['speaker']}: {t['text']}"
                if t.get("blip_caption"):
                    content += f" [image: {t['blip_caption']}]"
                # a turn's own time when the file gives one (bench/locomo_episodes.py's perturbed copies), else
                # its session's date
                when = dt.datetime.fromisoformat(t["timestamp"]) if t.get("timestamp") else date
                turns.append(Turn(nid, t["dia_id"], content, t["speaker"], f"{s['sample_id']}/session_{n}", when))
                nid += 1
        valid = {t.dia for t in turns}
        qa = [
            {"q": q["question"], "cat": int(q["category"]), "ev": normalise_evidence(q.get("evidence"), valid)}
            for q in s["qa"]
        ]
        speakers = [c.get("speaker_a", ""), c.get("speaker_b", "")]
        convs.append(Conversation(s["sample_id"], speakers, turns, qa))
    return convs


# ---------------------------------------------------------------- schemes
@dataclass(frozen=True)
class Scheme:
    """One retrieval scheme. The shipped defaults are ``NEW``; ``OLD`` is the default before issue 19."""

    name: str
    bm25_w: float = 0.7  # weight of the text leg in min-max fusion (0 = dense only)
    dense_w: float = 0.3  # weight of the vector leg (0 = BM25 only)
    fusion: str = "weighted"  # weighted | rrf
    dated: bool = True  # index "d Month YYYY: content"
    expansion: float = 0.5  # thread-neighbour document expansion weight (0 = off)
    alpha: float = 0.5  # neighbour smoothing (0 = off)
    beta: float = 0.5  # thread propagation (0 = off)
    top: int = 3
    gap_minutes: float = 30.0  # notes without a thread: episodes of their scope (threads.Episodes); 0 = none
    episodes: str = ""  # the episode rule (EPISODE_RULES): "" = the product's (threads.Episodes' defaults)
    lift_cap: int = 0  # beyond the n-th best note of a thread, notes lose their context lift (not shipped); 0 = off
    info_prior: bool = False  # score × ln(e + Σ idf of a note's own words) after the context signals
    scope_stats: bool = True  # a shared store's BM25 weighs words by the conversation's statistics
    crowding: float = 0.0  # diversification share (crowding_factors, not shipped); 0 = off
    gamma_date: float = 0.0  # query-date window boost (experimental, bench only)
    gamma_speaker: float = 0.0  # speaker boost (experimental, bench only)
    prf_docs: int = 0  # pseudo-relevance feedback from the top n notes (bench only); 0 = off
    prf_terms: int = 10  # …adding this many terms to the query
    prf_vector: float = 0.0  # …and this share of the top notes' mean vector to the query vector
    prf_mix: float = 0.5  # final = (1 − mix)·first pass + mix·second pass (each over its best)
    # coverage (issue 19's second pass, bench only, bench/locomo_coverage.py): "aspect" | "xquad" | "mmr" re-rank
    # the first coverage_depth places; "residual" a second round for the query's words the top 10 do not say
    coverage: str = ""
    coverage_depth: int = 50
    coverage_vector: bool = False  # residual round: also the vector leg, on the residual words' embedding
    lift_share: bool = False  # a thread's m-th best note keeps 1/m of its propagation lift
    lift_own: str = ""  # "matched" | "graded": the propagation lift by the note's own match

    @property
    def ep(self) -> tuple[float, str]:
        """What the inferred episodes depend on: the gap and the rule (a key of the stores' caches)."""
        return (self.gap_minutes, self.episodes)




def crowding_factors(threads: np.ndarray, share: float) -> np.ndarray:
    """Diversification across threads, measured here and not shipped (it did not pay): over a ranking (thread
    codes best first, 0 = none) a note keeps ``(1 − share)^m`` of its score, ``m`` = the better-ranked notes of
    its thread."""
    t = np.asarray(threads, dtype=np.int64)
    m = np.zeros(t.size, dtype=np.int64)
    if t.size:
        order = np.argsort(t, kind="stable")
        ts = t[order]
        start = np.r_[0, np.flatnonzero(ts[1:] != ts[:-1]) + 1]
        m[order] = np.arange(ts.size) - np.repeat(start, np.diff(np.r_[start, ts.size]))
        m[t == 0] = 0
    return (1.0 - share) ** m

OLD = Scheme("old default", gap_minutes=0.0, scope_stats=False)
# inferred episodes, no prior: the default this session started from
PREV = Scheme("before the information prior", scope_stats=False)
BASELINES = [
    Scheme("BM25 plain", 1, 0, dated=False, expansion=0, alpha=0, beta=0),
    Scheme("BM25 dated", 1, 0, expansion=0, alpha=0, beta=0),
    Scheme("dense dated", 0, 1, expansion=0, alpha=0, beta=0),
]


def shipped() -> Scheme:
    """The new default, read from the memory pack's defaults.toml (the product's values)."""
    import tomllib
    cfg = tomllib.loads((ROOT / "packs" / "memory" / "defaults.toml").read_text())
    c = cfg["context"]
    return Scheme("new default", cfg["fusion_weights"]["text"], cfg["fusion_weights"]["vector"],
                  expansion=c["expansion_weight"], alpha=c["neighbour_alpha"], beta=c["thread_beta"],
                  top=c["thread_top"], gap_minutes=c["episode_gap_minutes"],
                  info_prior=c.get("information_prior", True))


def coverage_variants(new: Scheme) -> list[Scheme]:
    """Issue 19's coverage mechanisms (bench/locomo_coverage.py), none shipped: ADR 0008's table."""
    return [
        replace(new, name="+ query-aspect coverage (× (1 + ν), idf-weighted query terms)", coverage="aspect"),
        replace(new, name="+ xQuAD (0.5·s + 0.5·ν, term aspects)", coverage="xquad"),
        replace(new, name="+ residual round (the query's words the top 10 do not say, BM25, × u)",
                coverage="residual"),
        replace(new, name="+ residual round, both legs (residual words embedded)", coverage="residual",
                coverage_vector=True),
        replace(new, name="+ residual round in vector space (query vector minus its projection on the top 10's)",
                coverage="vector-residual"),
        replace(new, name="+ thread lift shared out (m-th note of a thread keeps 1/m)", lift_share=True),
        replace(new, name="+ thread lift ∝ own match (base / thread's best base)", lift_own="graded"),
        replace(new, name="+ thread lift ∝ smoothed own match ((base + α·neighbour) / thread's best)",
                lift_own="smoothed"),
        replace(new, name="+ thread lift only to notes a leg matched", lift_own="matched"),
        replace(new, name="+ MMR over note vectors (λ 0.5)", coverage="mmr"),
        replace(new, name="+ places 11–50 cover other threads (× 1/(1 + m))", coverage="tail"),
        replace(new, name="thread value = its best note (thread_top 1, a one-hit session lifted like a rich one)", top=1),
        replace(new, name="thread value = mean of its top 5 (thread_top 5)", top=5),
    ]


def ablations(new: Scheme) -> list[Scheme]:
    return [
        replace(new, name="− information prior", info_prior=False),
        replace(new, name="− information prior − neighbour smoothing", info_prior=False, alpha=0.0),
        replace(new, name="+ lift cap: a thread's 5 best notes keep their context lift, the rest lose it", lift_cap=5),
        replace(new, name="− inferred episodes", gap_minutes=0.0),
        replace(new, name="episode gap 1 minute", gap_minutes=1.0),
        replace(new, name="episode gap 1 day", gap_minutes=24 * 60.0),
        replace(new, name="+ crowding 0.05 (diversification)", crowding=0.05),
        replace(new, name="+ crowding 0.1", crowding=0.1),
        replace(new, name="+ crowding 0.3", crowding=0.3),
        replace(new, name="− neighbour expansion (write time)", expansion=0.0),
        replace(new, name="− neighbour smoothing", alpha=0.0),
        replace(new, name="− thread propagation", beta=0.0),
        replace(new, name="− dense leg (BM25 only)", bm25_w=1.0, dense_w=0.0),
        replace(new, name="− date rendering", dated=False),
        replace(new, name="+ pseudo-relevance feedback (5 notes, 10 terms)", prf_docs=5),
        replace(new, name="+ PRF, text and vector (Rocchio 0.5)", prf_docs=5, prf_vector=0.5),
        replace(new, name="+ query-date window (γ=0.2)", gamma_date=0.2),
        replace(new, name="+ speaker boost (γ=0.1)", gamma_speaker=0.1),
    ]


# ------------------------------------------------------------ the stores
def indexed_text(t: Turn, dated: bool) -> str:
    return render_dated(t.content, t.occurred_at) if dated else t.content


# The episode rules a scheme can name (bench/locomo_episodes.py adds its ablations): gap in seconds -> Episodes
EPISODE_RULES: dict[str, object] = {"": Episodes}


def thread_keys(convs: list[Conversation], threads: bool, ep: tuple[float, str]) -> dict[int, object]:
    """Each turn's thread key as the product derives it: the session when the caller passes ``thread``; else
    the inferred episode of its scope (the conversation) by the rule ``ep`` = (gap minutes, rule name), or none.
    A turn without a time is remembered at one instant (0.0), as a burst of writes without times would be."""
    if threads:
        return {t.id: t.thread for c in convs for t in c.turns}
    gap_minutes, rule = ep
    eps = EPISODE_RULES[rule](gap_minutes * 60.0)
    words = getattr(eps, "reads_words", False)  # a bench-only topic rule (locomo_episodes.py) reads the text
    return {t.id: eps.key(t.id, "bench", c.sid, t.occurred_at.timestamp() if t.occurred_at else 0.0,
                          *((tokenize(t.content),) if words else ()))
            for c in convs for t in c.turns}


class Stores:
    """The indexes of every (shared store?, threads?, episode gap, dated, expansion) setting, built lazily.

    ``shared=False``: one BM25 index per conversation (its own statistics); ``shared=True``: one index over all
    conversations (namespace-wide statistics, as the product's namespace) searched with the conversation as
    the allowed set. Vectors need no statistics, so both stores share them."""

    def __init__(self, convs: list[Conversation]):
        self.convs = convs
        self.n = sum(len(c.turns) for c in convs)
        self.conv_of = np.zeros(self.n, dtype=np.int64)
        for k, c in enumerate(convs):
            for t in c.turns:
                self.conv_of[t.id] = k
        self.masks = [self.conv_of == k for k in range(len(convs))]
        self._bm25: dict = {}
        self._tokens: dict = {}
        self.pos = {t.id: j for c in convs for j, t in enumerate(c.turns)}
        self._links: dict = {}
        self._vec: dict = {}

    def tokens(self, k: int) -> tuple[dict[int, list[str]], dict[str, int]]:
        """Conversation ``k``'s notes' own (dated) tokens and its document frequencies."""
        if k not in self._tokens:
            toks = {t.id: tokenize(indexed_text(t, True)) or [""] for t in self.convs[k].turns}
            df: dict[str, int] = {}
            for bag in toks.values():
                for term in set(bag):
                    df[term] = df.get(term, 0) + 1
            self._tokens[k] = (toks, df)
        return self._tokens[k]

    def links(self, threads: bool, gap: tuple[float, str]):
        key = (threads, None if threads else gap)
        if key not in self._links:
            keys = thread_keys(self.convs, threads, gap)
            ex = ThreadExpander(0.0)
            prev, nxt, code = np.full(self.n, -1), np.full(self.n, -1), np.zeros(self.n, dtype=np.int64)
            codes: dict = {}
            for c in self.convs:
                for t in c.turns:
                    k = keys[t.id]
                    ex.links.add(t.id, None if k is None else (c.sid, k))
                    code[t.id] = 0 if k is None else codes.setdefault((c.sid, k), len(codes) + 1)
            for i in range(self.n):
                p, q = ex.links.neighbours(i)
                prev[i], nxt[i] = (-1 if p is None else p), (-1 if q is None else q)
            self._links[key] = (keys, prev, nxt, code)
        return self._links[key]

    def bm25(self, shared: bool, threads: bool, gap: tuple[float, str], dated: bool, expansion: float
             ) -> list[BM25Index]:
        """One index per conversation (``shared=False``) or the same shared index for each."""
        key = (shared, threads, None if threads else gap, dated, expansion)
        if key not in self._bm25:
            keys = self.links(threads, gap)[0]
            groups = [self.convs] if shared else [[c] for c in self.convs]
            built = []
            for g in groups:
                idx, ex = BM25Index(), ThreadExpander(expansion)
                for c in g:  # the write-time path: incremental, in arrival order
                    group = self.convs.index(c)  # the conversation is the scope: its notes' statistics group
                    for t in c.turns:
                        k = keys[t.id]
                        changed = ex.add(t.id, None if k is None else (c.sid, k), tokenize(indexed_text(t, dated)))
                        idx.add_weighted(list(changed), list(changed.values()))
                        idx.set_groups(list(changed), [group] * len(changed))
                built.append(idx)
            self._bm25[key] = built * len(self.convs) if shared else built
        return self._bm25[key]

    def vectors(self, emb, dated: bool, cache: dict) -> list[VectorIndex]:
        key = (emb.name, dated)
        if key not in self._vec:
            out = []
            for c in self.convs:
                vi = VectorIndex(emb.dim)
                vi.add([t.id for t in c.turns], cache[key][c.sid])
                out.append(vi)
            self._vec[key] = out
        return self._vec[key]


def prf_query(st: Stores, k: int, top: list[int], query: str, n_terms: int) -> str:
    """Pseudo-relevance feedback (not shipped): the query plus the ``n_terms`` terms that weigh most in the top
    notes' own text (tf / length × log(1 + N / df) over the conversation), excluding the query's own terms."""
    toks, df = st.tokens(k)
    own = set(tokenize(query))
    n = len(st.convs[k].turns)
    w: dict[str, float] = {}
    for i in top:
        bag = toks[i]
        for term in set(bag):
            if term not in own:
                w[term] = w.get(term, 0.0) + bag.count(term) / len(bag) * math.log1p(n / df[term])
    return query + " " + " ".join(sorted(w, key=lambda t: (-w[t], t))[:n_terms])


def retrieve(st: Stores, k: int, scheme: Scheme, env: tuple[bool, bool], query: str, qvec, emb, cache) -> list[int]:
    first = retrieve_once(st, k, scheme, env, query, qvec, emb, cache)
    if scheme.coverage == "vector-residual" and qvec is not None:  # the query vector's part the top 10 miss
        vecs = cache[(emb.name, scheme.dated)][st.convs[k].sid]
        r, u = cov.vector_residual(qvec, np.asarray([vecs[st.pos[i]] for i, _ in first[:10]]))
        if not u:
            return [i for i, _ in first[: max(KS)]]
        second = retrieve_once(st, k, replace(scheme, bm25_w=0.0, dense_w=1.0), env, query, r, emb, cache)
        return [i for i, _ in fusion.ranked(cov.mix(first, second, u), max(KS))]
    if scheme.coverage == "residual":  # a second round for the part of the query the top 10 do not say
        idx = st.bm25(env[0], env[1], scheme.ep, scheme.dated, scheme.expansion)[k]
        q2, u = cov.residual(idx, query, [i for i, _ in first[:10]])
        if not q2:
            return [i for i, _ in first[: max(KS)]]
        if scheme.coverage_vector and emb is not None:
            second = retrieve_once(st, k, scheme, env, q2, emb.embed([q2])[0], emb, cache)
        else:
            second = retrieve_once(st, k, replace(scheme, bm25_w=1.0, dense_w=0.0), env, q2, None, None, cache)
        return [i for i, _ in fusion.ranked(cov.mix(first, second, u), max(KS))]
    if not scheme.prf_docs:
        return [i for i, _ in first[: max(KS)]]
    top = [i for i, _ in first[: scheme.prf_docs]]
    q2 = prf_query(st, k, top, query, scheme.prf_terms)
    v2 = qvec
    if qvec is not None and scheme.prf_vector:  # Rocchio on the query vector with the top notes' vectors
        vecs = st.vectors(emb, scheme.dated, cache)[k]
        m = np.mean([cache[(emb.name, scheme.dated)][st.convs[k].sid][st.pos[i]] for i in top], axis=0)
        v2 = qvec + scheme.prf_vector * m
        v2 = v2 / (np.linalg.norm(v2) or 1.0)
        del vecs
    second = retrieve_once(st, k, scheme, env, q2, v2, emb, cache)
    hi1, hi2 = (first[0][1] if first else 1.0) or 1.0, (second[0][1] if second else 1.0) or 1.0
    mixed: dict[int, float] = {}
    for i, v in first:
        mixed[i] = (1 - scheme.prf_mix) * v / hi1
    for i, v in second:
        mixed[i] = mixed.get(i, 0.0) + scheme.prf_mix * v / hi2
    return [i for i, _ in fusion.ranked(mixed, max(KS))]


def retrieve_once(st: Stores, k: int, scheme: Scheme, env: tuple[bool, bool], query: str, qvec, emb, cache
                  ) -> list[tuple[int, float]]:
    """The pooled notes of one pass, best first, with their final scores."""
    shared, threads = env
    conv = st.convs[k]
    allowed = st.masks[k] if shared else None
    legs = {}
    idx = st.bm25(shared, threads, scheme.ep, scheme.dated, scheme.expansion)[k]
    # the product's scoped recall: the conversation's own BM25 statistics (bm25_scope.py)
    within = idx.collection(k) if shared and scheme.scope_stats else None
    if scheme.bm25_w > 0:
        legs["text"] = idx.search(query, POOL, allowed=allowed, within=within)
    if scheme.dense_w > 0 and emb is not None:
        legs["vector"] = st.vectors(emb, scheme.dated, cache)[k].search(qvec, POOL, min_cosine=0.10)
    if scheme.fusion == "rrf":
        fused = fusion.rrf(legs, k=60).scores
    else:
        fused = fusion.weighted(legs, {"text": scheme.bm25_w, "vector": scheme.dense_w}).scores
    _, prev, nxt, code = st.links(threads, scheme.ep)
    pool = adjusters.context(fused, prev=prev, nxt=nxt, thread=code, alpha=scheme.alpha, beta=scheme.beta,
                           top=scheme.top)
    if scheme.info_prior:
        info = np.zeros(pool.ids.size)
        info[pool.base > 0] = idx.own_information(pool.ids[pool.base > 0])  # as stages.information does
        pool = adjusters.information_prior(pool, info)
    if scheme.lift_share:
        pool = replace(pool, scores=cov.lift_share(pool, code, scheme.beta))
    if scheme.lift_own:
        pool = replace(pool, scores=cov.lift_own(pool, code, scheme.beta, scheme.lift_own, scheme.alpha))
    if scheme.coverage in ("aspect", "xquad"):
        idx = st.bm25(shared, threads, scheme.ep, scheme.dated, scheme.expansion)[k]
        _, idf, covers = cov.query_term_matrix(idx, query, pool.ids)
        pool = replace(pool, scores=cov.aspect_coverage(pool.scores, pool.ids, idf, covers, scheme.coverage_depth)
                       if scheme.coverage == "aspect" else cov.xquad(pool.scores, idf, covers, scheme.coverage_depth))
    if scheme.coverage == "mmr" and emb is not None:
        vecs = cache[(emb.name, scheme.dated)][conv.sid]
        pool = replace(pool, scores=cov.mmr(pool.scores, np.asarray([vecs[st.pos[i]] for i in pool.ids.tolist()]),
                                            scheme.coverage_depth))
    if scheme.coverage == "tail":  # the places after the first 10 cover other threads
        pool = replace(pool, scores=cov.tail_threads(pool.scores, code[pool.ids], 10, scheme.coverage_depth))
    if scheme.lift_cap:  # "smoothing as a tie-break": only a thread's best lift_cap notes keep what context lent
        order = np.lexsort((pool.ids, -pool.scores))
        rank = np.zeros(pool.ids.size, dtype=np.int64)
        t = code[pool.ids[order]]
        seen: dict[int, int] = {}
        for j, tt in zip(order.tolist(), t.tolist()):
            seen[tt] = seen.get(tt, 0) + 1
            rank[j] = seen[tt] if tt else 0
        own = pool.base * (pool.information if pool.information is not None else 1.0)
        pool.scores = np.where(rank > scheme.lift_cap, own, pool.scores)
    scores = dict(zip(pool.ids.tolist(), pool.scores.tolist()))
    if scheme.gamma_date or scheme.gamma_speaker:
        by_id = {t.id: t for t in conv.turns}
        if scheme.gamma_date:
            scores, _ = date_window_boost(scores, lambda i: by_id[i].occurred_at if i in by_id else None,
                                          query_date_windows(query), scheme.gamma_date)
        if scheme.gamma_speaker:
            scores, _ = speaker_boost(scores, lambda i: by_id[i].speaker if i in by_id else None, query,
                                      conv.speakers, scheme.gamma_speaker)
    ranked = fusion.ranked(scores, len(scores))
    if scheme.crowding:  # diversification over the sorted pool (not shipped)
        ids = np.array([i for i, _ in ranked], dtype=np.int64)
        s = np.array([v for _, v in ranked]) * crowding_factors(code[ids], scheme.crowding)
        order = np.lexsort((ids, -s))
        return list(zip(ids[order].tolist(), s[order].tolist()))
    return ranked


def spans(conv: Conversation, ev: list[str]) -> int:
    """How many sessions a question's evidence spans (0 = no evidence)."""
    return len({e.split(":")[0] for e in ev})


def evaluate(st: Stores, scheme: Scheme, env, emb, cache, qcache, keep: list | None = None) -> np.ndarray:
    """Recall@KS of every question, (n_questions, len(KS)), in file order; ``keep``, when given, receives each
    question's ranking as dia ids (the first ``max(KS)``)."""
    rows = []
    for k, conv in enumerate(st.convs):
        dia = {t.dia: t.id for t in conv.turns}
        name = {t.id: t.dia for t in conv.turns}
        for j, qa in enumerate(conv.qa):
            qvec = qcache[emb.name][conv.sid][j] if emb is not None else None
            got = retrieve(st, k, scheme, env, qa["q"], qvec, emb, cache)
            ev = {dia[e] for e in qa["ev"]}
            rows.append([1.0 if not ev else len(ev & set(got[:kk])) / len(ev) for kk in KS])
            if keep is not None:
                keep.append([name[i] for i in got[:max(KS)]])
    return np.array(rows) * 100


def bootstrap_ci(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 19) -> tuple[float, float, float]:
    """Mean of ``a − b`` (paired by question) and its 95 % percentile bootstrap interval."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, d.size, size=(n, d.size))].mean(axis=1)
    return float(d.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


# ------------------------------------------------------------------ speed
def speed(convs: list[Conversation], n: int) -> list[str]:
    """What inferred episodes cost: the product's index (``MemoryIndex``, no embedding) fed ``n`` notes (LoCoMo
    turns replicated into new scopes, a second apart) without a thread, inference off and on, and with their
    sessions as threads, side by side; then BM25 top-200 + fusion + context over the index for 300 questions."""
    from palimpsest_memory.packs.memory.engine.index import MemoryIndex
    from palimpsest_memory.packs.memory.engine.rowstore import NoteRow
    base = [(c, t) for c in convs for t in c.turns]
    def rows(threads: bool) -> list:
        return [NoteRow(i + 1, "ns", t.content, "episodic", None, f"{c.sid}#{i // len(base)}",
                        f"{t.thread}#{i // len(base)}" if threads else None, [], 0.3, 0.02,
                        t.occurred_at + dt.timedelta(seconds=i % len(base)), t.occurred_at)
                for i, (c, t) in ((i, base[i % len(base)]) for i in range(n))]
    qs = [q["q"] for c in convs for q in c.qa][:300]
    out = [f"\n### Speed of inferred episodes ({n:,} notes, index only)\n",
           "| notes | index ingest (tokenise + expansion + BM25, no embedding) | BM25 + fusion + context p50 | "
           "information prior p50 (on top) | load |", "|---|---|---|---|---|"]
    for label, gap, threads in (("no thread, inference off", 0.0, False), ("no thread, inference on (30 min)",
                                                                           1800.0, False),
                                ("with `thread` (sessions)", 1800.0, True)):
        notes = rows(threads)
        idx = MemoryIndex(k1=1.2, b=0.75, max_query_terms=16, expansion_weight=0.5, episode_gap_seconds=gap)
        t0 = time.perf_counter()
        for s in range(0, n, 500):
            idx.add(notes[s:s + 500], {})
        ingest = n / (time.perf_counter() - t0)
        lat, prior = [], []
        for q in qs:
            s0 = time.perf_counter()
            fused = fusion.weighted({"text": idx.bm25.search(q, POOL)}, {"text": 1.0}).scores
            pool = adjusters.context(fused, prev=idx.column("prev"), nxt=idx.column("next"), thread=idx.column("thread"),
                                   alpha=0.5, beta=0.5, top=3)
            lat.append((time.perf_counter() - s0) * 1000)
            s1 = time.perf_counter()
            info = np.zeros(pool.ids.size)
            info[pool.base > 0] = idx.bm25.own_information(pool.ids[pool.base > 0])
            adjusters.information_prior(pool, info)
            prior.append((time.perf_counter() - s1) * 1000)
        out.append(f"| {label} | {ingest:,.0f} notes/s | {statistics.median(lat):.2f} ms | "
                   f"{statistics.median(prior):.2f} ms | "
                   f"{__import__('os').getloadavg()[0]:.1f} |")
    return out + ["\nWith inference on, a note without a thread costs what a threaded note always cost (its "
                  "previous neighbour's bag is re-indexed); the product's ingest and recall at 100k are in "
                  "memory_perf.md."]


# ------------------------------------------------------------------- main
ENVS = {(False, True): "one store per conversation, with `thread`",
        (False, False): "one store per conversation, without `thread`",
        (True, True): "one shared store, with `thread`",
        (True, False): "one shared store, without `thread`"}


def columns(r: np.ndarray, cats: np.ndarray, span: np.ndarray) -> list[str]:
    o = r.mean(axis=0)
    cells = [f"{o[i]:.1f}" for i in range(len(KS))]
    for c in CATS:
        sel = cats == c
        cells.append(f"{r[sel, 1].mean():.1f}" if sel.any() else "–")
    for sel in (span == 1, span >= 2):
        cells.append(f"{r[sel, 1].mean():.1f}" if sel.any() else "–")
    return cells


HEADER = ["| scheme | " + " | ".join(f"R@{k}" for k in KS) + " | " + " | ".join(f"{v}" for v in CATS.values())
          + " | one session | several sessions |",
          "|---|" + "---|" * (len(KS) + len(CATS) + 2)]


def ci_cell(a: np.ndarray, b: np.ndarray) -> str:
    m, lo, hi = bootstrap_ci(a[:, 1], b[:, 1])
    mark = " *" if lo > 0 or hi < 0 else ""
    return f"{m:+.1f} [{lo:+.1f}, {hi:+.1f}]{mark}"


def loco(st: Stores, base: Scheme, grid: list[Scheme], env, emb, cache, qcache, qconv: np.ndarray) -> list[str]:
    """Leave one conversation out: on each conversation, the grid setting that is best (R@10) on the other
    four; its held-out R@10 against ``base`` on the same questions, with the paired bootstrap interval."""
    res = {s.name: evaluate(st, s, env, emb, cache, qcache) for s in [base, *grid]}
    chosen = np.zeros_like(res[base.name])
    picks = []
    for k, c in enumerate(st.convs):
        train, test = qconv != k, qconv == k
        best = max(grid, key=lambda s: res[s.name][train, 1].mean())
        picks.append(f"{c.sid}: {best.name}")
        chosen[test] = res[best.name][test]
    return [f"| {ENVS[env]} | {'; '.join(picks)} | {res[base.name][:, 1].mean():.1f} | {chosen[:, 1].mean():.1f} | "
            f"{ci_cell(chosen, res[base.name])} |"]


DEV_CONVS = ("conv-26", "conv-30", "conv-41")  # the part issue 19's new signals were developed on


def split_section(st: Stores, new: Scheme, env, emb, cache, qcache, qconv: np.ndarray, cats: np.ndarray,
                  span: np.ndarray, base_res: np.ndarray) -> list[str]:
    """Each component of the new default removed (and the previous default), on the development part and on
    the held-out part separately: Δ R@10 = variant − new default with its paired bootstrap interval per part."""
    dev = np.isin(qconv, [k for k, c in enumerate(st.convs) if c.sid in DEV_CONVS])
    parts = [(name, sel) for name, sel in (("dev part", dev), ("held-out part", ~dev)) if sel.any()]
    head = " | ".join(f"R@10 {n} | Δ {n} | R@5 {n} | multi-hop {n} | several sessions {n}" for n, _ in parts)
    out = [f"\n### Dev part / held-out part, {ENVS[env]}\n",
           f"Dev part = {', '.join(c.sid for c in st.convs if c.sid in DEV_CONVS) or 'none'} (the information "
           "prior's form was chosen by these figures); held-out part = the others (printed beside them while "
           "choosing, never chosen on). "
           "Δ = variant − new default, paired bootstrap over that part's questions.\n",
           f"| scheme | {head} |", "|---|" + "---|" * (5 * len(parts))]
    variants = [(new, base_res), *((s, None) for s in [replace(PREV, name="− information prior (the previous default)"),
                                                      ablations(new)[1]])]
    for s, r in variants:
        r = evaluate(st, s, env, emb, cache, qcache) if r is None else r
        cells = []
        for _, sel in parts:
            d = "" if s is new else ci_cell(r[sel], base_res[sel])
            cells += [f"{r[sel, 1].mean():.1f}", d, f"{r[sel, 0].mean():.1f}",
                      f"{r[sel & (cats == 1), 1].mean():.1f}" if (sel & (cats == 1)).any() else "–",
                      f"{r[sel & (span >= 2), 1].mean():.1f}" if (sel & (span >= 2)).any() else "–"]
        out.append(f"| {'**' + s.name + '**' if s is new else s.name} | " + " | ".join(cells) + " |")
    return out


def compare_section(path: Path, convs: list[Conversation], st: Stores, new: Scheme, embs: list, cache, qcache,
                    qconv: np.ndarray, cats: np.ndarray, span: np.ndarray, runtime: bool) -> list[str]:
    """The dense leg with each embedder (issue 19, ADR 0028): dense alone and the new default with every
    embedder in ``embs`` (the first is the reference), side by side over the same questions; Δ = the same scheme
    with the reference embedder, paired bootstrap. Then the dev part / held-out part, and the product."""
    ref = embs[0]
    dev = np.isin(qconv, [k for k, c in enumerate(st.convs) if c.sid in DEV_CONVS])
    out = [f"\n### The dense leg: embedders side by side (reference `{ref.name}`)\n",
           "Same schemes, same questions, only the embedder changes (documents embedded as the product embeds "
           "them; questions through the model's query side when it has one). Δ R@10 = this embedder − the "
           "reference, same scheme, paired bootstrap over questions. Fusion weights, context constants and the "
           "information prior are the shipped ones: nothing was re-fitted for another embedder.\n"]
    res: dict = {}
    for env, title in ENVS.items():
        out += [f"\n#### {title}\n", HEADER[0] + f" Δ R@10 vs `{ref.name}` | Δ R@25 | Δ R@5 |",
                HEADER[1] + "---|---|---|"]
        for label, scheme in (("dense dated", BASELINES[2]), ("new default", new)):
            for e in embs:
                r = evaluate(st, scheme, env, e, cache, qcache)
                res[(env, label, e.name)] = r
                b = res[(env, label, ref.name)]
                d = "" if e is ref else " | ".join([ci_cell(r, b), ci_cell(r[:, [2, 2]], b[:, [2, 2]]),
                                                    ci_cell(r[:, [0, 0]], b[:, [0, 0]])])
                out.append(f"| {label}, `{e.name}` | " + " | ".join(columns(r, cats, span)) + f" | {d or ' |  | '} |")
                print(out[-1], file=sys.stderr)
    # the fusion weights are a shipped constant; whether a stronger dense leg wants another is checked held out:
    # per conversation, the weight best (R@10) on the other conversations, scored on the held-out one
    grid = [replace(new, name=f"weights {1 - w:.1f}/{w:.1f}", bm25_w=round(1 - w, 2), dense_w=w)
            for w in (0.2, 0.3, 0.4, 0.5)]
    out += ["\n#### Fusion weights, held out (leave one conversation out)\n",
            "Per conversation, the `weighted` fusion's text/vector weights (grid 0.8/0.2 … 0.5/0.5) that are best "
            "(R@10) on the other conversations, scored on that conversation; Δ = that held-out R@10 − the shipped "
            "0.7/0.3, same questions. Information only: the shipped weights are not changed by it.\n",
            "| embedder | store | chosen on the other conversations | R@10 shipped weights | R@10 held-out choice | Δ |",
            "|---|---|---|---|---|---|"]
    for e in embs:
        for env in [(False, True), (True, True)]:
            out += [f"| `{e.name}` " + loco(st, replace(new, name="shipped 0.7/0.3"), grid, env, e, cache, qcache,
                                            qconv)[0]]
    parts = [(n, sel) for n, sel in (("dev part", dev), ("held-out part", ~dev)) if sel.any()]
    head = " | ".join(f"R@10 {n} | Δ R@10 {n} | R@25 {n} | multi-hop {n} | open-domain {n} | several sessions {n}"
                      for n, _ in parts)
    out += ["\n#### Dev part / held-out part\n",
            f"Dev part = {', '.join(c.sid for c in st.convs if c.sid in DEV_CONVS) or 'none'}; held-out part = "
            "the others. Δ = this embedder − the reference, same scheme and store, paired bootstrap over that "
            "part's questions.\n", f"| store | scheme | {head} |", "|---|---|" + "---|" * (6 * len(parts))]
    for env, title in ENVS.items():
        for label in ("dense dated", "new default"):
            for e in embs:
                r, base = res[(env, label, e.name)], res[(env, label, ref.name)]
                cells = []
                for _, sel in parts:
                    def cat(c, sel=sel):
                        m = sel & (cats == c)
                        return f"{r[m, 1].mean():.1f}" if m.any() else "–"
                    m2 = sel & (span >= 2)
                    cells += [f"{r[sel, 1].mean():.1f}", "" if e is ref else ci_cell(r[sel], base[sel]),
                              f"{r[sel, 2].mean():.1f}", cat(1), cat(3),
                              f"{r[m2, 1].mean():.1f}" if m2.any() else "–"]
                out.append(f"| {title} | {label}, `{e.name}` | " + " | ".join(cells) + " |")
    if runtime:
        from embedder_cost import Memo
        from locomo_runtime import evaluate_runtime
        out += ["\n#### The product: `memory.recall` with each embedder\n",
                "As in the product rows below (one shared DuckDB store, the importer's fields, `limit=50`), with "
                "`[packs.memory] embedder` set to each model. The model's vectors are the ones embedded above, "
                "memoised by text (what the store embeds, `index_text`, is the dated text above), so the times "
                "below exclude embedding; bench/results/embedder_cost.md gives what embedding costs.\n",
                HEADER[0] + f" Δ R@10 vs `{ref.name}` | Δ R@25 | Δ R@5 |", HEADER[1] + "---|---|---|"]
        stats = []

        def primer(e, spec):  # type: ignore[no-untyped-def]
            docs = {indexed_text(t, True): cache[(e.name, True)][c.sid][j] for c in convs for j, t in enumerate(c.turns)}
            qs = {qa["q"]: qcache[e.name][c.sid][j] for c in convs for j, qa in enumerate(c.qa)}

            def prime(rt):  # type: ignore[no-untyped-def]
                reg = rt.pack_state("memory").embedders
                reg._models[spec] = Memo(e, docs, qs)
            return prime
        for threads in (True, False):
            base = None
            for e in embs:
                spec = getattr(e, "spec_name", None) or "wordllama"
                cfg = {"packs": {"memory": {"embedder": spec}}}
                r = evaluate_runtime(path, convs, now="clock", config=cfg, threads=threads, prime=primer(e, spec))
                base = r if e is ref else base
                rr, bb = r["rows"], base["rows"]
                d = " |  | " if e is ref else " | ".join([ci_cell(rr, bb), ci_cell(rr[:, [2, 2]], bb[:, [2, 2]]),
                                                          ci_cell(rr[:, [0, 0]], bb[:, [0, 0]])])
                name = f"memory.recall, new default, `{e.name}`, {'with' if threads else 'without'} `thread`"
                out.append(f"| **{name}** | " + " | ".join(columns(r["rows"], cats, span)) + f" | {d} |")
                print(out[-1], file=sys.stderr)
                if not threads:
                    continue
                sel = ~dev
                stats.append(f"- {name}: held-out part R@10 {r['rows'][sel, 1].mean():.1f}"
                             + ("" if e is ref else f" (Δ {ci_cell(r['rows'][sel], base['rows'][sel])})")
                             + f"; import {r['ingest_notes_per_s']:,.0f} notes/s ({r['notes']} notes, entity linking "
                             f"included, embedding memoised); recall p50 {r['recall_p50_ms']:.1f} ms excluding the "
                             f"query embedding; 1-min load {__import__('os').getloadavg()[0]:.1f}")
        out += [""] + stats
    return out


def gap_rows(path: Path, convs: list[Conversation], st: Stores, new: Scheme, embs: list, cache, qcache,
             cats: np.ndarray, span: np.ndarray, runtime: bool) -> list[str]:
    """The lexical-gap section (bench/locomo_gap.py) for one shared store with `thread`: plain BM25, each
    embedder's dense leg, the new default and, with ``runtime``, ``memory.recall``."""
    from locomo_gap import gap_section
    env, named = (True, True), []
    for label, scheme, e in [("BM25 plain", BASELINES[0], embs[0]),
                             *((f"dense dated, `{e.name}`", BASELINES[2], e) for e in embs),
                             (f"new default (the bench's stages), `{embs[0].name}`", new, embs[0])]:
        keep: list = []
        evaluate(st, scheme, env, e, cache, qcache, keep=keep)
        named.append((label, keep))
    if runtime:
        from locomo_runtime import evaluate_runtime
        named.append(("**memory.recall, new default**", evaluate_runtime(path, convs, now="clock")["rankings"]))
    return gap_section(convs, cats, span, named, ENVS[env])


def coverage_section(st: Stores, new: Scheme, emb, cache, qcache, qconv: np.ndarray, cats: np.ndarray,
                     span: np.ndarray) -> list[str]:
    """Issue 19's coverage mechanisms (``coverage_variants``) against the new default: R@10 and its paired
    interval on the dev part and the held-out part, then R@25 and the weak spots over all questions; and where
    the several-session evidence the default misses stands against the query's terms."""
    dev = np.isin(qconv, [k for k, c in enumerate(st.convs) if c.sid in DEV_CONVS])
    out = ["\n### Coverage mechanisms (issue 19, second pass): dev part / held-out part\n",
           f"Dev part = {', '.join(DEV_CONVS)} (explored on), held-out part = the others. Δ = variant − new default, "
           "paired bootstrap over that part's questions; the other columns over all questions (R@10 unless "
           "said). bench/locomo_coverage.py says what each variant does.\n",
           "| store | scheme | R@10 dev | Δ dev | R@10 held-out | Δ held-out | R@10 | R@25 | multi-hop | "
           "open-domain | one session | several sessions | several sessions dev / held-out |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for env in [(False, True), (True, True), (True, False)]:
        base = evaluate(st, new, env, emb, cache, qcache)
        for s in [new, *coverage_variants(new)]:
            r = base if s is new else evaluate(st, s, env, emb, cache, qcache)
            d = ["", ""] if s is new else [ci_cell(r[dev], base[dev]), ci_cell(r[~dev], base[~dev])]
            out.append(f"| {ENVS[env]} | {'**' + s.name + '**' if s is new else s.name} | {r[dev, 1].mean():.1f} | "
                       f"{d[0]} | {r[~dev, 1].mean():.1f} | {d[1]} | {r[:, 1].mean():.1f} | {r[:, 2].mean():.1f} | "
                       f"{r[cats == 1, 1].mean():.1f} | {r[cats == 3, 1].mean():.1f} | {r[span == 1, 1].mean():.1f} | "
                       f"{r[span >= 2, 1].mean():.1f} | {r[dev & (span >= 2), 1].mean():.1f} / "
                       f"{r[~dev & (span >= 2), 1].mean():.1f} |")
            print(out[-1], file=sys.stderr)
    # where the missed several-session evidence stands against the query's terms (one shared store, `thread`)
    env, n_q, resid, missed, lacking, other, none = (True, True), 0, 0, 0, 0, 0, 0
    for k, conv in enumerate(st.convs):
        idx = st.bm25(True, True, new.ep, new.dated, new.expansion)[k]
        names = {t for sp in conv.speakers for t in tokenize(sp)}
        dia = {t.dia: t.id for t in conv.turns}
        for j, qa in enumerate(conv.qa):
            got = retrieve(st, k, new, env, qa["q"], qcache[emb.name][conv.sid][j], emb, cache)[:10]
            terms, _, covers = cov.query_term_matrix(idx, qa["q"], got)
            unsaid = {t for t, c in zip(terms, covers.any(axis=1)) if not c}
            n_q, resid = n_q + 1, resid + bool(unsaid)
            if spans(conv, qa["ev"]) < 2:
                continue
            for e in qa["ev"]:
                if dia[e] in got:
                    continue
                _, _, c1 = cov.query_term_matrix(idx, qa["q"], [dia[e]])
                says = {t for t, c in zip(terms, c1[:, 0]) if c}
                missed, lacking = missed + 1, lacking + bool(says & unsaid)
                other, none = other + bool(says - names), none + (not (says - names))
    out.append(f"\nWhy lexical coverage cannot reach the weak spots (new default, one shared store, `thread`): "
               f"{resid} of {n_q} questions ({100 * resid / n_q:.1f} %) have a query term no top-10 note says itself; "
               f"of the {missed} evidence turns of several-session questions missing from the top 10, {lacking} "
               f"({100 * lacking / max(missed, 1):.1f} %) say a query term the top 10 lack, {other} "
               f"({100 * other / max(missed, 1):.1f} %) say a query term besides the speakers' names that the top 10 "
               f"already say, and {none} ({100 * none / max(missed, 1):.1f} %) say none besides the names "
               "(paraphrase, or the second hop of the question).")
    return out


def command(args: argparse.Namespace) -> str:
    """The command line a report was made by, as its header quotes it (the options that change what it holds)."""
    return ("python bench/locomo.py" + "".join(f" --file {f}" for f in (args.file or []))
            + "".join(f" --compare {c}" for c in (args.compare or [])) + (" --only-compare" if args.only_compare else "")
            + ("" if args.runtime else " --no-runtime") + (" --gap-only" if args.gap_only else "")
            + (" --coverage-only" if args.coverage_only else ""))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", action="append", help="LoCoMo-format file (repeatable; default: the shared dev file)")
    ap.add_argument("--embedder", default="wordllama", choices=["wordllama", "minilm", "e5"])
    ap.add_argument("--compare", action="append", choices=["wordllama", "minilm", "e5"],
                    help="embedders set beside --embedder in a dense-leg section (repeatable; default e5 when its "
                         "extra is installed)")
    ap.add_argument("--only-compare", action="store_true", help="run only the dense-leg section (and its product rows)")
    ap.add_argument("--embed-cache", help="memoise embeddings on disk in this directory (a slow model embeds once)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "locomo.md"))
    ap.add_argument("--speed", type=int, default=100_000, help="notes for the episode speed section (0 = skip)")
    ap.add_argument("--runtime", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the product (pal import + memory.recall, old and new default config)")
    ap.add_argument("--gap-only", action="store_true",
                    help="only the lexical-gap section (bench/locomo_gap.py), appended to --out as a dated section")
    ap.add_argument("--coverage-only", action="store_true",
                    help="only the coverage section (issue 19's second pass), appended to --out as a dated section")
    args = ap.parse_args(argv)
    files = [Path(f) for f in (args.file or [DEFAULT_FILE])]
    emb = get_embedder(args.embedder)
    emb.spec_name = args.embedder
    new = shipped()
    ecache = Path(args.embed_cache) if args.embed_cache else None
    others = []
    for name in (args.compare if args.compare is not None else ["e5"]):
        if name == args.embedder:
            continue
        try:
            e = get_embedder(name)
        except Exception as exc:  # an optional extra that is not installed: say so in the report, run the rest
            print(f"--compare {name}: skipped ({exc})", file=sys.stderr)
            continue
        e.spec_name = name
        others.append(e)
    out = ["# LoCoMo dialog-level evidence recall (issue 19)\n",
           f"Generated {dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by `{command(args)}` (embedder `{emb.name}`), on "
           f"{__import__('platform').node()} ({__import__('os').cpu_count()} cores, shared); 1-min load average at the start {__import__('os').getloadavg()[0]:.1f}.\n",
           "Recall@k of a question = the share of its evidence turns among the top k, averaged over questions "
           "(empty evidence counts 1, as in the paper). Category and span columns are R@10; *one session* / "
           "*several sessions* = questions whose evidence lies in one session / spans two or more. "
           f"`old default` = the shipped pipeline before issue 19 (no inferred episodes); "
           f"`new default` = config/default.toml now (inferred episodes with a {new.gap_minutes:g}-minute gap). Without `thread` = every note remembered with content, time and scope only. "
           "Δ columns: paired bootstrap over questions (2,000 resamples, 95 % percentile interval) of the R@10 "
           "difference; * = the interval excludes 0.\n"]
    for path in files:
        convs = load(path)
        n_q = sum(len(c.qa) for c in convs)
        qcache = {e.name: {c.sid: embed_texts(e, [q["q"] for q in c.qa], query=True, cache_dir=ecache) for c in convs}
                  for e in [emb, *others]}
        cache = {(e.name, d): {c.sid: embed_texts(e, [indexed_text(t, d) for t in c.turns], cache_dir=ecache)
                               for c in convs}
                 for e in [emb, *others] for d in (False, True)}
        st = Stores(convs)
        cats = np.array([q["cat"] for c in convs for q in c.qa])
        span = np.array([spans(c, q["ev"]) for c in convs for q in c.qa])
        qconv = np.array([k for k, c in enumerate(convs) for _ in c.qa])
        out += [f"\n## `{path.name}`: {n_q} questions, {sum(len(c.turns) for c in convs)} turns, "
                f"{len(convs)} conversations ({', '.join(c.sid for c in convs)}); {int((span == 1).sum())} questions "
                f"with one-session evidence, {int((span >= 2).sum())} spanning sessions\n"]
        if args.gap_only or args.coverage_only:  # one section, appended to the report under a dated title
            title = "Lexical gap" if args.gap_only else "Coverage mechanisms"
            sec = [f"\n## {title}, `{path.name}` ({dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M')} UTC, "
                   f"`{command(args)}`, embedder `{emb.name}`, 1-min load {__import__('os').getloadavg()[0]:.1f})\n"]
            sec += (gap_rows(path, convs, st, new, [emb, *others], cache, qcache, cats, span, args.runtime)
                    if args.gap_only else coverage_section(st, new, emb, cache, qcache, qconv, cats, span))
            with open(args.out, "a") as fh:
                fh.write("\n".join(sec) + "\n")
            print("\n".join(sec))
            continue
        t_start = time.perf_counter()
        if others:
            out += compare_section(path, convs, st, new, [emb, *others], cache, qcache, qconv, cats, span,
                                   args.runtime)
        if args.only_compare:
            out.append(f"\nEvaluation time: {time.perf_counter() - t_start:.1f} s.")
            continue
        results = {}
        for env, title in ENVS.items():
            out += [f"\n### {title}\n", HEADER[0].replace("| scheme |", "| scheme |") + " Δ R@10 vs old default |",
                    HEADER[1] + "---|"]
            rows = [*BASELINES, OLD, PREV, new]
            res = {s.name: evaluate(st, s, env, emb, cache, qcache) for s in rows}
            results[env] = res
            for s in rows:
                name = f"**{s.name}**" if s is new else s.name
                delta = "" if s is OLD else ci_cell(res[s.name], res[OLD.name])
                out.append(f"| {name} | " + " | ".join(columns(res[s.name], cats, span)) + f" | {delta} |")
            print("\n".join(out[-len(rows):]), file=sys.stderr)
        for env in [(False, True), (False, False)]:
            out += [f"\n### Ablation of the new default, {ENVS[env]} (Δ = variant − new default)\n",
                    HEADER[0] + " Δ R@10 vs new default |", HEADER[1] + "---|"]
            base = results[env][new.name]
            out.append("| **new default** | " + " | ".join(columns(base, cats, span)) + " | |")
            for s in ablations(new):
                r = evaluate(st, s, env, emb, cache, qcache)
                out.append(f"| {s.name} | " + " | ".join(columns(r, cats, span)) + f" | {ci_cell(r, base)} |")
                print(out[-1], file=sys.stderr)
        out += ["\n### Scope statistics in one shared store (Δ = variant − new default)\n",
                "A recall with a scope weighs words by that scope's notes (`bm25_scope.py`): one shared store then "
                "ranks as one store per conversation does. The variant uses every conversation's statistics.\n",
                HEADER[0] + " Δ R@10 vs new default |", HEADER[1] + "---|"]
        for env in [(True, True), (True, False)]:
            base = results[env][new.name]
            r = evaluate(st, replace(new, scope_stats=False), env, emb, cache, qcache)
            out += [f"| **new default**, {ENVS[env]} | " + " | ".join(columns(base, cats, span)) + " | |",
                    f"| − scope statistics, {ENVS[env]} | " + " | ".join(columns(r, cats, span))
                    + f" | {ci_cell(r, base)} |"]
            print(out[-1], file=sys.stderr)
        for env in ENVS:
            out += split_section(st, new, env, emb, cache, qcache, qconv, cats, span, results[env][new.name])
        out += ["\n### Per conversation: the new default against the old, without `thread`\n",
                "The episode gap is a product choice (1 minute to 1 day give the same figures); the information prior "
                "has no constant and its form was chosen on conv-26, conv-30 and conv-41, so conv-42 and conv-43 "
                "are held-out checks of the whole new default.\n",
                "| conversation | questions | R@10 old default | R@10 new default | Δ |", "|---|---|---|---|---|"]
        old_r, new_r = results[(False, False)][OLD.name], results[(False, False)][new.name]
        for k, c in enumerate(convs):
            sel = qconv == k
            out.append(f"| {c.sid} | {int(sel.sum())} | {old_r[sel, 1].mean():.1f} | {new_r[sel, 1].mean():.1f} | "
                       f"{ci_cell(new_r[sel], old_r[sel])} |")
        out += ["\n### Held out: leave one conversation out\n",
                "Diversification (crowding) with its share chosen per conversation on the other conversations only "
                "(grid 0.05 / 0.1 / 0.2 / 0.3, best R@10), then scored on the held-out conversation; Δ = that "
                "held-out R@10 − the new default (no crowding), same questions.\n",
                "| store | chosen on the other conversations | R@10 new default | R@10 held-out choice | Δ |",
                "|---|---|---|---|---|"]
        grid = [replace(new, name=f"crowding {x}", crowding=x) for x in (0.05, 0.1, 0.2, 0.3)]
        for env in [(False, True), (False, False)]:
            out += loco(st, replace(new, name="no crowding", crowding=0.0), grid, env, emb, cache, qcache, qconv)
        out += coverage_section(st, new, emb, cache, qcache, qconv, cats, span)
        out += gap_rows(path, convs, st, new, [emb, *others], cache, qcache, cats, span, args.runtime)
        from locomo_sessions import section as sessions  # issue 44 item 2: the episode-level table (ADR 0036)
        out += sessions(path, convs, st, emb, cache, qcache, cats, args.runtime)
        out.append(f"\nEvaluation time: {time.perf_counter() - t_start:.1f} s.")
        if args.runtime:
            from bench_runtime_rows import runtime_rows
            out += runtime_rows(path, convs, {s.name: results[(True, True)][s.name] for s in BASELINES[:2]},
                                cats, span, columns, HEADER)
    if args.coverage_only or args.gap_only:
        return 0
    if args.speed and not args.only_compare:
        out += speed(load(files[0]), args.speed)
    text = "\n".join(out) + "\n"
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Memory-context signals for recall: what a memory system knows that a flat retriever does not.

All functions are pure (or, for :class:`ThreadLinks` / :class:`ThreadExpander`,
small incremental helpers with no I/O) and generic: they work for any stream
of notes grouped in *threads* (a chat session, a meeting, a work episode) -
nothing here knows about LoCoMo.

Signals and their measured effect (LoCoMo dev5, 999 questions, dialog-level
R@10, WordLlama; see ``bench/results/locomo.md`` for the full ablation):

1. **Thread-neighbour document expansion** (write time) - a note is indexed
   for full text with its own tokens plus ``weight`` (0.5) times the tokens of
   the previous and next note of the same thread.  A turn that answers a
   question ("Yes, last Tuesday!") becomes findable by the question's words.
   :class:`ThreadExpander` does it incrementally: adding a note returns the
   bags of the new note *and* of its thread neighbours (whose expansion changed),
   which the caller re-indexes (``BM25Index.add_weighted`` replaces by id).
2. **Neighbour score smoothing** (query time) - ``s'_i = s_i + α·max(s_prev,
   s_next)`` over the fused candidate scores, neighbours inside the same
   thread; neighbours of candidates join the pool.
3. **Thread (session) propagation** (query time) - each thread gets the mean
   of its top-3 candidate scores, normalised by the best thread, and every
   candidate adds ``β`` times its thread's value: evidence clusters in the
   episode where a topic was discussed.
4. **Date rendering** - ``occurred_at`` is rendered as words ("8 May 2023")
   into the indexed text so "in May 2023" matches by BM25/embedding.
5. Optional, within noise on LoCoMo, off by default: query-date windows
   (:func:`query_date_windows` + :func:`date_window_boost`) and speaker match
   (:func:`speaker_boost`).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from packs.memory.dates import (date_window_boost, has_time_expression, query_date_windows, render_dated,
                                temporal_intent)
from packs.memory.threads import ThreadExpander, ThreadLinks, expand_bag

__all__ = [
    "ContextConfig",
    "ThreadExpander",
    "ThreadLinks",
    "apply_context",
    "date_window_boost",
    "expand_bag",
    "has_time_expression",
    "neighbour_smoothing",
    "query_date_windows",
    "render_dated",
    "speaker_boost",
    "temporal_intent",
    "thread_propagation",
]


# ------------------------------------------------------- query-time signals
def neighbour_smoothing(
    scores: Mapping[int, float],
    neighbours: Callable[[int], tuple[int | None, int | None]],
    alpha: float = 0.5,
) -> dict[int, float]:
    """``s'_i = s_i + α · max(s_prev(i), s_next(i))``; missing scores count as 0.

    The result also holds the thread neighbours of every candidate (their own
    score 0 plus the bonus), so the turn right after a matching question can
    surface even when no leg retrieved it.
    """
    pool: dict[int, tuple[int | None, int | None]] = {}
    for i in scores:
        pool[i] = neighbours(i)
    for i, (p, n) in list(pool.items()):
        for j in (p, n):
            if j is not None and j not in pool:
                pool[j] = neighbours(j)
    out: dict[int, float] = {}
    for i, (p, n) in pool.items():
        best = max(scores.get(p, 0.0) if p is not None else 0.0, scores.get(n, 0.0) if n is not None else 0.0)
        out[i] = scores.get(i, 0.0) + alpha * best
    return out


def thread_propagation(
    scores: Mapping[int, float],
    thread_of: Callable[[int], Hashable | None],
    beta: float = 0.5,
    top: int = 3,
) -> tuple[dict[int, float], dict[int, float]]:
    """Add ``β · T(thread)/max T`` to each candidate, ``T`` = mean of the thread's top-``top`` scores.

    Returns ``(new_scores, thread_feature)`` where ``thread_feature[i]`` is the
    normalised thread value in [0, 1] (0 for notes without a thread).
    """
    groups: dict[Hashable, list[float]] = {}
    th: dict[int, Hashable | None] = {}
    for i, s in scores.items():
        t = thread_of(i)
        th[i] = t
        if t is not None:
            groups.setdefault(t, []).append(s)
    tval = {t: sum(sorted(v, reverse=True)[:top]) / min(top, len(v)) for t, v in groups.items()}
    hi = max(tval.values(), default=0.0)
    feat = {i: (tval[t] / hi if (t is not None and hi > 0) else 0.0) for i, t in th.items()}
    return {i: s + beta * feat[i] for i, s in scores.items()}, feat


def speaker_boost(
    scores: Mapping[int, float],
    speaker_of: Callable[[int], str | None],
    query: str,
    names: Iterable[str],
    gamma: float = 0.1,
) -> tuple[dict[int, float], dict[int, float]]:
    """Add ``γ`` to notes spoken by the one known person the query names.

    Only fires when exactly one known name occurs in the query (a question
    about two people says nothing about who spoke the evidence).
    """
    named = [n for n in names if n and re.search(rf"\b{re.escape(n)}\b", query, re.I)]
    if len(named) != 1:
        return dict(scores), {i: 0.0 for i in scores}
    who = named[0].lower()
    feat = {i: 1.0 if (speaker_of(i) or "").lower() == who else 0.0 for i in scores}
    return {i: s + gamma * feat[i] for i, s in scores.items()}, feat


# ------------------------------------------------------------ the pipeline
@dataclass(frozen=True)
class ContextConfig:
    """Weights of the context stage.  Defaults are the shipped configuration."""

    neighbour_alpha: float = 0.5  # 0 disables neighbour smoothing
    thread_beta: float = 0.5  # 0 disables thread propagation
    thread_top: int = 3
    date_gamma: float = 0.0  # query-date window boost (within noise on LoCoMo: off)
    speaker_gamma: float = 0.0  # speaker boost (within noise on LoCoMo: off)


@dataclass
class ContextResult:
    """Final scores plus the per-signal components (for explanations).

    ``score(i) == base + α·neighbour + β·thread + γd·date + γs·speaker`` exactly.
    """

    scores: dict[int, float]
    components: dict[str, dict[int, float]] = field(default_factory=dict)

    def features(self, note_id: int) -> dict[str, float]:
        return {name: comp.get(note_id, 0.0) for name, comp in self.components.items()}


def apply_context(
    fused: Mapping[int, float],
    query: str,
    *,
    links: ThreadLinks | None = None,
    neighbours: Callable[[int], tuple[int | None, int | None]] | None = None,
    thread_of: Callable[[int], Hashable | None] | None = None,
    occurred_at: Callable[[int], dt.datetime | None] | None = None,
    speaker_of: Callable[[int], str | None] | None = None,
    person_names: Iterable[str] = (),
    config: ContextConfig = ContextConfig(),
) -> ContextResult:
    """Run the context signals over fused candidate scores, in this order:
    neighbour smoothing -> thread propagation -> date window -> speaker.

    ``links`` supplies ``neighbours``/``thread_of`` when they are not given.
    ``result.features(id)`` gives ``base``, ``neighbour``, ``thread``,
    ``date``, ``speaker`` so callers can explain the ranking; the final score
    is exactly ``base + α·neighbour + β·thread + γd·date + γs·speaker``.
    """
    if links is not None:
        neighbours = neighbours or links.neighbours
        thread_of = thread_of or links.thread_of
    base = dict(fused)
    scores = dict(base)
    nb_feat: dict[int, float] = {}
    if config.neighbour_alpha and neighbours is not None:
        sm = neighbour_smoothing(base, neighbours, 1.0)
        nb_feat = {i: sm[i] - base.get(i, 0.0) for i in sm}
        scores = {i: base.get(i, 0.0) + config.neighbour_alpha * nb_feat[i] for i in sm}
    th_feat: dict[int, float] = {}
    if config.thread_beta and thread_of is not None:
        scores, th_feat = thread_propagation(scores, thread_of, config.thread_beta, config.thread_top)
    d_feat: dict[int, float] = {}
    if config.date_gamma and occurred_at is not None:
        scores, d_feat = date_window_boost(scores, occurred_at, query_date_windows(query), config.date_gamma)
    s_feat: dict[int, float] = {}
    if config.speaker_gamma and speaker_of is not None:
        scores, s_feat = speaker_boost(scores, speaker_of, query, person_names, config.speaker_gamma)
    comps = {"base": base, "neighbour": nb_feat, "thread": th_feat, "date": d_feat, "speaker": s_feat}
    return ContextResult(scores, comps)

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

import bisect
import calendar
import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

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


# ----------------------------------------------------------------- rendering
def render_dated(content: str, occurred_at: dt.datetime | dt.date | None) -> str:
    """Text to index for a note: ``"<d Month YYYY>: <content>"`` (content unchanged if no date)."""
    if occurred_at is None:
        return content
    return f"{occurred_at.day} {calendar.month_name[occurred_at.month]} {occurred_at.year}: {content}"


# ------------------------------------------------------------- thread links
class ThreadLinks:
    """Previous/next note of the same thread, maintained incrementally.

    Order inside a thread is by note id (ids increase in insertion order).
    ``prev``/``next`` pointers are kept per note, so :meth:`neighbours` is two
    dict look-ups; an append is O(1) and an out-of-order insert a
    ``bisect.insort`` into the thread's member list.
    """

    def __init__(self) -> None:
        self._members: dict[Hashable, list[int]] = {}
        self._thread_of: dict[int, Hashable] = {}
        self._prev: dict[int, int] = {}
        self._next: dict[int, int] = {}

    def _link(self, a: int | None, b: int | None) -> None:
        if a is not None:
            if b is None:
                self._next.pop(a, None)
            else:
                self._next[a] = b
        if b is not None:
            if a is None:
                self._prev.pop(b, None)
            else:
                self._prev[b] = a

    def add(self, note_id: int, thread: Hashable | None) -> None:
        if thread is None:
            return
        note_id = int(note_id)
        if note_id in self._thread_of:
            self.remove(note_id)
        ids = self._members.setdefault(thread, [])
        if not ids or ids[-1] < note_id:
            j = len(ids)
            ids.append(note_id)
        else:
            j = bisect.bisect_left(ids, note_id)
            ids.insert(j, note_id)
        prev = ids[j - 1] if j > 0 else None
        nxt = ids[j + 1] if j + 1 < len(ids) else None
        self._link(prev, note_id)
        self._link(note_id, nxt)
        self._thread_of[note_id] = thread

    def remove(self, note_id: int) -> None:
        note_id = int(note_id)
        thread = self._thread_of.pop(note_id, None)
        if thread is None:
            return
        ids = self._members[thread]
        j = bisect.bisect_left(ids, note_id)
        if j < len(ids) and ids[j] == note_id:
            ids.pop(j)
        prev, nxt = self._prev.pop(note_id, None), self._next.pop(note_id, None)
        self._link(prev, nxt)
        if not ids:
            del self._members[thread]

    def thread_of(self, note_id: int) -> Hashable | None:
        return self._thread_of.get(note_id)

    def neighbours(self, note_id: int) -> tuple[int | None, int | None]:
        """``(prev_id, next_id)`` inside the note's thread (None at the ends / no thread)."""
        return (self._prev.get(note_id), self._next.get(note_id))


# -------------------------------------------------- write-time doc expansion
def expand_bag(own: Iterable[str], neighbours: Iterable[Iterable[str]], weight: float = 0.5) -> Counter:
    """``Counter(own) + weight · Σ Counter(neighbour)`` - the BM25 bag of an expanded note."""
    bag: Counter = Counter(own)
    if weight > 0:
        for toks in neighbours:
            for t in toks:
                bag[t] += weight
    return bag


class ThreadExpander:
    """Incremental thread-neighbour expansion for the full-text leg.

    ``add(note_id, thread, tokens)`` returns ``{note_id: bag}`` for every note
    whose expanded bag changed: the new note and its previous/next thread
    neighbours (usually just the previous one, since notes are appended).  The
    caller re-indexes those bags (``BM25Index.add_weighted`` replaces by id),
    so ingest costs O(tokens of 2-3 notes), never a rebuild.  Notes without a
    thread are not expanded.
    """

    def __init__(self, weight: float = 0.5) -> None:
        self.weight = float(weight)
        self.links = ThreadLinks()
        self._tokens: dict[int, list[str]] = {}

    def bag(self, note_id: int) -> Counter:
        prev, nxt = self.links.neighbours(note_id)
        neigh = [self._tokens[j] for j in (prev, nxt) if j is not None]
        return expand_bag(self._tokens.get(int(note_id), []), neigh, self.weight)

    def add(self, note_id: int, thread: Hashable | None, tokens: Sequence[str]) -> dict[int, Counter]:
        note_id = int(note_id)
        self._tokens[note_id] = list(tokens)
        self.links.add(note_id, thread)
        prev, nxt = self.links.neighbours(note_id)
        changed = [note_id] + [j for j in (prev, nxt) if j is not None]
        return {j: self.bag(j) for j in changed}

    def remove(self, note_id: int) -> dict[int, Counter]:
        """Forget a note; returns the re-expanded bags of its former neighbours."""
        note_id = int(note_id)
        prev, nxt = self.links.neighbours(note_id)
        self.links.remove(note_id)
        self._tokens.pop(note_id, None)
        return {j: self.bag(j) for j in (prev, nxt) if j is not None}


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


# ------------------------------------------------------------------ time
_MONTHS = [m.lower() for m in calendar.month_name[1:]]
_MON_RE = "|".join(_MONTHS + [m[:3] for m in _MONTHS if m != "may"] + ["sept"])
_DATE_RE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?({_MON_RE})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?,?\s*(\d{{4}})?\b",
    re.I,
)
_YEAR_RE = re.compile(r"\b(19\d\d|20\d\d)\b")
_TEMPORAL_Q = re.compile(
    r"^\s*(when|how long|what (year|month|day|date|time)|which (year|month|day|date))\b|\bhow long ago\b", re.I
)
_TIME_EXPR = re.compile(
    rf"\b(yesterday|today|tonight|tomorrow|last|next|ago|recently|weekend|week|month|year|years|since|"
    rf"(?:mon|tues|wednes|thurs|fri|satur|sun)day|{_MON_RE}|\d{{4}}|morning|evening|night|earlier|soon)\b",
    re.I,
)


def _month_of(tok: str) -> int:
    tok = tok.lower().rstrip(".")
    for k, m in enumerate(_MONTHS, 1):
        if m.startswith(tok[:3]):
            return k
    raise ValueError(tok)


def query_date_windows(
    query: str, *, before_days: int = 3, after_days: int = 10
) -> list[tuple[dt.datetime, dt.datetime]]:
    """Absolute dates named in ``query`` as ``[start, end)`` windows of ``occurred_at``.

    * "13 October 2023" / "October 13, 2023" -> ``[d - before_days, d + after_days]``
      (a note about a day is usually written that day or soon after);
    * "May 2023" -> the month plus ``after_days`` of slack;
    * a bare year (only when no month date was found) -> that year (+15 days).
    A month or day without a year is ignored (ambiguous).
    """
    out: list[tuple[dt.datetime, dt.datetime]] = []
    for m in _DATE_RE.finditer(query):
        d1, mon, d2, y = m.groups()
        if not y:
            continue
        year, month = int(y), _month_of(mon)
        day = d1 or d2
        try:
            if day:
                c = dt.datetime(year, month, int(day))
                out.append((c - dt.timedelta(days=before_days), c + dt.timedelta(days=after_days + 1)))
            else:
                start = dt.datetime(year, month, 1)
                end = dt.datetime(year + (month == 12), month % 12 + 1, 1)
                out.append((start, end + dt.timedelta(days=after_days)))
        except ValueError:
            continue
    if not out:
        for m in _YEAR_RE.finditer(query):
            y = int(m.group(1))
            out.append((dt.datetime(y, 1, 1), dt.datetime(y + 1, 1, 16)))
    return out


def temporal_intent(query: str) -> bool:
    """True for questions asking *when* / *how long* / *what year|month|day*."""
    return bool(_TEMPORAL_Q.search(query))


def has_time_expression(text: str) -> bool:
    """True when ``text`` mentions a time (yesterday, last week, a month name, a year, ...)."""
    return bool(_TIME_EXPR.search(text))


def _naive(d: dt.datetime | dt.date) -> dt.datetime:
    if not isinstance(d, dt.datetime):
        d = dt.datetime(d.year, d.month, d.day)
    return d.replace(tzinfo=None)


def date_window_boost(
    scores: Mapping[int, float],
    occurred_at: Callable[[int], dt.datetime | dt.date | None],
    windows: Sequence[tuple[dt.datetime, dt.datetime]],
    gamma: float = 0.2,
) -> tuple[dict[int, float], dict[int, float]]:
    """Add ``γ`` to candidates whose ``occurred_at`` falls in any window; returns (scores, feature)."""
    if not windows:
        return dict(scores), {i: 0.0 for i in scores}
    feat: dict[int, float] = {}
    for i in scores:
        d = occurred_at(i)
        feat[i] = 1.0 if d is not None and any(a <= _naive(d) < b for a, b in windows) else 0.0
    return {i: s + gamma * feat[i] for i, s in scores.items()}, feat


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

"""Recall signals measured by ``bench/locomo.py`` and left out of the product (within noise on LoCoMo): a boost for
notes whose date falls in a window the query names, and one for notes spoken by the one person the query names.
Moved out of ``packs/memory`` (issue 43, item 4): the product ships only what it calls.
"""
from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from palimpsest_memory.packs.memory.engine.dates import MONTH_NAMES  # noqa: E402

_MONTHS = [m.lower() for m in MONTH_NAMES[1:]]
_MON_RE = "|".join(_MONTHS + [m[:3] for m in _MONTHS if m != "may"] + ["sept"])
_DATE_RE = re.compile(
    rf"\b(?:(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?)?({_MON_RE})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?,?\s*(\d{{4}})?\b",
    re.I,
)
_YEAR_RE = re.compile(r"\b(19\d\d|20\d\d)\b")


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

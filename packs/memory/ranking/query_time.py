"""The times a query names, as spans of ``occurred_at`` (a pure module; ADR 0041).

``spans(query, now)`` finds the time expressions of an English query and returns each as a half-open span
``[start, end)`` of naive UTC datetimes:

* absolute: "2023-05-03", "3 May 2023", "the 3rd of May, 2023", "May 3rd, 2023" (a day); "May 2023",
  "2023-05" (a month); "summer 2022" (a season: meteorological, northern hemisphere — spring is March to May,
  summer June to August, autumn or fall September to November, winter December to February); "in 2022" (a year);
  "between August 11 and August 15 2023", "from May to July 2023" (the hull of the two ends);
* without a year — "in May", "on 13 August", "during the summer": that span in *every* year (``yearly``): no
  year is guessed, the notes' words choose among them. A day or month without a year borrows the year of
  another expression in the same query that has one ("between August 11 and August 15 2023");
* relative to ``now`` (the recall's ``now``, the time the question is asked) — or, when the query names one
  day, to that day ("last weekend before April 10, 2023", "last Friday, on 23 January 2022"): today,
  yesterday, last night, this / last week, weekend, month, year; last / this <month>, <season>; last
  <weekday>; "3 days ago", "two weeks ago", "a month ago"; "the past 10 days", "the last two weeks". Weeks start
  on Monday.

What is not parsed, on purpose: the future ("tomorrow", "next week": a note cannot have occurred then, and
what was said about it was said before, at a time the question does not name); times relative to an event
("before the move", "after returning from Chicago": that needs the event's own note first); vague words
("recently", "a while ago"); a bare "May" not capitalised, or any bare month name not after a preposition
("in", "during", "since", …), since "may", "march" and "august" are also ordinary words.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from palimpsest_memory.packs.memory.engine.dates import MONTH_NAMES

__all__ = ["Span", "spans", "instances", "REFERENCE_YEAR"]

# A yearly span is stored in this (leap) year, so that 29 February exists; a span that crosses the new year
# (winter, "December to February") ends in the next year.
REFERENCE_YEAR = 2000


@dataclass(frozen=True)
class Span:
    """A time a query names: ``[start, end)``, naive UTC. ``yearly``: the same span in every year (``start`` in
    ``REFERENCE_YEAR``); ``text`` is the expression it was read from."""

    start: dt.datetime
    end: dt.datetime
    yearly: bool
    text: str


_MONTHS = {m.lower(): i for i, m in enumerate(MONTH_NAMES) if m}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
_SEASON_RE = "(?:spring|summer|autumn|fall|winter)"
_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?(?![\d:])"
_YEAR_RE = r"((?:19|20)\d\d)(?!\d)"
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3}
_NUMBER_RE = r"(\d{1,3}|a couple of|a few|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT_RE = r"(day|week|month|year)s?"
# words after which a bare month or season is a time ("in May", "during the summer"), not a verb or a name
# ("to" and "and" are not among them: "to June", "Jon and May" are more often people)
_PREP = r"(?:in|during|since|until|till|by|of|early|late|mid|before|after|around|through|throughout|from|over)"

_I = re.I
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso_day", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("iso_month", re.compile(r"\b(\d{4})-(\d{2})\b(?!-)")),
    ("day_month", re.compile(rf"\b(?:the\s+)?{_DAY_RE}\s+(?:of\s+)?({_MONTH_RE})(?![a-z])(?:,?\s*{_YEAR_RE})?", _I)),
    ("month_day", re.compile(rf"\b({_MONTH_RE})\s+(?:the\s+)?{_DAY_RE}(?:,?\s*{_YEAR_RE})?", _I)),
    ("month_year", re.compile(rf"\b({_MONTH_RE}),?\s+(?:of\s+)?{_YEAR_RE}", _I)),
    ("season_year", re.compile(rf"\b(?:the\s+)?({_SEASON_RE})\s+(?:of\s+)?{_YEAR_RE}", _I)),
    ("ago", re.compile(rf"\b{_NUMBER_RE}\s+{_UNIT_RE}\s+ago\b", _I)),
    ("past_n", re.compile(rf"\b(?:the\s+)?(?:past|last|previous)\s+{_NUMBER_RE}\s+{_UNIT_RE}\b", _I)),
    ("relative", re.compile(rf"\b(last|this|past|previous)\s+(week(?:end)?|month|year|{_SEASON_RE}|{_MONTH_RE}"
                            rf"(?![a-z])|{'|'.join(_WEEKDAYS)})\b", _I)),
    ("day_word", re.compile(r"\b(today|tonight|this morning|this afternoon|this evening|yesterday|last night)\b",
                            _I)),
    ("season", re.compile(rf"\b(?:{_PREP}|this|the)\s+(?:the\s+)?(?:early\s+|late\s+|mid-?)?({_SEASON_RE})\b", _I)),
    ("month", re.compile(rf"\b{_PREP}\s+(?:early\s+|late\s+|mid-?)?({_MONTH_RE})(?![a-z])", _I)),
    ("year", re.compile(rf"\b{_PREP}\s+(?:early\s+|late\s+|mid-?)?{_YEAR_RE}\b", _I)),
]
_RELATIVE = ("ago", "past_n", "relative", "day_word")
_RANGE_OPEN = re.compile(r"\b(between|from)\s+(?:the\s+)?$", _I)
_RANGE_JOIN = re.compile(r"^\s*(?:and|to|until|till|through|-|–)\s*(?:the\s+)?$", _I)


@dataclass
class _Found:
    start: int
    end: int
    kind: str
    groups: tuple
    text: str
    year: int | None = None  # an explicit year, when the expression has one


def _month(tok: str) -> int:
    return _MONTHS[tok.lower().rstrip(".")]


def _day_start(d: dt.datetime) -> dt.datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_span(year: int, month: int, n: int = 1) -> tuple[dt.datetime, dt.datetime]:
    end_m = month - 1 + n
    return dt.datetime(year, month, 1), dt.datetime(year + end_m // 12, end_m % 12 + 1, 1)


def _shift_months(year: int, month: int, k: int) -> tuple[int, int]:
    m = month - 1 + k
    return year + m // 12, m % 12 + 1


def _season_span(name: str, year: int) -> tuple[dt.datetime, dt.datetime]:
    first, n = _SEASONS[name.lower()]
    return _month_span(year, first, n)


def _number(tok: str) -> int:
    t = tok.lower()
    return int(t) if t.isdigit() else _NUMBERS[t]


def _find(query: str) -> list[_Found]:
    """Every expression of the patterns, earlier patterns first, none overlapping another."""
    taken: list[tuple[int, int]] = []
    found: list[_Found] = []
    for kind, pat in _PATTERNS:
        for m in pat.finditer(query):
            a, b = m.span()
            if any(a < y and x < b for x, y in taken):
                continue
            if kind in ("month", "month_day") and m.group(1).lower().rstrip(".") == "may" and \
                    not m.group(1).startswith("May"):
                continue  # "may" is a verb unless it is written as the month
            year = None
            if kind in ("day_month", "month_day", "month_year", "season_year", "year"):
                year = m.group(m.re.groups) and int(m.group(m.re.groups))
                year = year or None
            elif kind in ("iso_day", "iso_month"):
                year = int(m.group(1))
            taken.append((a, b))
            if kind in ("month", "season", "year"):  # the time itself, without the preposition before it
                a = m.start(1)
            found.append(_Found(a, b, kind, m.groups(), query[a:b], year))
    found.sort(key=lambda f: f.start)
    return found


def _resolve(f: _Found, now: dt.datetime, year: int | None) -> tuple[dt.datetime, dt.datetime, bool] | None:
    """``(start, end, yearly)`` of one expression; ``year`` is its own or a borrowed one (None: every year)."""
    g = f.groups
    y = year if year is not None else REFERENCE_YEAR
    yearly = year is None
    today = _day_start(now)
    try:
        if f.kind == "iso_day":
            d = dt.datetime(int(g[0]), int(g[1]), int(g[2]))
            return d, d + dt.timedelta(days=1), False
        if f.kind == "iso_month":
            return (*_month_span(int(g[0]), int(g[1])), False)
        if f.kind in ("day_month", "month_day"):
            day, mon = (g[0], g[1]) if f.kind == "day_month" else (g[1], g[0])
            d = dt.datetime(y, _month(mon), int(day))
            return d, d + dt.timedelta(days=1), yearly
        if f.kind == "month_year":
            return (*_month_span(int(g[1]), _month(g[0])), False)
        if f.kind == "season_year":
            return (*_season_span(g[0], int(g[1])), False)
        if f.kind == "month":
            return (*_month_span(y, _month(g[0])), yearly)
        if f.kind == "season":
            return (*_season_span(g[0], y), yearly)
        if f.kind == "year":
            return dt.datetime(int(g[0]), 1, 1), dt.datetime(int(g[0]) + 1, 1, 1), False
        if f.kind == "day_word":
            w = g[0].lower()
            back = 1 if w in ("yesterday", "last night") else 0
            d = today - dt.timedelta(days=back)
            return d, d + dt.timedelta(days=1), False
        if f.kind == "ago":
            n, unit = _number(g[0]), g[1].lower()
            if unit == "day":
                d = today - dt.timedelta(days=n)
                return d, d + dt.timedelta(days=1), False
            if unit == "week":
                c = now - dt.timedelta(weeks=n)
                return c - dt.timedelta(days=3.5), c + dt.timedelta(days=3.5), False
            if unit == "month":
                return (*_month_span(*_shift_months(now.year, now.month, -n)), False)
            return dt.datetime(now.year - n, 1, 1), dt.datetime(now.year - n + 1, 1, 1), False
        if f.kind == "past_n":
            return _past(now, _number(g[0]), g[1].lower()), now, False
        if f.kind == "relative":
            return _relative(g[0].lower(), g[1].lower().rstrip("."), now, today)
    except (ValueError, OverflowError):  # "31 February", a year out of range: not a time
        return None
    return None


def _past(now: dt.datetime, n: int, unit: str) -> dt.datetime:
    """``now`` minus ``n`` days, weeks, months or years (a month back from 31 March is 28 or 29 February)."""
    if unit in ("day", "week"):
        return now - dt.timedelta(days=n * (7 if unit == "week" else 1))
    yy, mm = _shift_months(now.year, now.month, -n * (12 if unit == "year" else 1))
    return _in_year(now.replace(day=1), yy).replace(month=mm, day=min(now.day, _month_days(yy, mm)))


def _month_days(year: int, month: int) -> int:
    a, b = _month_span(year, month)
    return (b - a).days


def _relative(which: str, what: str, now: dt.datetime, today: dt.datetime
              ) -> tuple[dt.datetime, dt.datetime, bool] | None:
    last = which in ("last", "past", "previous")
    monday = today - dt.timedelta(days=today.weekday())
    if which == "past" and what in ("week", "month", "year"):  # "the past month": up to now
        return _past(now, 1, what), now, False
    if what == "week":
        a = monday - dt.timedelta(days=7) if last else monday
        return a, a + dt.timedelta(days=7), False
    if what == "weekend":
        sat = monday + dt.timedelta(days=5)  # this week's Saturday
        if last and sat + dt.timedelta(days=2) > today:
            sat -= dt.timedelta(days=7)  # the latest weekend over before today
        return sat, sat + dt.timedelta(days=2), False
    if what == "month":
        yy, mm = _shift_months(now.year, now.month, -1 if last else 0)
        return (*_month_span(yy, mm), False)
    if what == "year":
        yy = now.year - (1 if last else 0)
        return dt.datetime(yy, 1, 1), dt.datetime(yy + 1, 1, 1), False
    if what in _WEEKDAYS:
        if not last:
            return None  # "this Friday": past or future, the sentence does not say
        back = (today.weekday() - _WEEKDAYS.index(what) - 1) % 7 + 1  # the latest such day before today
        d = today - dt.timedelta(days=back)
        return d, d + dt.timedelta(days=1), False
    if what in _SEASONS:
        if last:  # the latest instance over by now
            for yy in (now.year, now.year - 1, now.year - 2):
                a, b = _season_span(what, yy)
                if b <= now:
                    return a, b, False
        for yy in (now.year - 1, now.year):  # this: the instance holding now, else the one of now's year
            a, b = _season_span(what, yy)
            if a <= now < b:
                return a, b, False
        return (*_season_span(what, now.year), False)
    if what in _MONTHS:
        m = _month(what)
        if last:  # the latest such month over before the current month began
            yy = now.year if m < now.month else now.year - 1
            return (*_month_span(yy, m), False)
        return (*_month_span(now.year, m), False)
    return None


def spans(query: str, now: dt.datetime) -> list[Span]:
    """The times ``query`` names (see the module's docstring), in the order they appear; relative ones are
    anchored at ``now`` (a naive datetime is read as UTC, an aware one converted). Raises ``TypeError`` for a
    query that is not a string or a ``now`` that is not a datetime."""
    if not isinstance(query, str):
        raise TypeError(f"query must be a str, not {type(query).__name__}")
    if not isinstance(now, dt.datetime):
        raise TypeError(f"now must be a datetime, not {type(now).__name__}")
    if now.tzinfo is not None:
        now = now.astimezone(dt.timezone.utc).replace(tzinfo=None)
    found = _find(query)
    years = [f.year for f in found if f.year is not None]
    resolved: list[tuple[_Found, tuple[dt.datetime, dt.datetime, bool]]] = []
    for j, f in enumerate(found):
        if f.kind in _RELATIVE:
            continue
        year = f.year
        if year is None and f.kind in ("day_month", "month_day", "month", "season") and years:
            # a day or month without a year borrows the nearest explicit year of the query (the next one first)
            later = [g.year for g in found[j + 1:] if g.year is not None]
            year = later[0] if later else years[-1]
        r = _resolve(f, now, year)
        if r is not None:
            resolved.append((f, r))
    days = {r[0] for _, r in resolved if not r[2] and r[1] - r[0] == dt.timedelta(days=1)}
    # "last weekend before April 10, 2023": a relative time counts back from the one day the query names
    anchor = days.pop() if len(days) == 1 else now
    for f in found:
        if f.kind in _RELATIVE:
            r = _resolve(f, anchor, None)
            if r is not None:
                resolved.append((f, r))
    resolved.sort(key=lambda fr: fr[0].start)
    out: list[Span] = []
    j = 0
    while j < len(resolved):
        f, (a, b, yearly) = resolved[j]
        if j + 1 < len(resolved):  # "between A and B", "from A to B": the hull of the two
            g, (a2, b2, yearly2) = resolved[j + 1]
            if (yearly == yearly2 and _RANGE_OPEN.search(query[:f.start])
                    and _RANGE_JOIN.match(query[f.end:g.start]) and a <= a2):
                out.append(Span(a, max(b, b2), yearly, query[f.start:g.end]))
                j += 2
                continue
        out.append(Span(a, b, yearly, f.text))
        j += 1
    return out


def instances(named: list[Span], first_year: int, last_year: int) -> list[tuple[dt.datetime, dt.datetime]]:
    """Concrete ``[start, end)`` windows of ``named``: a dated span as it is, a yearly one in every year from
    ``first_year`` to ``last_year`` (29 February only in leap years: elsewhere it is 1 March)."""
    out: list[tuple[dt.datetime, dt.datetime]] = []
    for s in named:
        if not s.yearly:
            out.append((s.start, s.end))
            continue
        for y in range(max(first_year, dt.MINYEAR), min(last_year, dt.MAXYEAR - 1) + 1):
            out.append((_in_year(s.start, y), _in_year(s.end, y + (s.end.year - REFERENCE_YEAR))))
    return out


def _in_year(d: dt.datetime, year: int) -> dt.datetime:
    try:
        return d.replace(year=year)
    except ValueError:  # 29 February in a common year
        return d.replace(year=year, month=3, day=1)

"""Time in the question (issue 44 item 3, ADR 0041): the parser of the times a query names, the time prior's
formula (ADR 0041's formula block, executed), and recall: a note in the named window rises above an otherwise
equal note outside it, and a question that names no time ranks exactly as with the prior off."""
from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from store_support import HASHING, Clock

from palimpsest_memory.packs.memory.ranking import query_time, adjusters
from palimpsest_memory.packs.memory.models.notes import Candidates
from palimpsest_memory.packs.memory.ranking.query_time import spans
from palimpsest_memory.runtime.testing import open_test_runtime

ROOT = Path(__file__).resolve().parents[3]
ADR = ROOT / "adr" / "0041-time-in-the-question.md"
NOW = dt.datetime(2023, 10, 18, 15, 30)
DAY = dt.timedelta(days=1)
MONTHS = list(calendar.month_name)[1:]


def _dated(q: str, now: dt.datetime = NOW) -> list[tuple[dt.datetime, dt.datetime]]:
    return [(s.start, s.end) for s in spans(q, now) if not s.yearly]


def _ordinal(d: int) -> str:
    return f"{d}{'th' if 10 <= d % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d % 10, 'th')}"


DAY_FORMATS = [
    lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{d.day} {MONTHS[d.month - 1]}, {d.year}",
    lambda d: f"the {_ordinal(d.day)} of {MONTHS[d.month - 1]} {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
    lambda d: f"{MONTHS[d.month - 1]} {_ordinal(d.day)} {d.year}",
    lambda d: f"{MONTHS[d.month - 1][:3]} {d.day} {d.year}",
    lambda d: d.strftime("%Y-%m-%d"),
]
dates = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2099, 12, 31))


# -- the parser -------------------------------------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(dates, st.sampled_from(range(len(DAY_FORMATS))), st.sampled_from(["What did Anna do on {}?",
                                                                           "{}: what happened", "Was it {} or not"]))
def test_every_absolute_date_parses_to_the_day_that_holds_it(d, fmt, sentence):
    q = sentence.format(DAY_FORMATS[fmt](d))
    day = dt.datetime(d.year, d.month, d.day)
    assert _dated(q) == [(day, day + DAY)], q


@settings(max_examples=200, deadline=None)
@given(dates, st.sampled_from(["in {m} {y}", "in {m}, {y}", "during {m} of {y}", "{y}-{mm:02d}"]))
def test_a_month_and_year_parse_to_that_whole_month(d, fmt):
    q = "What did Ben decide " + fmt.format(m=MONTHS[d.month - 1], y=d.year, mm=d.month) + "?"
    (start, end), = _dated(q)
    assert start == dt.datetime(d.year, d.month, 1)
    assert (end - start).days == calendar.monthrange(d.year, d.month)[1]
    assert start <= dt.datetime(d.year, d.month, d.day) < end


@settings(max_examples=200, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1950, 1, 1), max_value=dt.datetime(2090, 1, 1)),
       st.integers(min_value=1, max_value=400))
def test_n_days_ago_is_the_day_n_days_before_now(now, n):
    (start, end), = _dated(f"what did we ship {n} days ago", now)
    assert end - start == DAY and start.time() == dt.time(0) and start.date() == (now - n * DAY).date()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.datetimes(min_value=dt.datetime(1901, 3, 1), max_value=dt.datetime(2098, 1, 1)))
def test_any_text_gives_spans_that_are_not_empty(text, now):
    for s in spans(text, now):
        assert s.start < s.end and s.text in text


def test_relative_times_count_back_from_now():
    # NOW is Wednesday 18 October 2023, 15:30
    assert _dated("what happened yesterday") == [(dt.datetime(2023, 10, 17), dt.datetime(2023, 10, 18))]
    assert _dated("and today?") == [(dt.datetime(2023, 10, 18), dt.datetime(2023, 10, 19))]
    assert _dated("what did we do last week") == [(dt.datetime(2023, 10, 9), dt.datetime(2023, 10, 16))]
    assert _dated("any news this week") == [(dt.datetime(2023, 10, 16), dt.datetime(2023, 10, 23))]
    assert _dated("plans made last weekend") == [(dt.datetime(2023, 10, 14), dt.datetime(2023, 10, 16))]
    assert _dated("last month's invoices") == [(dt.datetime(2023, 9, 1), dt.datetime(2023, 10, 1))]
    assert _dated("goals for this year") == [(dt.datetime(2023, 1, 1), dt.datetime(2024, 1, 1))]
    assert _dated("where did we go last summer") == [(dt.datetime(2023, 6, 1), dt.datetime(2023, 9, 1))]
    assert _dated("what did Anna say last Friday") == [(dt.datetime(2023, 10, 13), dt.datetime(2023, 10, 14))]
    assert _dated("the bug from last Wednesday") == [(dt.datetime(2023, 10, 11), dt.datetime(2023, 10, 12))]
    assert _dated("last May") == [(dt.datetime(2023, 5, 1), dt.datetime(2023, 6, 1))]
    assert _dated("last December") == [(dt.datetime(2022, 12, 1), dt.datetime(2023, 1, 1))]
    assert _dated("two weeks ago") == [(NOW - dt.timedelta(days=17.5), NOW - dt.timedelta(days=10.5))]
    assert _dated("a month ago") == [(dt.datetime(2023, 9, 1), dt.datetime(2023, 10, 1))]
    assert _dated("over the past 10 days") == [(NOW - 10 * DAY, NOW)]
    assert _dated("in the last two weeks") == [(NOW - 14 * DAY, NOW)]
    # in winter, "last summer" is the summer of the same year; in July (summer), the one before
    assert _dated("last summer", dt.datetime(2024, 7, 2)) == [(dt.datetime(2023, 6, 1), dt.datetime(2023, 9, 1))]


def test_a_relative_time_counts_back_from_the_one_day_the_query_names():
    got = _dated("What did Maria do last weekend before April 10, 2023?")
    assert got == [(dt.datetime(2023, 4, 8), dt.datetime(2023, 4, 10)), (dt.datetime(2023, 4, 10),
                                                                         dt.datetime(2023, 4, 11))]


def test_a_time_without_a_year_is_that_time_in_every_year():
    (s,) = spans("Which outdoor spot did Joanna visit in May?", NOW)
    assert s.yearly and (s.start, s.end) == (dt.datetime(2000, 5, 1), dt.datetime(2000, 6, 1))
    assert query_time.instances([s], 2021, 2023) == [(dt.datetime(y, 5, 1), dt.datetime(y, 6, 1))
                                                     for y in (2021, 2022, 2023)]
    (w,) = spans("what did we cook during the winter", NOW)  # December to February, across the new year
    assert query_time.instances([w], 2023, 2023) == [(dt.datetime(2023, 12, 1), dt.datetime(2024, 3, 1))]
    (leap,) = spans("what happened on 29 February", NOW)
    assert query_time.instances([leap], 2023, 2024) == [(dt.datetime(2023, 3, 1), dt.datetime(2023, 3, 1)),
                                                        (dt.datetime(2024, 2, 29), dt.datetime(2024, 3, 1))]


def test_ranges_seasons_and_borrowed_years():
    assert _dated("Where was John between August 11 and August 15 2023?") == [
        (dt.datetime(2023, 8, 11), dt.datetime(2023, 8, 16))]
    assert _dated("what changed from May to July 2023") == [(dt.datetime(2023, 5, 1), dt.datetime(2023, 8, 1))]
    assert _dated("the summer of 2022 trip") == [(dt.datetime(2022, 6, 1), dt.datetime(2022, 9, 1))]
    assert _dated("anything in 2019?") == [(dt.datetime(2019, 1, 1), dt.datetime(2020, 1, 1))]


@pytest.mark.parametrize("q", [
    "What may Caroline do next?",  # a verb
    "I gave the book to June and May",  # names, not months
    "what is planned for tomorrow", "what do we do next week",  # the future: no note occurred then
    "Which city was John in before traveling to Chicago?",  # relative to an event
    "what did we say recently", "What happened on 31 February 2023?", "How many 2000 ml bottles?",
])
def test_what_is_not_a_time_named_in_the_past(q):
    assert spans(q, NOW) == []


def test_bad_input_is_a_type_error():
    with pytest.raises(TypeError):
        spans(b"in May 2023", NOW)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        spans("in May 2023", dt.date(2023, 5, 1))  # type: ignore[arg-type]
    aware = dt.datetime(2023, 10, 18, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-3)))  # 02:30 UTC the 19th
    assert _dated("yesterday", aware) == [(dt.datetime(2023, 10, 18), dt.datetime(2023, 10, 19))]


# -- the formula ------------------------------------------------------------------------------------------------
def adr_formula() -> list[tuple[str, str]]:
    """ADR 0041's ```formula block: ``name = expression`` lines, in order."""
    block = re.search(r"```formula\n(.*?)```", ADR.read_text(encoding="utf-8"), re.S)
    assert block, "ADR 0041 has no ```formula block"
    out = [tuple(p.strip() for p in ln.split("=", 1)) for ln in block.group(1).splitlines() if ln.strip()]
    assert [n for n, _ in out] == ["gap", "w", "relevance"]
    return out


def test_time_prior_is_the_adr_formula():
    rng = np.random.default_rng(41)
    for _ in range(50):
        n, k = int(rng.integers(1, 12)), int(rng.integers(1, 4))
        rel = rng.uniform(0, 1, n)
        rel[0] = 1.0
        t = rng.uniform(0, 100, n) * 86400
        t[rng.uniform(size=n) < 0.1] = np.nan
        a = rng.uniform(0, 100, k) * 86400
        windows = np.stack([a, a + rng.uniform(0.5, 30, k) * 86400], axis=1)
        gamma = float(rng.uniform(0.1, 3))
        cand = Candidates.model_construct(ids=np.arange(n), relevance=rel, text_match=np.zeros(n),
                                          vector_match=np.zeros(n), context={"date": np.zeros(n)})
        got = adjusters.time_prior(cand, t, windows, gamma)
        expected_w = []
        for i in range(n):  # the ADR's first line, note by note and window by window
            ws = []
            for a_k, b_k in windows:
                env = {"max": max, "t": t[i], "a_k": a_k, "b_k": b_k, "gamma": gamma}
                env["gap"] = eval(adr_formula()[0][1], {"__builtins__": {}}, env)  # noqa: S307 (our own ADR)
                ws.append(eval(adr_formula()[1][1].replace("max_k ", ""), {"__builtins__": {}}, env))  # noqa: S307
            w = 0.0 if math.isnan(t[i]) else max(ws)
            expected_w.append(w)
        env = {"max": np.max, "s": rel, "w": np.array(expected_w), "gamma": gamma}
        expected_rel = eval(adr_formula()[2][1], {"__builtins__": {}}, env)  # noqa: S307 (our own ADR)
        assert np.allclose(got.context["date"], expected_w, rtol=1e-12, atol=0)
        assert np.allclose(got.relevance, expected_rel, rtol=1e-12, atol=0)
        assert got.relevance.max() == pytest.approx(1.0, abs=1e-15)


def test_time_prior_inside_a_window_and_one_length_away():
    day = 86400.0
    cand = Candidates.model_construct(ids=np.arange(4), relevance=np.array([1.0, 1.0, 1.0, 1.0]),
                                      text_match=np.zeros(4), vector_match=np.zeros(4), context={})
    t = np.array([5 * day, 20 * day, 30 * day, np.nan])  # inside [0, 10 d); 10 d after its end; 20 d; no time
    got = adjusters.time_prior(cand, t, np.array([[0.0, 10 * day]]), 1.0)
    assert np.allclose(got.context["date"], [1.0, 0.5, 0.25, 0.0], atol=1e-15)
    assert np.allclose(got.relevance, [1.0, 0.75, 0.625, 0.5], atol=1e-15)
    same = adjusters.time_prior(cand, t, np.array([[0.0, 10 * day]]), 0.0)
    assert same is cand  # γ 0: the prior is off


# -- through memory.recall ----------------------------------------------------------------------------------------
def _runtime(gamma: float):
    memory = {**HASHING["packs"]["memory"], "context": {"time_prior": gamma}}
    return open_test_runtime(config={"packs": {"memory": memory}}, clock=Clock(dt.datetime(2025, 10, 1, 12)))


def _seed(rt) -> dict[str, int]:
    """Two notes that differ only in one word the queries never say, three months apart, and a few others."""
    notes = {"spring": ("Kx1: Anna planted tulips and roses in the garden", dt.datetime(2025, 4, 10, 9)),
             "summer": ("Kx2: Anna planted tulips and roses in the garden", dt.datetime(2025, 7, 10, 9)),
             "other1": ("Ben repaired the bicycle chain before the race", dt.datetime(2025, 5, 2, 9)),
             "other2": ("The team chose Postgres for the billing service", dt.datetime(2025, 6, 20, 9)),
             "other3": ("Anna said the roses need more sun", dt.datetime(2025, 9, 1, 9))}
    return {k: rt.call("memory.remember", {"content": c, "occurred_at": t.isoformat(), "scope": "garden"}).note.id
            for k, (c, t) in notes.items()}


def _recall(rt, q: str, **kw):
    return rt.call("memory.recall", {"query": q, "fusion": "keyword_only", "include_breakdown": True,
                                     "now": "2025-10-01T12:00:00Z", **kw}).results


# (not "in April 2025": a note's date in words is indexed with it, "10 April 2025", so BM25 already prefers the
# April twin there; these are times its words do not say)
@pytest.mark.parametrize("q", ["What did Anna plant last spring?", "What did Anna plant during the spring?",
                               "What did Anna plant 6 months ago?"])
def test_the_prior_lifts_the_note_in_the_named_window_above_its_twin(q):
    off, on = _runtime(0.0), _runtime(1.0)
    try:
        ids = _seed(off)
        assert _seed(on) == ids
        before = [h.note.id for h in _recall(off, q)]
        # without the prior the newer twin wins (recency and salience decay): the test below can fail
        assert before.index(ids["summer"]) < before.index(ids["spring"])
        hits = _recall(on, q)
        after = [h.note.id for h in hits]
        assert after.index(ids["spring"]) < after.index(ids["summer"])
        date = {h.note.id: h.breakdown.context["date"] for h in hits}
        assert date[ids["spring"]] == pytest.approx(1.0, abs=1e-12) and date[ids["summer"]] < 1.0
        assert [h.breakdown.score for h in hits] == sorted((h.breakdown.score for h in hits), reverse=True)
    finally:
        off.close(), on.close()


def test_only_the_notes_time_counts_not_the_times_its_text_names():
    """ADR 0041 measured the times a note's text names ("last month" in a note of 18 April) and did not keep
    them: the note's occurred_at alone is its time."""
    rt = _runtime(1.0)
    try:
        note = rt.call("memory.remember", {"content": "John went to a convention with colleagues last month",
                                           "occurred_at": "2025-04-18T09:00:00Z", "scope": "work"}).note.id
        date = {h.note.id: h.breakdown.context["date"] for h in
                _recall(rt, "What did John attend with his colleagues in March 2025?")}
        gap = (dt.datetime(2025, 4, 18, 9) - dt.datetime(2025, 4, 1)) / DAY  # after a window of 31 days
        assert date[note] == pytest.approx(2 ** (-gap / 31), rel=1e-9)
    finally:
        rt.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["anna", "planted", "tulips", "roses", "garden", "bicycle", "race", "postgres",
                                 "billing", "sun", "team", "what", "did", "the"]), min_size=1, max_size=6),
       st.sampled_from(["weighted", "rrf", "keyword_only"]))
def test_a_question_naming_no_time_ranks_exactly_as_with_the_prior_off(words, fusion):
    q = " ".join(words)
    assert spans(q, dt.datetime(2025, 10, 1)) == []
    off, on = _runtime(0.0), _runtime(1.0)
    try:
        _seed(off), _seed(on)
        a, b = _recall(off, q, fusion=fusion), _recall(on, q, fusion=fusion)
        assert [(h.note.id, h.score) for h in a] == [(h.note.id, h.score) for h in b]
        assert all(h.breakdown.context["date"] == 0.0 for h in b)
    finally:
        off.close(), on.close()


def test_a_negative_strength_is_a_config_error():
    from palimpsest_memory.runtime import errors
    with pytest.raises(errors.ConfigError, match=r"time_prior"):
        _runtime(-0.5)

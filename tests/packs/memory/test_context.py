import datetime as dt
import sys
from pathlib import Path

import pytest

from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.context_signals import ThreadExpander, ThreadLinks, expand_bag, render_dated

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from query_signals import date_window_boost, query_date_windows, speaker_boost  # noqa: E402  (bench's, not recall's)
from palimpsest_memory.packs.memory.engine.text import tokenize


def links_for(threads):
    ln = ThreadLinks()
    for i, t in threads.items():
        ln.add(i, t)
    return ln


def test_thread_links_order_and_isolation():
    ln = links_for({1: "a", 2: "b", 3: "a", 5: "a"})
    ln.add(4, "a")  # out-of-order insert
    assert ln.neighbours(3) == (1, 4)
    assert ln.neighbours(4) == (3, 5)
    assert ln.neighbours(2) == (None, None)
    ln.remove(4)
    assert ln.neighbours(3) == (1, 5)
    assert ln.neighbours(99) == (None, None)


def test_expand_bag():
    b = expand_bag(["x", "y"], [["y", "z"], ["z"]], 0.5)
    assert b == {"x": 1, "y": 1.5, "z": 1.0}


def test_thread_expander_updates_previous_note():
    ex = ThreadExpander(0.5)
    ch1 = ex.add(1, "s1", ["question", "hike"])
    assert set(ch1) == {1}
    ch2 = ex.add(2, "s1", ["yes", "tuesday"])
    assert set(ch2) == {1, 2}  # the previous note's bag changed too
    assert ch2[1]["tuesday"] == 0.5 and ch2[2]["hike"] == 0.5
    ch3 = ex.add(3, "other", ["unrelated"])
    assert set(ch3) == {3} and "hike" not in ch3[3]
    assert set(ex.remove(2)) == {1}
    assert "tuesday" not in ex.bag(1)


def test_expansion_makes_answer_turn_findable():
    """A reply sharing no word with the question is found through its thread neighbour."""
    turns = [(1, "s1", "Did you finish the marathon in Boston?"), (2, "s1", "Yes! Crossed the line in 3 hours."),
             (3, "s2", "Boston weather is cold"), (4, "s2", "I baked bread today")]
    plain, expanded, ex = BM25Index(), BM25Index(), ThreadExpander(0.5)
    plain.add([i for i, _, _ in turns], [t for _, _, t in turns])
    for i, th, t in turns:
        ch = ex.add(i, th, tokenize(t))
        expanded.add_weighted(list(ch), list(ch.values()))
    assert 2 not in [i for i, _ in plain.search("marathon", 5)]
    assert 2 in [i for i, _ in expanded.search("marathon", 5)]
    assert expanded.search("marathon", 5)[0][0] == 1  # own words still beat borrowed ones


def test_query_date_windows():
    w = query_date_windows("What did Melanie paint on October 13, 2023?")
    assert len(w) == 1 and w[0][0] <= dt.datetime(2023, 10, 13) < w[0][1]
    assert not (w[0][0] <= dt.datetime(2023, 11, 30) < w[0][1])
    w = query_date_windows("What did they do in May 2023?")
    assert w[0][0] == dt.datetime(2023, 5, 1) and w[0][1] > dt.datetime(2023, 5, 31)
    assert query_date_windows("13 March 2022")[0][0] <= dt.datetime(2022, 3, 13)
    assert query_date_windows("what happened in 2021")[0][0] == dt.datetime(2021, 1, 1)
    assert query_date_windows("what did she say in May") == []  # no year: ambiguous


def test_date_and_speaker_boosts():
    occ = {1: dt.datetime(2023, 5, 8), 2: dt.datetime(2023, 9, 1)}.get
    out, f = date_window_boost({1: 0.1, 2: 0.2}, occ, query_date_windows("in May 2023"), 0.2)
    assert f == {1: 1.0, 2: 0.0} and out[1] == pytest.approx(0.3)
    spk = {1: "Caroline", 2: "Melanie"}.get
    out, f = speaker_boost({1: 0.1, 2: 0.1}, spk, "What did Caroline research?", ["Caroline", "Melanie"], 0.1)
    assert f == {1: 1.0, 2: 0.0}
    out, f = speaker_boost({1: 0.1, 2: 0.1}, spk, "Did Caroline meet Melanie?", ["Caroline", "Melanie"], 0.1)
    assert f == {1: 0.0, 2: 0.0}  # two names: no signal


def test_render_dated():
    assert render_dated("A: hi", dt.datetime(2023, 5, 8, 13, 56)) == "8 May 2023: A: hi"
    assert render_dated("A: hi", None) == "A: hi"

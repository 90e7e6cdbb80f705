"""bench/locomo_gap.py: the lexical-gap section issue 19's analysis rests on (ADR 0008) counts what it says, on a
small made-up conversation."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace as NS

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "locomo_gap", Path(__file__).resolve().parents[3] / "bench" / "locomo_gap.py")
gap = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = gap  # its dataclasses look their module up while the class is made
_spec.loader.exec_module(gap)


def conversation():
    turns = [NS(dia="D1:1", content="Ines: I planted purple carrots in the garden", thread="s1"),
             NS(dia="D1:2", content="Tomas: Ines, that sounds lovely", thread="s1"),
             NS(dia="D2:1", content="Ines: We adopted a turtle last week", thread="s2"),
             NS(dia="D2:2", content="Tomas: What is the weather like?", thread="s2")]
    qa = [{"q": "What did Ines plant in her garden?", "ev": ["D1:1", "D1:2"], "cat": 4},
          {"q": "Which animals does Ines like?", "ev": ["D2:1"], "cat": 1},
          {"q": "What does Tomas say about the weather?", "ev": [], "cat": 5}]
    return NS(turns=turns, speakers=["Ines", "Tomas"], qa=qa)


def test_a_shared_word_is_an_index_term_of_the_turns_own_text_other_than_a_speakers_name():
    (plant, garden_q, weather) = gap.shared_word(gap.asked([conversation()]))
    # "plant" and "planted" stem alike; D1:2 says "Ines", which is a speaker's name and so does not count
    assert plant == {"D1:1": True, "D1:2": False}
    # "animals" against "turtle": no word in common, the gap the section measures
    assert garden_q == {"D2:1": False}
    assert weather == {}


def test_counts_and_the_bound_follow_the_ranking():
    conv = conversation()
    shared = gap.shared_word(gap.asked([conv]))
    # question 1: its word-sharing turn ranked 12th, its other turn 1st; question 2: its turn not ranked
    filler = [f"D9:{i}" for i in range(20)]
    rankings = [["D1:2", *filler[:10], "D1:1"], filler, []]
    every = np.ones(3, dtype=bool)
    assert gap.gap_counts(shared, rankings, every) == (3, 2, 0, 1)
    now, bound = gap.word_bound(shared, rankings)
    assert now.tolist() == [50.0, 0.0, 100.0]  # a question without evidence counts 100, as the metric does
    assert bound.tolist() == [100.0, 0.0, 100.0]  # D1:1 shares a word: the oracle finds it; D2:1 does not


def test_the_section_reports_each_ranking():
    conv = conversation()
    cats = np.array([q["cat"] for q in conv.qa])
    span = np.array([len({e.split(":")[0] for e in q["ev"]}) for q in conv.qa])
    lines = gap.gap_section([conv], cats, span, [("perfect", [["D1:1", "D1:2"], ["D2:1"], []]),
                                                  ("nothing", [[], [], []])], "one store")
    split = next(i for i, ln in enumerate(lines) if ln.startswith("\nWhat ranking alone"))
    found = {ln.split(" | ")[0].lstrip("| "): ln for ln in lines[:split] if ln.startswith("| ")}
    bound = {ln.split(" | ")[0].lstrip("| "): ln for ln in lines[split:] if ln.startswith("| ")}
    assert found["*evidence turns*"].startswith("| *evidence turns* | *1* | *2 (67 %)* |")
    assert found["perfect"].startswith("| perfect | 100.0 | 100.0 |")
    assert found["nothing"].startswith("| nothing | 0.0 | 0.0 |")
    # over all questions: the empty one alone (100, 0, 0), then + half of the first (D1:1 shares a word, D1:2 does
    # not); multi-hop is the turtle question alone; no question here is open-domain or spans sessions
    assert bound["nothing"] == "| nothing | 33.3 / 50.0 | 0.0 / 0.0 | – | – |"
    assert bound["perfect"] == "| perfect | 100.0 / 100.0 | 100.0 / 100.0 | – | – |"


def test_the_missed_profile_weighs_what_the_missed_turn_and_the_top_ten_match():
    conv = conversation()
    filler = [f"D9:{i}" for i in range(10)]  # notes of no turn of this conversation: they match nothing
    rankings = [[*filler, "D2:2", "D1:1"], ["D1:1"], []]
    every = np.ones(3, dtype=bool)
    # only D1:1 shares a word and misses the top 10 (12th); it says "plant" and "garden", the top 10 say nothing
    assert gap.missed_profile(gap.asked([conv]), rankings, every) == (1, 12.0, 1.0, 10.0)
    # ranked first instead, nothing is missed; a turn not returned counts one place past the ranking's end
    assert gap.missed_profile(gap.asked([conv]), [["D1:1"], [], []], every)[0] == 0
    assert gap.missed_profile(gap.asked([conv]), [filler, [], []], every)[:2] == (1, 11.0)
    # a question left out of the selection is not counted
    assert gap.missed_profile(gap.asked([conv]), rankings, np.array([False, True, True]))[0] == 0


def test_the_reach_of_the_gap_evidence_counts_neighbours_and_threads():
    conv = conversation()
    shared = gap.shared_word(gap.asked([conv]))  # D1:2 and D2:1 share no word with their questions
    # D1:2 is returned 11th, next to D1:1, ranked first; D2:1 is not returned, its thread not in the top 10
    filler = [f"D9:{i}" for i in range(9)]
    assert gap.gap_reach(gap.asked([conv]), shared, [["D1:1", *filler, "D1:2"], ["D1:2"], []]) == (2, 1, 1, 1)
    assert gap.gap_reach(gap.asked([conv]), shared, [["D1:1"], ["D1:2"], []]) == (2, 2, 1, 1)  # D1:2 not returned either
    # D2:2 (D2:1's neighbour, its thread) in the top 10: beside and in its thread, though D2:1 is still not returned
    assert gap.gap_reach(gap.asked([conv]), shared, [["D1:2"], ["D2:2"], []]) == (1, 1, 1, 1)
    # the next turn of another thread is no neighbour: D1:2 ranked for the turtle question lifts nothing
    assert gap.gap_reach(gap.asked([conv]), shared, [["D1:2"], ["D1:2"], []]) == (1, 1, 0, 0)

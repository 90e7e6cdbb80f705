"""bench/locomo_sessions.py's session-level metric (issue 44 item 2, ADR 0036): R@k *all* needs every evidence
session among the top k episodes' sessions, *any* one of them; no evidence counts 1, as the turn table counts it."""
from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))
import locomo_sessions as S  # noqa: E402


def test_all_needs_every_evidence_session_and_any_one_of_them():
    ranked = [{"D1"}, {"D2"}, {"D3"}, {"D4"}, {"D5"}, {"D6"}, {"D7"}]
    assert S.hits(ranked, {"D1", "D6"}) == [0.0, 1.0, 1.0, 1.0]  # all@5, any@5, all@10, any@10
    assert S.hits(ranked, {"D6"}) == [0.0, 0.0, 1.0, 1.0]
    assert S.hits(ranked, {"D9"}) == [0.0, 0.0, 0.0, 0.0]
    assert S.hits(ranked, set()) == [1.0, 1.0, 1.0, 1.0]


def test_an_episode_spanning_two_sessions_counts_for_both():
    assert S.hits([{"D1", "D2"}], {"D1", "D2"}) == [1.0, 1.0, 1.0, 1.0]
    assert S.hits([], {"D1"}) == [0.0, 0.0, 0.0, 0.0]


def test_session_of_a_dialog_id():
    assert S.session_of("D12:3") == "D12"

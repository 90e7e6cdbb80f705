"""brain.serves: the recalls the serve ledger keeps, newest first, with their feedback (the web view's retrievals
page, issue 42 item 3). Written and still pending serves are listed alike; pages never repeat or skip a recall."""
from datetime import timedelta

import pytest

from brain_helpers import NOW, Clock, pair, recall, snapshot
from palimpsest_memory.runtime import errors


def config(flush_every: int) -> dict:
    return {"packs": {"memory": {"embedder": "hashing"}, "brain": {"serve_flush_every": flush_every}}}


def test_serves_lists_recalls_newest_first_with_feedback_written_or_not(make_pal_runtime):
    clock = Clock(NOW)
    rt = make_pal_runtime(config=config(2), clock=clock)
    relevant, fresh = pair(rt)
    made = []
    for i, actor in enumerate(("ada", "bo", "ada")):  # the first two are flushed together, the third stays pending
        clock.now = NOW + timedelta(minutes=i)
        made.append(recall(rt, actor=actor).recall_id)
    rt.call("brain.feedback", {"recall_id": made[0], "note_id": fresh, "signal": "not_useful"}, actor="ada")
    rt.call("brain.feedback", {"recall_id": made[2], "note_id": relevant, "signal": "useful"})
    listed = rt.call("brain.serves", {})
    assert [s.recall_id for s in listed.serves] == made[::-1] and listed.next_cursor is None
    newest = listed.serves[0]
    assert (newest.actor, newest.note_ids, newest.served_at) == ("ada", [relevant, fresh], NOW + timedelta(minutes=2))
    assert [(f.note_id, f.signal, f.actor) for f in newest.feedback] == [(relevant, "useful", "ada")]
    assert [(f.note_id, f.signal) for f in listed.serves[2].feedback] == [(fresh, "not_useful")]
    assert listed.serves[1].feedback == []
    assert [s.recall_id for s in rt.call("brain.serves", {"actor": "bo"}).serves] == [made[1]]
    assert rt.call("brain.serves", {}, namespace="elsewhere").serves == []


def test_serves_pages_by_cursor_and_refuses_a_forged_one(make_pal_runtime):
    clock = Clock(NOW)
    rt = make_pal_runtime(config=config(3), clock=clock)
    pair(rt)
    made = []
    for i in range(7):
        clock.now = NOW + timedelta(seconds=i // 2)  # pairs of recalls share a time: the recall id breaks the tie
        made.append(recall(rt).recall_id)
    seen, cursor = [], None
    while True:
        page = rt.call("brain.serves", {"limit": 2, **({"cursor": cursor} if cursor else {})})
        seen += [s.recall_id for s in page.serves]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(made) and len(seen) == 7
    assert [s.served_at for s in rt.call("brain.serves", {"limit": 7}).serves] == \
        sorted((NOW + timedelta(seconds=i // 2) for i in range(7)), reverse=True)
    before = snapshot(rt)
    for bad in ("not-a-cursor", "eyJ0IjogMX0"):  # not base64 JSON; JSON without the fields
        with pytest.raises(errors.InvalidParams, match="cursor"):
            rt.call("brain.serves", {"cursor": bad})
    assert snapshot(rt) == before  # a read: it writes nothing, not even the pending serves


def test_serves_older_than_the_retention_are_not_listed(make_pal_runtime):
    clock = Clock(NOW)
    rt = make_pal_runtime(config=config(1), clock=clock)
    pair(rt)
    old = recall(rt).recall_id
    clock.now = NOW + timedelta(days=29)
    kept = recall(rt).recall_id
    clock.now = NOW + timedelta(days=31)  # serve_retention_days = 30: the first recall is past it
    listed = rt.call("brain.serves", {})
    assert [s.recall_id for s in listed.serves] == [kept] and old != kept
    assert listed.retention_days == 30.0

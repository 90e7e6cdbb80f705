"""A text remembered again (issue 42 item 4, ADR 0039): the live note of the scope that says it is counted as seen
again instead of a second note being stored; on both backends (tests/packs run each test on DuckDB and
PostgreSQL), with the opt-out, keys, forget, export/import, stores with older duplicates and bad input."""
from __future__ import annotations

import io
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest_memory.packs.memory.duplicates import normal_form, text_hash
from palimpsest_memory.runtime import errors, exportfile
from store_support import HASHING

T = datetime(2026, 3, 1, 9, 0)


def count(rt, scope=None) -> int:  # type: ignore[no-untyped-def]
    return rt.call("memory.count", {"include_archived": True, "include_superseded": True,
                                    **({"scope": scope} if scope else {})}).count


def seen(rt, nid):  # type: ignore[no-untyped-def]
    return rt.call("memory.get", {"ids": [nid]}).notes[0].seen


# -- the normal form --------------------------------------------------------------------------------------
@pytest.mark.parametrize("a, b", [
    ("We chose Postgres", "  we   CHOSE\tpostgres\n"),     # case and white space
    ("ﬁle ｐｏｓｔｇｒｅｓ", "file postgres"),                   # NFKC: ligature, full-width letters
    ("Straße", "STRASSE"),                                    # case folding, not lower()
    ("café", "cafe\u0301"),                                   # composed and decomposed accents
])
def test_equal_forms(a: str, b: str) -> None:
    assert normal_form(a) == normal_form(b) and text_hash(a) == text_hash(b)


@pytest.mark.parametrize("a, b", [("We chose Postgres", "We chose Postgres."), ("cafe", "café"),
                                  ("a b", "ab")])
def test_different_forms(a: str, b: str) -> None:
    assert normal_form(a) != normal_form(b) and text_hash(a) != text_hash(b)


# -- remember ---------------------------------------------------------------------------------------------
def test_the_same_text_again_is_seen_again(rt) -> None:  # type: ignore[no-untyped-def]
    first = rt.call("memory.remember", {"content": "We chose Postgres for Orion", "scope": "orion",
                                        "occurred_at": T.isoformat()})
    again = rt.call("memory.remember", {"content": "we chose  postgres for ORION ", "scope": "orion",
                                        "occurred_at": (T + timedelta(days=2)).isoformat()})
    assert first.created and not first.seen_again and first.note.seen is None
    assert again.seen_again and not again.created and again.note.id == first.note.id
    assert again.note.content == "We chose Postgres for Orion"  # the note keeps its first wording
    assert again.note.seen.count == 2
    assert again.note.seen.first_seen == T and again.note.seen.last_seen == T + timedelta(days=2)
    assert count(rt) == 1
    listed = rt.call("memory.list", {}).notes
    assert [n.seen.count for n in listed] == [2]
    hits = rt.call("memory.recall", {"query": "Postgres Orion"}).results
    assert [h.note.id for h in hits] == [first.note.id]  # once


def test_other_scope_archived_or_superseded_is_not_matched(rt) -> None:  # type: ignore[no-untyped-def]
    a = rt.call("memory.remember", {"content": "the build is green", "scope": "a"}).note.id
    b = rt.call("memory.remember", {"content": "the build is green", "scope": "b"})
    none = rt.call("memory.remember", {"content": "the build is green"})  # no scope is a scope of its own
    assert b.created and none.created and len({a, b.note.id, none.note.id}) == 3
    rt.call("memory.archive", {"ids": [a]})
    c = rt.call("memory.remember", {"content": "the build is green", "scope": "a"})
    assert c.created and c.note.id != a
    newer = rt.call("memory.update", {"id": c.note.id, "content": "the build is red"}).note.id
    d = rt.call("memory.remember", {"content": "THE BUILD IS GREEN", "scope": "a"})
    assert d.created and d.note.id not in (a, c.note.id, newer)
    e = rt.call("memory.remember", {"content": "the build is red", "scope": "a"})
    assert e.seen_again and e.note.id == newer


def test_keep_opts_out(rt) -> None:  # type: ignore[no-untyped-def]
    a = rt.call("memory.remember", {"content": "ping", "scope": "s"}).note.id
    b = rt.call("memory.remember", {"content": "ping", "scope": "s", "duplicates": "keep"})
    assert b.created and not b.seen_again and b.note.id != a
    many = rt.call("memory.remember_many", {"notes": [{"content": "ping", "scope": "s"}] * 2, "duplicates": "keep"})
    assert many.created == 2 and many.seen_again == 0
    assert count(rt) == 4
    merged = rt.call("memory.remember", {"content": "Ping", "scope": "s"})
    assert merged.seen_again and merged.note.id == a  # among older duplicates, the oldest


def test_config_default_keep(make_pal_runtime) -> None:  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "duplicates": "keep"}}})
    rt.call("memory.remember", {"content": "ping"})
    assert rt.call("memory.remember", {"content": "ping"}).created
    assert rt.call("memory.remember", {"content": "ping", "duplicates": "merge"}).seen_again
    assert count(rt) == 2


def test_a_batch_merges_within_itself_and_the_record_is_bounded(rt) -> None:  # type: ignore[no-untyped-def]
    notes = [{"content": f"  Hello {'there' if i % 2 else 'THERE'} ", "scope": "s",
              "occurred_at": (T + timedelta(hours=i)).isoformat()} for i in range(20)]
    res = rt.call("memory.remember_many", {"notes": [*notes, {"content": "other", "scope": "s"}]})
    assert res.created == 2 and res.seen_again == 19 and res.replayed == 0
    assert len(set(res.ids[:20])) == 1
    record = seen(rt, res.ids[0])
    assert record.count == 20 and record.first_seen == T and record.last_seen == T + timedelta(hours=19)
    assert record.recent == [T + timedelta(hours=i) for i in range(12, 20)]  # seen_recent = 8, oldest first
    more = rt.call("memory.remember_many", {"notes": [{"content": "hello there", "scope": "s",
                                                       "occurred_at": (T - timedelta(days=1)).isoformat()}]})
    record = seen(rt, more.ids[0])
    assert record.count == 21 and record.first_seen == T - timedelta(days=1)  # an older sighting moves first
    assert len(record.recent) == 8 and record.last_seen == T + timedelta(hours=19)


def test_keys_replay_without_counting_twice(rt) -> None:  # type: ignore[no-untyped-def]
    a = rt.call("memory.remember", {"content": "deploy on Fridays is banned", "key": "rule-1"}).note.id
    b = rt.call("memory.remember", {"content": "Deploy on Fridays is banned", "key": "rule-2"})
    assert b.seen_again and b.note.id == a
    for _ in range(2):  # a retry of either call
        again = rt.call("memory.remember", {"content": "Deploy on Fridays is banned", "key": "rule-2"})
        assert again.note.id == a and not again.created and not again.seen_again
        assert rt.call("memory.remember", {"content": "deploy on Fridays is banned", "key": "rule-1"}).note.id == a
    many = rt.call("memory.remember_many", {"notes": [{"content": "Deploy on Fridays is banned", "key": "rule-2"},
                                                      {"content": "deploy on fridays is banned", "key": "rule-3"},
                                                      {"content": "deploy on fridays is banned", "key": "rule-3"}]})
    assert many.ids == [a, a, a] and many.replayed == 2 and many.seen_again == 1
    assert seen(rt, a).count == 3
    with pytest.raises(errors.Conflict):  # a merged key reused for another text
        rt.call("memory.remember", {"content": "deploy on Mondays", "key": "rule-2"})
    # the runtime's idempotency key (a retried call whose answer was lost) replays the whole call
    for _ in range(2):
        rt.call("memory.remember", {"content": "DEPLOY on fridays is banned"}, idempotency_key="call-7")
    assert seen(rt, a).count == 4 and count(rt) == 1


def test_forget_erases_the_record(rt) -> None:  # type: ignore[no-untyped-def]
    a = rt.call("memory.remember", {"content": "my pin is 4411", "key": "p1"}).note.id
    rt.call("memory.remember", {"content": "My PIN is 4411", "key": "p2"})
    rt.call("memory.forget", {"ids": [a], "reason": "asked"})
    for table in ("memory.note_seen", "memory.seen_keys"):
        assert rt.store.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
    b = rt.call("memory.remember", {"content": "my pin is 4411", "key": "p2"})
    assert b.created and b.note.id != a and b.note.seen is None


def test_export_import_keeps_the_count(make_pal_runtime) -> None:  # type: ignore[no-untyped-def]
    src = make_pal_runtime(config=HASHING)
    a = src.call("memory.remember", {"content": "tea, no sugar", "scope": "ann", "occurred_at": T.isoformat()})
    src.call("memory.remember", {"content": "Tea, no  sugar", "scope": "ann", "key": "k",
                                 "occurred_at": (T + timedelta(days=1)).isoformat()})
    before = seen(src, a.note.id)
    out = io.StringIO()
    exportfile.export_namespace(src, out, "default")
    dst = make_pal_runtime(config=HASHING)
    path = __import__("tempfile").mktemp(suffix=".jsonl")
    with open(path, "w") as f:
        f.write(out.getvalue())
    exportfile.import_file(dst, path, "default")
    assert seen(dst, a.note.id) == before and before.count == 2
    again = dst.call("memory.remember", {"content": "TEA, no sugar", "scope": "ann"})  # the import is hashed
    assert again.seen_again and again.note.id == a.note.id and again.note.seen.count == 3
    assert dst.call("memory.remember", {"content": "Tea, no  sugar", "scope": "ann", "key": "k"}).note.seen.count == 3


def test_duplicates_stored_before_keep_working(rt) -> None:  # type: ignore[no-untyped-def]
    """A store from before migration 008: notes without a hash, duplicates among them. They stay as they are; the
    next remember hashes the namespace and counts a repetition on the oldest."""
    ids = rt.call("memory.remember_many", {"notes": [{"content": "old text"}] * 3, "duplicates": "keep"}).ids
    rt.store.con.execute("UPDATE memory.notes SET text_hash = NULL")
    res = rt.call("memory.remember", {"content": "OLD text"})
    assert res.seen_again and res.note.id == min(ids) and count(rt) == 3
    assert rt.store.con.execute("SELECT count(*) FROM memory.notes WHERE text_hash IS NULL").fetchone()[0] == 0


def test_import_conversations_merges(rt) -> None:  # type: ignore[no-untyped-def]
    turns = [{"content": t, "occurred_at": (T + timedelta(minutes=i)).isoformat(), "key": f"c:{i}"}
             for i, t in enumerate(["A: hi", "B: hello", "A: Hi", "B: hello"])]
    conv = {"scope": "c1", "speakers": ["A", "B"], "notes": turns}
    res = rt.call("memory.import_conversations", {"conversations": [conv]})
    assert res.created == 2 and res.seen_again == 2 and res.ids[2] == res.ids[0] and res.ids[3] == res.ids[1]
    again = rt.call("memory.import_conversations", {"conversations": [conv]})  # a re-import adds nothing
    assert again.created == 0 and again.seen_again == 0 and again.replayed == 4
    assert seen(rt, res.ids[0]).count == 2
    kept = rt.call("memory.import_conversations", {"conversations": [{**conv, "scope": "c2", "notes": [
        {k: v for k, v in t.items() if k != "key"} for t in turns]}], "duplicates": "keep"})
    assert kept.created == 4


@pytest.mark.parametrize("bad", ["maybe", "", 1, None])
def test_bad_duplicates_value_is_refused(rt, bad) -> None:  # type: ignore[no-untyped-def]
    rt.call("memory.remember", {"content": "x marks the spot"})
    if bad is None:  # null is "the configured one"
        assert rt.call("memory.remember", {"content": "x marks the spot", "duplicates": bad}).seen_again
        return
    for verb, params in (("memory.remember", {"content": "x marks the spot", "duplicates": bad}),
                         ("memory.remember_many", {"notes": [{"content": "x marks the spot"}], "duplicates": bad}),
                         ("memory.remember_many", {"notes": [{"content": "x", "duplicates": "keep"}]})):
        with pytest.raises(errors.InvalidParams):
            rt.call(verb, params)
    assert count(rt) == 1 and seen(rt, 1) is None


def test_a_failed_call_counts_nothing(rt) -> None:  # type: ignore[no-untyped-def]
    a = rt.call("memory.remember", {"content": "ship it", "scope": "s"}).note.id
    with pytest.raises(errors.LimitExceeded):  # the second note is too long: the whole batch is refused
        rt.call("memory.remember_many", {"notes": [{"content": "Ship it", "scope": "s"},
                                                   {"content": "x" * 100_001}]})
    assert seen(rt, a) is None and count(rt) == 1


VARIANTS = st.sampled_from(["alpha beta", "Alpha  Beta", " ALPHA beta ", "gamma", "Gamma", "delta x"])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(st.tuples(VARIANTS, st.sampled_from(["s", "t"])), min_size=1, max_size=6),
                        min_size=1, max_size=4))
def test_property_one_note_per_form_and_scope(make_pal_runtime, batches) -> None:  # type: ignore[no-untyped-def]
    """Whatever the order and batching: one note per (scope, normal form), counts summing to the remembers."""
    rt = make_pal_runtime(config=HASHING)
    for batch in batches:
        rt.call("memory.remember_many", {"notes": [{"content": c, "scope": s} for c, s in batch]})
    said = [(s, normal_form(c)) for batch in batches for c, s in batch]
    notes = rt.call("memory.list", {"limit": 1000}).notes
    assert sorted((n.scope, normal_form(n.content)) for n in notes) == sorted(set(said))
    for n in notes:
        assert (n.seen.count if n.seen else 1) == said.count((n.scope, normal_form(n.content)))
    rt.close()

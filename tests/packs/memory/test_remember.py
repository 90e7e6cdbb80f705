"""memory.remember / memory.remember_many: verbatim storage, type defaults, validation, idempotency, limits,
the kind classifier, the clock, entity mentions, and rollback (issue 4, "remember")."""
import math
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from palimpsest_memory.runtime import Act, Context, Pack, errors

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = tomllib.loads((ROOT / "packs" / "memory" / "defaults.toml").read_text(encoding="utf-8"))
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
T0 = datetime(2026, 3, 2, 10, 15, 0)


def hashing(**memory: object) -> dict:
    return {"packs": {"memory": {"embedder": "hashing", **memory}}}


@pytest.fixture
def rt(make_pal_runtime):
    return make_pal_runtime(config=HASHING, clock=lambda: T0)


def counts(rt) -> tuple[int, int]:
    notes = rt.store.con.execute("SELECT count(*) FROM memory.notes").fetchone()[0]
    vectors = rt.store.con.execute("SELECT count(*) FROM memory.vectors").fetchone()[0]
    return notes, vectors


def stored_content(rt, note_id: int) -> str:
    return rt.store.con.execute("SELECT content FROM memory.notes WHERE id = ?", [note_id]).fetchone()[0]


def recall_ids(rt, query: str, **kw) -> list[int]:
    return [h.note.id for h in rt.call("memory.recall", {"query": query, **kw}).results]


# -- verbatim ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content", [
    "  leading spaces, trailing too  ",
    "line one\nline two\n\n\tindented line three\n",
    "Ünïcödé — “quotes”, emoji 🦉, 東京で会議, Ελληνικά",
    "exact   internal    spacing and CASE",
])
def test_content_is_stored_and_returned_verbatim(rt, content):
    res = rt.call("memory.remember", {"content": content})
    assert res.created is True
    assert res.note.content == content
    assert stored_content(rt, res.note.id) == content
    got = rt.call("memory.get", {"ids": [res.note.id]})
    assert got.notes[0].content == content


def test_remember_many_stores_each_note_verbatim_in_order(rt):
    contents = [" one ", "two\nlines", "三つ目のノート"]
    res = rt.call("memory.remember_many", {"notes": [{"content": c} for c in contents]})
    assert res.created == 3 and res.replayed == 0
    assert res.ids == sorted(res.ids) and len(set(res.ids)) == 3
    assert [stored_content(rt, i) for i in res.ids] == contents


# -- type defaults from config ----------------------------------------------------------------------------
@pytest.mark.parametrize("memory_type", ["episodic", "semantic"])
def test_type_defaults_come_from_defaults_toml(rt, memory_type):
    want = DEFAULTS[memory_type]
    assert (DEFAULTS["episodic"]["salience"], DEFAULTS["episodic"]["decay_factor"]) == (0.3, 0.02)
    assert (DEFAULTS["semantic"]["salience"], DEFAULTS["semantic"]["decay_factor"]) == (0.5, 0.005)
    note = rt.call("memory.remember", {"content": f"a {memory_type} note", "memory_type": memory_type}).note
    assert note.memory_type == memory_type
    assert note.salience == want["salience"]
    assert note.decay_factor == want["decay_factor"]


def test_memory_type_defaults_to_episodic(rt):
    note = rt.call("memory.remember", {"content": "no type given"}).note
    assert note.memory_type == "episodic"
    assert (note.salience, note.decay_factor) == (DEFAULTS["episodic"]["salience"],
                                                  DEFAULTS["episodic"]["decay_factor"])


def test_config_overrides_type_defaults(make_pal_runtime):
    rt = make_pal_runtime(config=hashing(semantic={"salience": 0.9, "decay_factor": 0.0}))
    note = rt.call("memory.remember", {"content": "lasting", "memory_type": "semantic"}).note
    assert (note.salience, note.decay_factor) == (0.9, 0.0)


@pytest.mark.parametrize("memory_type", ["episodic", "semantic"])
def test_explicit_salience_and_decay_win(rt, memory_type):
    note = rt.call("memory.remember", {"content": "explicit", "memory_type": memory_type,
                                       "salience": 0.77, "decay_factor": 0.123}).note
    assert (note.salience, note.decay_factor) == (0.77, 0.123)
    row = rt.store.con.execute("SELECT salience, decay_factor FROM memory.notes WHERE id = ?", [note.id]).fetchone()
    assert row == (0.77, 0.123)


def test_explicit_zero_salience_and_decay_are_kept(rt):
    note = rt.call("memory.remember", {"content": "zero is a value", "salience": 0.0, "decay_factor": 0.0}).note
    assert (note.salience, note.decay_factor) == (0.0, 0.0)


# -- invalid params: typed error, field path, nothing written ---------------------------------------------
INVALID = [
    ({"content": ""}, ["content"]),
    ({"content": "   \n\t "}, ["content"]),
    ({"content": "x", "memory_type": "procedural"}, ["memory_type"]),
    ({"content": "x", "salience": 1.5}, ["salience"]),
    ({"content": "x", "salience": -0.1}, ["salience"]),
    ({"content": "x", "salience": math.nan}, ["salience"]),
    ({"content": "x", "decay_factor": math.nan}, ["decay_factor"]),
    ({"content": "x", "decay_factor": math.inf}, ["decay_factor"]),
    ({"content": "x", "decay_factor": -0.01}, ["decay_factor"]),
    ({"content": "x", "colour": "blue"}, ["colour"]),
    ({"content": "x", "kind": "rumour"}, ["kind"]),
    ({"content": "x", "tags": ["ok", "  "]}, ["tags"]),
    ({"content": "x", "key": ""}, ["key"]),
    ({}, ["content"]),
]


@pytest.mark.parametrize("params,loc", INVALID, ids=[str(i) for i in range(len(INVALID))])
def test_invalid_remember_is_refused_with_field_path_and_writes_nothing(rt, params, loc):
    rt.call("memory.remember", {"content": "already here"})
    before = counts(rt)
    with pytest.raises(errors.InvalidParams) as exc:
        rt.call("memory.remember", params)
    assert type(exc.value) is errors.InvalidParams
    assert exc.value.verb == "memory.remember"
    locs = [e["loc"] for e in exc.value.details["errors"]]
    assert loc in locs, locs
    assert counts(rt) == before


@pytest.mark.parametrize("bad,loc", [
    ({"content": " "}, ["notes", "1", "content"]),
    ({"content": "x", "salience": 2}, ["notes", "1", "salience"]),
    ({"content": "x", "decay_factor": math.inf}, ["notes", "1", "decay_factor"]),
    ({"content": "x", "nope": 1}, ["notes", "1", "nope"]),
])
def test_invalid_note_in_a_batch_names_its_index_and_writes_nothing(rt, bad, loc):
    before = counts(rt)
    with pytest.raises(errors.InvalidParams) as exc:
        rt.call("memory.remember_many", {"notes": [{"content": "fine"}, bad, {"content": "also fine"}]})
    assert loc in [e["loc"] for e in exc.value.details["errors"]]
    assert counts(rt) == before


def test_empty_batch_is_refused(rt):
    with pytest.raises(errors.InvalidParams) as exc:
        rt.call("memory.remember_many", {"notes": []})
    assert ["notes"] in [e["loc"] for e in exc.value.details["errors"]]
    assert counts(rt) == (0, 0)


# -- idempotency keys -------------------------------------------------------------------------------------
def test_same_key_same_content_replays_the_stored_note(rt):
    first = rt.call("memory.remember", {"content": "We go with Postgres.", "key": "msg-1", "salience": 0.6})
    before = counts(rt)
    again = rt.call("memory.remember", {"content": "We go with Postgres.", "key": "msg-1"})
    assert first.created is True and again.created is False
    assert again.note.id == first.note.id
    assert again.note.salience == 0.6  # the stored note, not a re-derived one
    assert again.note.key == "msg-1"
    assert counts(rt) == before


def test_same_key_other_content_is_a_conflict_and_writes_nothing(rt):
    first = rt.call("memory.remember", {"content": "We go with Postgres.", "key": "msg-1"})
    before = counts(rt)
    with pytest.raises(errors.Conflict) as exc:
        rt.call("memory.remember", {"content": "We go with MySQL.", "key": "msg-1"})
    assert exc.value.verb == "memory.remember"
    assert counts(rt) == before
    assert stored_content(rt, first.note.id) == "We go with Postgres."


def test_keys_are_per_namespace(rt):
    a = rt.call("memory.remember", {"content": "same words", "key": "k"}, namespace="a")
    b = rt.call("memory.remember", {"content": "other words", "key": "k"}, namespace="b")
    assert a.created and b.created and a.note.id != b.note.id
    assert (a.note.namespace, b.note.namespace) == ("a", "b")


def test_remember_many_replays_keys_repeated_inside_a_batch(rt):
    res = rt.call("memory.remember_many", {"notes": [
        {"content": "turn one", "key": "t1"},
        {"content": "turn two", "key": "t2"},
        {"content": "turn one", "key": "t1"},
        {"content": "no key"},
        {"content": "no key"},
    ], "duplicates": "keep"})
    assert res.created == 4 and res.replayed == 1
    assert res.ids[2] == res.ids[0]
    assert len(set(res.ids)) == 4
    assert res.ids[3] != res.ids[4]  # keep: without a key, identical content is a new note (merge: ADR 0039)
    assert counts(rt) == (4, 4)


def test_remember_many_replays_keys_stored_by_an_earlier_call(rt):
    first = rt.call("memory.remember_many", {"notes": [{"content": "a1", "key": "a"}, {"content": "b1", "key": "b"}]})
    second = rt.call("memory.remember_many", {"notes": [
        {"content": "b1", "key": "b"}, {"content": "c1", "key": "c"}, {"content": "a1", "key": "a"}]})
    assert second.created == 1 and second.replayed == 2
    assert second.ids[0] == first.ids[1] and second.ids[2] == first.ids[0]
    assert second.ids[1] not in first.ids
    assert counts(rt) == (3, 3)


def test_key_repeated_in_a_batch_with_other_content_is_a_conflict(rt):
    with pytest.raises(errors.Conflict) as exc:
        rt.call("memory.remember_many", {"notes": [{"content": "v1", "key": "k"}, {"content": "v2", "key": "k"}]})
    assert [e["loc"] for e in exc.value.details["errors"]] == [["notes", "1", "key"]]
    assert counts(rt) == (0, 0)


def test_batch_replaying_a_stored_key_with_other_content_writes_nothing(rt):
    rt.call("memory.remember", {"content": "original", "key": "k"})
    before = counts(rt)
    with pytest.raises(errors.Conflict):
        rt.call("memory.remember_many", {"notes": [{"content": "new note"}, {"content": "changed", "key": "k"}]})
    assert counts(rt) == before


# -- limits -----------------------------------------------------------------------------------------------
def test_content_limit(make_pal_runtime):
    rt = make_pal_runtime(config=hashing(max_content_chars=20))
    rt.call("memory.remember", {"content": "x" * 19 + "y"})  # exactly at the cap is fine
    before = counts(rt)
    with pytest.raises(errors.LimitExceeded) as exc:
        rt.call("memory.remember", {"content": "x" * 20 + "y"})
    assert exc.value.code == "limit_exceeded"
    assert isinstance(exc.value, errors.InvalidParams)
    assert exc.value.verb == "memory.remember"
    assert [e["loc"] for e in exc.value.details["errors"]] == [["content"]]
    assert counts(rt) == before
    with pytest.raises(errors.LimitExceeded) as exc:
        rt.call("memory.remember_many", {"notes": [{"content": "short"}, {"content": "z" * 21}]})
    assert ["notes", "1", "content"] in [e["loc"] for e in exc.value.details["errors"]]
    assert counts(rt) == before


def test_batch_limit(make_pal_runtime):
    rt = make_pal_runtime(config=hashing(max_batch=3))
    assert rt.call("memory.remember_many", {"notes": [{"content": f"n{i}"} for i in range(3)]}).created == 3
    before = counts(rt)
    with pytest.raises(errors.LimitExceeded) as exc:
        rt.call("memory.remember_many", {"notes": [{"content": f"m{i}"} for i in range(4)]})
    assert exc.value.verb == "memory.remember_many"
    assert counts(rt) == before


# -- kind classifier --------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,kind", [
    ("We decided to go with Postgres instead of MySQL.", "decision"),
    ("The deploy script crashes with a timeout error.", "problem"),
    ("We shipped version 2.0 to everyone today.", "milestone"),
    ("I prefer tea over coffee in the morning.", "preference"),
    ("I feel so anxious about the interview tomorrow.", "emotional"),
    ("The meeting room is on the third floor.", None),
])
def test_kind_is_classified_from_the_content(rt, content, kind):
    note = rt.call("memory.remember", {"content": content}).note
    assert note.kind == kind
    assert note.kind_source == "classifier"
    assert rt.store.con.execute("SELECT kind, kind_source FROM memory.notes WHERE id = ?",
                           [note.id]).fetchone() == (kind, "classifier")


def test_callers_kind_wins_over_the_classifier(rt):
    note = rt.call("memory.remember", {"content": "We decided to use Postgres.", "kind": "milestone"}).note
    assert (note.kind, note.kind_source) == ("milestone", "caller")


def test_callers_kind_none_means_no_kind(rt):
    note = rt.call("memory.remember", {"content": "We decided to use Postgres.", "kind": "none"}).note
    assert (note.kind, note.kind_source) == (None, "caller")


def test_kind_filter_uses_the_classified_kind(rt):
    dec = rt.call("memory.remember", {"content": "We decided Postgres is the database."}).note
    rt.call("memory.remember", {"content": "The Postgres database crashed with an error."})
    assert recall_ids(rt, "Postgres database", kind="decision") == [dec.id]


# -- clock ------------------------------------------------------------------------------------------------
def test_occurred_and_created_at_default_to_the_runtime_clock(rt):
    note = rt.call("memory.remember", {"content": "clocked"}).note
    assert note.occurred_at == T0 and note.created_at == T0


def test_explicit_occurred_at_is_kept_and_created_at_is_the_clock(rt):
    when = datetime(2023, 5, 8, 13, 56)
    note = rt.call("memory.remember", {"content": "dated", "occurred_at": when}).note
    assert note.occurred_at == when and note.created_at == T0


def test_aware_occurred_at_is_stored_as_utc(rt):
    when = datetime(2026, 3, 2, 12, 15, tzinfo=timezone(timedelta(hours=2)))
    note = rt.call("memory.remember", {"content": "aware", "occurred_at": when.isoformat()}).note
    assert note.occurred_at == datetime(2026, 3, 2, 10, 15)


def test_clock_is_read_per_call(make_pal_runtime):
    now = [datetime(2026, 1, 1)]
    rt = make_pal_runtime(config=HASHING, clock=lambda: now[0])
    a = rt.call("memory.remember", {"content": "first"}).note
    now[0] = datetime(2026, 2, 1)
    b = rt.call("memory.remember", {"content": "second"}).note
    assert (a.created_at, b.created_at) == (datetime(2026, 1, 1), datetime(2026, 2, 1))


# -- mentions ---------------------------------------------------------------------------------------------
def test_known_entity_mentioned_gets_a_mentions_edge(rt):
    ent = rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"}).entity
    note = rt.call("memory.remember", {"content": "We moved Orion to Postgres"}).note
    assert note.entities == ["Orion"]
    edges = rt.call("kg.edges", {"node_id": f"m:{note.id}", "direction": "out"}).edges
    assert [(e.src, e.dst, e.relation) for e in edges] == [(f"m:{note.id}", ent.node_id, "mentions")]
    inbound = rt.call("kg.edges", {"node_id": ent.node_id, "direction": "in"}).edges
    assert [e.src for e in inbound] == [f"m:{note.id}"]


def test_an_entity_mentioned_twice_is_linked_and_listed_once(rt):
    rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"})
    note = rt.call("memory.remember", {"content": "Orion is late; Orion needs Postgres"}).note
    assert note.entities == ["Orion"]
    assert len(rt.call("kg.edges", {"node_id": f"m:{note.id}"}).edges) == 1


def test_unknown_names_get_no_edges(rt):
    rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"})
    note = rt.call("memory.remember", {"content": "We moved Vega to Postgres"}).note
    assert note.entities == []
    assert rt.call("kg.edges", {"node_id": f"m:{note.id}"}).edges == []


def test_remember_many_links_each_note_to_its_entities(rt):
    o = rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"}).entity
    v = rt.call("kg.upsert_entity", {"name": "Vega", "kind": "project"}).entity
    ids = rt.call("memory.remember_many", {"notes": [
        {"content": "Orion ships Friday"}, {"content": "Vega and Orion share a database"},
        {"content": "nothing known here"}]}).ids
    dsts = [sorted(e.dst for e in rt.call("kg.edges", {"node_id": f"m:{i}", "direction": "out"}).edges)
            for i in ids]
    assert dsts == [[o.node_id], sorted([o.node_id, v.node_id]), []]


def test_entities_of_another_namespace_are_not_linked(rt):
    rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"}, namespace="other")
    note = rt.call("memory.remember", {"content": "We moved Orion to Postgres"}).note
    assert note.entities == []
    assert rt.call("kg.edges", {"node_id": f"m:{note.id}"}).edges == []


# -- rollback ---------------------------------------------------------------------------------------------
def test_batch_with_an_invalid_last_note_leaves_no_rows_and_no_index_entries(rt):
    with pytest.raises(errors.InvalidParams):
        rt.call("memory.remember_many", {"notes": [{"content": "Zanzibar harbour plans"},
                                                   {"content": "Zanzibar ferry timetable"},
                                                   {"content": "bad", "salience": 7}]})
    assert counts(rt) == (0, 0)
    assert recall_ids(rt, "Zanzibar") == []


def test_failure_after_the_insert_rolls_back_rows_vectors_edges_and_index(make_pal_runtime):
    # kg.detect_entities refuses texts over 40 characters here: the batch fails after its notes were inserted
    # and embedded, while linking the last note's mentions.
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing"},
                                            "kg": {"detect_max_text_length": 40}}})
    rt.call("kg.upsert_entity", {"name": "Zanzibar", "kind": "place"})
    with pytest.raises(errors.LimitExceeded):
        rt.call("memory.remember_many", {"notes": [
            {"content": "Zanzibar harbour plans"},
            {"content": "Zanzibar ferry timetable, which is long enough to fail detection"}]})
    assert counts(rt) == (0, 0)
    assert rt.store.con.execute("SELECT count(*) FROM kg.edges").fetchone()[0] == 0
    assert recall_ids(rt, "Zanzibar harbour") == []
    ok = rt.call("memory.remember", {"content": "Zanzibar harbour"}).note
    assert recall_ids(rt, "Zanzibar harbour") == [ok.id]


class _Text(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str


class _Done(BaseModel):
    ok: bool


def _failing_pack() -> Pack:
    p = Pack("remember_then_fail", version="0.0.1", requires=["memory"])

    @p.verb("run", act=Act.COMMISSIVE)
    def run(params: _Text, ctx: Context) -> _Done:
        """Remember a note (its index update is queued for after commit), then fail."""
        ctx.call("memory.remember", {"content": params.text})
        raise errors.Conflict("changed my mind")

    return p


def test_a_rolled_back_remember_never_reaches_the_index(make_pal_runtime):
    rt = make_pal_runtime(_failing_pack(), discover=True, config=HASHING)
    with pytest.raises(errors.Conflict):
        rt.call("remember_then_fail.run", {"text": "Zanzibar harbour plans"})
    assert counts(rt) == (0, 0)
    assert recall_ids(rt, "Zanzibar harbour") == []
    later = rt.call("memory.remember", {"content": "Mombasa harbour plans"}).note
    assert recall_ids(rt, "Zanzibar") == []
    assert recall_ids(rt, "Mombasa harbour") == [later.id]

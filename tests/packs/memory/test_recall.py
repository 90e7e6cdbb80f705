"""memory.recall: the sub-handler pipeline, fusion modes, filters, limits, read-only-ness, namespaces,
supersession and as_of, the index across reopen and writes, and CJK (issue 4, "recall")."""
from datetime import timedelta

import pytest

from palimpsest_memory.runtime import Act, Visibility, errors
from palimpsest_memory.runtime.testing import open_test_runtime
from store_support import HASHING, HASHING_NO_EPISODES, NO_EPISODES, T0, Clock, snapshot  # noqa: E402,F401
from index_support import held_index

WORDLLAMA = {"packs": {"memory": {"embedder": "wordllama"}}}
WORDLLAMA_NO_EPISODES = {"packs": {"memory": {"embedder": "wordllama", "context": NO_EPISODES}}}


@pytest.fixture
def legs_rt(make_pal_runtime, clock):  # type: ignore[no-untyped-def]
    """Notes without threads stay unlinked: the test is about what the legs find."""
    return make_pal_runtime(config=HASHING_NO_EPISODES, clock=clock)
SUBHANDLERS = ["memory.recall_embed", "memory.recall_candidates", "memory.recall_fuse", "memory.recall_score",
               "memory.recall_rerank"]
FUSIONS = ["rrf", "weighted", "union", "vector_only", "keyword_only"]


def remember(rt, content: str, **kw) -> int:
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def recall(rt, query: str, **kw):
    return rt.call("memory.recall", {"query": query, **kw})


def ids(rt, query: str, **kw) -> list[int]:
    return [h.note.id for h in recall(rt, query, **kw).results]


def supersede(rt, old_id: int, new_id: int) -> None:
    """The new note supersedes the old one from the clock's now (memory.link with a supersedes edge)."""
    rt.call("memory.link", {"source_id": new_id, "target_id": old_id, "relation": "supersedes"})


# -- sub-handlers -----------------------------------------------------------------------------------------
def test_subhandlers_are_hidden_from_the_catalog_but_listed_on_request(rt):
    public = {v.full_name for v in rt.verbs()}
    everything = {v.full_name: v for v in rt.verbs(include_subhandlers=True)}
    assert "memory.recall" in public
    for name in SUBHANDLERS:
        assert name not in public
        assert everything[name].visibility is Visibility.SUBHANDLER
        assert everything[name].act is Act.ASSERTIVE


@pytest.mark.parametrize("verb,params", [
    ("memory.recall_embed", {"query": "postgres"}),
    ("memory.recall_candidates", {"query": "postgres", "k": 5}),
    ("memory.recall_fuse", {"query": "postgres", "text": {"ids": [], "scores": []},
                            "vector": {"ids": [], "scores": []}, "fusion": "rrf"}),
    ("memory.recall_score", {"candidates": {"ids": [], "relevance": [], "text_match": [], "vector_match": []}, "now": T0.isoformat()}),
    ("memory.recall_rerank", {"results": {"formula": "score", "weights": {}, "ids": [], "score": [], "relevance": [],
                                          "effective_salience": [], "recency": [], "text_match": [],
                                          "vector_match": [], "age_days": []}}),
])
def test_subhandlers_are_refused_from_outside_without_internal(rt, verb, params):
    with pytest.raises(errors.Forbidden) as exc:
        rt.call(verb, params)
    assert exc.value.verb == verb
    rt.call(verb, params, internal=True)  # the same call is fine for a debugging caller


def test_the_pipeline_run_by_hand_matches_recall(legs_rt):
    rt = legs_rt
    for text in ["Postgres is our database", "We moved the database to Postgres 16",
                 "The cat sleeps on the sofa", "Postgres replication lag alert"]:
        remember(rt, text)
    query = "postgres database"
    emb = rt.call("memory.recall_embed", {"query": query}, internal=True)
    assert emb.model == "hashing" and len(emb.vector) == 256 and emb.cjk is False
    legs = rt.call("memory.recall_candidates", {"query": query, "vector": emb.vector, "model": emb.model,
                                                "k": 40}, internal=True)
    assert set(legs.text.ids) == {1, 2, 4} and 3 not in legs.vector.ids
    fused = rt.call("memory.recall_fuse", {"query": query, "text": legs.text.model_dump(),
                                           "vector": legs.vector.model_dump(), "fusion": "weighted"}, internal=True)
    assert max(fused.candidates.relevance) == pytest.approx(1.0)
    scored = rt.call("memory.recall_score", {"candidates": fused.candidates.model_dump(),
                                             "now": T0.isoformat()}, internal=True).results
    got = recall(rt, query, fusion="weighted", now=T0.isoformat(), include_breakdown=True).results
    assert list(zip(scored.ids, scored.score)) == [(h.note.id, h.score) for h in got]
    assert [scored.breakdown(j) for j in range(len(scored.ids))] == [h.breakdown for h in got]


def test_recall_embed_routes_by_script(rt):
    assert rt.call("memory.recall_embed", {"query": "数据库迁移"}, internal=True).cjk is True
    assert rt.call("memory.recall_embed", {"query": "database migration"}, internal=True).cjk is False


# -- fusion -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fusion", FUSIONS)
def test_every_fusion_mode_runs_and_ranks_the_matching_note_first(rt, fusion):
    a = remember(rt, "Postgres replication lag alert fired at night")
    remember(rt, "The cat sleeps on the sofa")
    remember(rt, "Lunch was a sandwich")
    res = recall(rt, "postgres replication", fusion=fusion, include_breakdown=True)
    assert res.fusion == fusion
    assert res.results and res.results[0].note.id == a
    assert all(0.0 <= h.score <= 1.0 for h in res.results)


def test_configured_fusion_is_the_default(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "fusion": "rrf"}}})
    remember(rt, "Postgres replication")
    assert recall(rt, "postgres").fusion == "rrf"


def test_unknown_fusion_is_invalid(rt):
    with pytest.raises(errors.InvalidParams) as exc:
        recall(rt, "postgres", fusion="borda")
    assert ["fusion"] in [e["loc"] for e in exc.value.details["errors"]]


def test_keyword_only_ignores_the_vector_leg(make_pal_runtime):
    rt = make_pal_runtime(config=WORDLLAMA_NO_EPISODES, clock=Clock(T0))
    car = remember(rt, "We bought a car yesterday")
    auto = remember(rt, "The automobile needs new tyres before winter")  # no shared word, close in meaning
    vec = recall(rt, "car", fusion="vector_only", include_breakdown=True).results
    assert {h.note.id for h in vec} >= {car, auto}
    kw = recall(rt, "car", fusion="keyword_only", include_breakdown=True).results
    assert [h.note.id for h in kw] == [car]
    assert all(h.breakdown.vector_match == 0.0 for h in kw)
    assert kw[0].breakdown.text_match == 1.0


@pytest.mark.parametrize("fusion,kept", [("vector_only", "vector"), ("keyword_only", "text"), ("rrf", "both"),
                                         ("weighted", "both"), ("union", "both")])
def test_single_leg_fusions_use_only_their_leg(legs_rt, fusion, kept):
    rt = legs_rt
    for text in ["harbour one", "harbour two", "harbour three"]:
        remember(rt, text)
    legs = {"text": {"ids": [1, 2], "scores": [3.0, 1.0]}, "vector": {"ids": [3, 2], "scores": [0.9, 0.5]}}
    got = rt.call("memory.recall_fuse", {"query": "harbour", **legs, "fusion": fusion}, internal=True).candidates
    ids_ = {i for i, r in zip(got.ids, got.relevance) if r > 0}
    want = {"vector": {3}, "text": {1}, "both": {1, 3}}[kept]  # (min-max puts each leg's weakest at 0)
    assert want <= ids_
    if kept != "both":
        other = {"vector": {1}, "text": {3}}[kept]
        assert not other & set(got.ids)


# -- filters ----------------------------------------------------------------------------------------------
@pytest.fixture
def filtered(rt, clock):
    """Five notes that all match "harbour", differing in one attribute each."""
    n = {}
    clock.now = T0
    n["orion"] = remember(rt, "harbour crane decision for Orion", scope="orion", tags=["infra", "cranes"],
                          kind="decision", memory_type="semantic", salience=0.9)
    clock.now = T0 + timedelta(days=1)
    n["vega"] = remember(rt, "harbour ferry timetable for Vega", scope="vega", tags=["infra"],
                         kind="problem", salience=0.2)
    clock.now = T0 + timedelta(days=2)
    n["plain"] = remember(rt, "harbour walk on Sunday", salience=0.5)
    clock.now = T0 + timedelta(days=3)
    n["cranes"] = remember(rt, "harbour cranes repainted", tags=["cranes"], memory_type="semantic",
                           kind="milestone", salience=0.7)
    clock.now = T0 + timedelta(days=4)
    return n


def as_set(rt, **kw) -> set[int]:
    return set(ids(rt, "harbour", limit=50, **kw))


def test_filters(rt, filtered):
    n = filtered
    assert as_set(rt) == set(n.values())
    assert as_set(rt, scope="orion") == {n["orion"]}
    assert as_set(rt, scope="nowhere") == set()
    assert as_set(rt, kind="decision") == {n["orion"]}
    assert as_set(rt, kind="milestone") == {n["cranes"]}
    assert as_set(rt, kind="none") == {n["plain"]}
    assert as_set(rt, memory_type="semantic") == {n["orion"], n["cranes"]}
    assert as_set(rt, memory_type="episodic") == {n["vega"], n["plain"]}
    assert as_set(rt, tags=["infra"]) == {n["orion"], n["vega"]}
    assert as_set(rt, tags=["infra", "cranes"]) == {n["orion"], n["vega"], n["cranes"]}
    assert as_set(rt, tags=["infra", "cranes"], tag_mode="all") == {n["orion"]}
    assert as_set(rt, tags=["cranes"], tag_mode="all") == {n["orion"], n["cranes"]}
    assert as_set(rt, tags=["missing"]) == set()
    assert as_set(rt, min_salience=0.5) == {n["orion"], n["plain"], n["cranes"]}
    assert as_set(rt, min_salience=0.95) == set()
    assert as_set(rt, created_after=(T0 + timedelta(days=1)).isoformat()) == {n["vega"], n["plain"], n["cranes"]}
    assert as_set(rt, created_before=(T0 + timedelta(days=1)).isoformat()) == {n["orion"]}
    assert as_set(rt, created_after=(T0 + timedelta(hours=12)).isoformat(),
                  created_before=(T0 + timedelta(days=2, hours=12)).isoformat()) == {n["vega"], n["plain"]}
    assert as_set(rt, scope="orion", kind="problem") == set()


def test_filters_accept_aware_datetimes(rt, filtered):
    # 11:00+01:00 is 10:00 UTC on day 1, the moment the Vega note was created
    assert as_set(rt, created_after="2026-03-03T11:00:00+01:00") == {filtered["vega"], filtered["plain"],
                                                                      filtered["cranes"]}


@pytest.mark.parametrize("bad,loc", [
    ({"tag_mode": "some"}, ["tag_mode"]), ({"min_salience": 1.5}, ["min_salience"]),
    ({"memory_type": "procedural"}, ["memory_type"]), ({"kind": "rumour"}, ["kind"]),
    ({"limit": 0}, ["limit"]), ({"limit": 201}, ["limit"]), ({"min_score": 2}, ["min_score"]),
    ({"colour": "blue"}, ["colour"]),
])
def test_bad_recall_params_are_invalid(rt, bad, loc):
    with pytest.raises(errors.InvalidParams) as exc:
        recall(rt, "harbour", **bad)
    assert loc in [e["loc"] for e in exc.value.details["errors"]]


# -- limit and min_score ----------------------------------------------------------------------------------
def test_limit_and_min_score(rt):
    for i in range(12):
        remember(rt, f"harbour note number {i} " + "filler " * i)
    all_hits = recall(rt, "harbour", limit=50).results
    assert len(all_hits) == 12
    assert [h.note.id for h in recall(rt, "harbour", limit=5).results] == [h.note.id for h in all_hits[:5]]
    cut = all_hits[5].score
    kept = recall(rt, "harbour", limit=50, min_score=cut).results
    assert kept and all(h.score >= cut for h in kept)
    assert len(kept) == sum(1 for h in all_hits if h.score >= cut) < 12
    assert recall(rt, "harbour", min_score=1.0).results == []


def test_response_budget_truncates(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "response_char_budget": 100}}})
    for i in range(5):
        remember(rt, f"harbour {i} " + "x" * 40)
    res = recall(rt, "harbour")
    assert res.truncated is True
    assert 1 <= len(res.results) < 5
    assert sum(len(h.note.content) for h in res.results) <= 100


# -- refused queries: only empty (no letter or digit) or over-long ones (issue 20, item 4) --------------------
@pytest.mark.parametrize("query", ["", "   ", "??", "!?.,", "\n\t"])
def test_empty_queries_are_refused_and_write_nothing(rt, query):
    remember(rt, "aaaa the of and a ??")
    before = rt.call("memory.count", {}).count
    with pytest.raises(errors.InvalidParams) as exc:
        recall(rt, query)
    assert type(exc.value) is errors.InvalidParams
    assert exc.value.verb == "memory.recall"
    assert ["query"] in [e["loc"] for e in exc.value.details["errors"]]
    assert rt.call("memory.count", {}).count == before


@pytest.mark.parametrize("query", ["hello", "what", "a", "aaaa", "the of and", "AAAA a", "東"])
def test_short_and_stop_word_queries_answer(rt, query):
    """An ordinary short question is answered, never refused; an empty result list is an answer too."""
    remember(rt, "hello there, the kettle is broken")
    res = recall(rt, query)
    assert isinstance(res.results, list)


def test_a_greeting_finds_the_greeting_note(make_pal_runtime):
    """"hello" is a stop word (no keyword hit) but the shipped embedder's vector leg still finds the note."""
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "wordllama"}}})
    remember(rt, "hello there, the kettle is broken")
    remember(rt, "Quarterly invoices are due on the fifth")
    assert recall(rt, "hello").results[0].note.content.startswith("hello there")


def test_query_too_long_is_a_limit(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "max_query_chars": 30}}})
    remember(rt, "harbour cranes")
    assert ids(rt, "harbour cranes " + "x" * 15)  # 30 characters: fine
    with pytest.raises(errors.LimitExceeded) as exc:
        recall(rt, "harbour cranes " + "x" * 16)
    assert exc.value.verb == "memory.recall"
    assert ["query"] in [e["loc"] for e in exc.value.details["errors"]]


# -- read-only --------------------------------------------------------------------------------------------
def test_recall_is_assertive_and_writes_nothing(rt):
    spec = {v.full_name: v for v in rt.verbs()}["memory.recall"]
    assert spec.act is Act.ASSERTIVE and spec.writes is False
    rt.call("kg.upsert_entity", {"name": "Orion", "kind": "project"})
    for text in ["Orion harbour plans", "Orion ferry", "cat on the sofa"]:
        remember(rt, text)
    # The brain pack, when installed, records each serve in its own schema after the recall (its recall_served
    # subscriber runs in a transaction of its own, by design); everything else must be untouched.
    mine = lambda: {k: v for k, v in snapshot(rt).items() if not str(k).startswith("brain")}  # noqa: E731
    before, index_size = mine(), len(held_index(rt))
    for fusion in FUSIONS:
        recall(rt, "Orion harbour", fusion=fusion, include_breakdown=True)
    recall(rt, "Orion harbour", include_superseded=True, as_of=T0.isoformat())
    assert mine() == before
    assert len(held_index(rt)) == index_size


# -- namespaces -------------------------------------------------------------------------------------------
def test_namespaces_are_isolated_even_with_identical_content(rt):
    a = remember(rt, "Orion moves to Postgres", namespace="a")
    b = remember(rt, "Orion moves to Postgres", namespace="b")
    a2 = rt.call("memory.remember", {"content": "Postgres only in a", "namespace": "a"}).note.id
    assert set(ids(rt, "Orion Postgres", namespace="a", limit=50)) == {a, a2}
    assert ids(rt, "Orion Postgres", namespace="b", limit=50) == [b]
    assert ids(rt, "Orion Postgres", namespace="c") == []
    assert ids(rt, "Orion Postgres") == []  # the default namespace
    for fusion in FUSIONS:
        assert a not in ids(rt, "Postgres", namespace="b", fusion=fusion, limit=200)
    assert rt.call("memory.get", {"ids": [a, b]}, namespace="b").missing == [a]


def test_namespace_isolation_holds_for_thread_context(rt):
    # thread neighbours are pulled in by the context stage: they must pass the namespace mask too
    remember(rt, "first turn about harbour cranes", thread="s1", namespace="a")
    b1 = remember(rt, "first turn about harbour cranes", thread="s1", namespace="b")
    remember(rt, "second turn, unrelated words", thread="s1", namespace="a")
    b2 = remember(rt, "second turn, unrelated words", thread="s1", namespace="b")
    got = set(ids(rt, "harbour cranes", namespace="b", limit=50))
    assert got <= {b1, b2} and b1 in got


# -- supersession and as_of -------------------------------------------------------------------------------
def test_superseded_notes_are_hidden_unless_asked(rt, clock):
    old = remember(rt, "Orion database is MySQL")
    clock.now = T0 + timedelta(days=10)
    new = remember(rt, "Orion database is Postgres")
    assert set(ids(rt, "Orion database")) == {old, new}
    supersede(rt, old, new)
    assert ids(rt, "Orion database") == [new]
    assert set(ids(rt, "Orion database", include_superseded=True)) == {old, new}
    note = rt.call("memory.get", {"ids": [old]}).notes[0]
    assert note.superseded_by == new


def test_as_of_before_the_supersession_still_returns_the_old_note(rt, clock):
    old = remember(rt, "Orion database is MySQL")
    clock.now = T0 + timedelta(days=10)
    new = remember(rt, "Orion database is Postgres")
    supersede(rt, old, new)
    # before the new note existed: only the old one, not yet superseded
    assert ids(rt, "Orion database", as_of=(T0 + timedelta(days=5)).isoformat()) == [old]
    # at and after the supersession: only the new one
    assert ids(rt, "Orion database", as_of=(T0 + timedelta(days=10)).isoformat()) == [new]
    assert ids(rt, "Orion database", as_of=(T0 + timedelta(days=20)).isoformat()) == [new]


def test_as_of_hides_notes_created_after_it(rt, clock):
    first = remember(rt, "harbour plan one")
    clock.now = T0 + timedelta(days=3)
    second = remember(rt, "harbour plan two")
    assert ids(rt, "harbour plan", as_of=(T0 - timedelta(seconds=1)).isoformat()) == []
    assert ids(rt, "harbour plan", as_of=T0.isoformat()) == [first]
    assert ids(rt, "harbour plan", as_of=(T0 + timedelta(days=1)).isoformat()) == [first]
    assert set(ids(rt, "harbour plan", as_of=(T0 + timedelta(days=3)).isoformat())) == {first, second}


def test_as_of_uses_when_it_was_recorded_not_when_it_happened(rt, clock):
    clock.now = T0 + timedelta(days=30)
    late = remember(rt, "harbour story told late", occurred_at=T0.isoformat())
    assert ids(rt, "harbour story", as_of=(T0 + timedelta(days=1)).isoformat()) == []
    assert ids(rt, "harbour story") == [late]


# -- the index across reopen and writes -------------------------------------------------------------------
def test_index_is_rebuilt_on_reopen(tmp_path, clock):
    db = str(tmp_path / "pal.duckdb")
    texts = ["Orion moved to Postgres in March", "Vega keeps MySQL for now", "Postgres replication for Orion",
             "The cat sleeps on the sofa", "Orion launch party", "harbour cranes"]
    queries = ["Orion Postgres", "MySQL", "Orion", "cat sofa"]
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        rt.call("memory.remember_many", {"notes": [{"content": t, "thread": "s1"} for t in texts[:3]]})
        for t in texts[3:]:
            remember(rt, t, namespace="other" if "cranes" in t else None)
        before = {q: [(h.note.id, h.score) for h in recall(rt, q, now=T0.isoformat()).results] for q in queries}
        assert all(before.values())
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        after = {q: [(h.note.id, h.score) for h in recall(rt, q, now=T0.isoformat()).results] for q in queries}
        assert after == before
        assert ids(rt, "harbour cranes", namespace="other") and not ids(rt, "harbour cranes")


def test_lifecycle_columns_are_honoured_on_reopen(tmp_path, clock):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        old = remember(rt, "Orion database is MySQL")
        new = remember(rt, "Orion database is Postgres")
        gone = remember(rt, "Orion database archived note")
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        rt.store.con.execute("UPDATE memory.notes SET superseded_by = ?, superseded_at = ? WHERE id = ?", [new, T0, old])
        rt.store.con.execute("UPDATE memory.notes SET archived_at = ? WHERE id = ?", [T0, gone])
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        assert ids(rt, "Orion database") == [new]
        assert set(ids(rt, "Orion database", include_superseded=True)) == {old, new}


def test_index_stays_in_step_without_a_rebuild(legs_rt):
    rt = legs_rt
    index = held_index(rt)
    words = ["zanzibar", "mombasa", "valparaiso", "reykjavik", "ushuaia", "tromso", "hobart", "nuuk"]
    seen = []
    for n, w in enumerate(words, start=1):
        nid = remember(rt, f"the ferry to {w} leaves at dawn")
        seen.append(nid)
        assert held_index(rt) is index  # the same index object, updated in place
        assert len(index) == n
        assert ids(rt, w) == [nid]
        assert set(ids(rt, "ferry dawn", limit=50)) == set(seen)


def test_many_notes_grow_the_index_past_its_initial_capacity(legs_rt):
    rt = legs_rt
    res = rt.call("memory.remember_many", {"notes": [{"content": f"note {i} harbour"} for i in range(1500)]})
    last = remember(rt, "the very last zanzibar note")
    assert ids(rt, "zanzibar")[0] == last
    assert ids(rt, "zanzibar", fusion="keyword_only") == [last]  # (hashing collisions can add vector hits)
    assert len(ids(rt, "harbour", limit=200)) == 200
    assert max(res.ids) < last


# -- CJK --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("config", [HASHING_NO_EPISODES, WORDLLAMA_NO_EPISODES], ids=["hashing", "wordllama"])
def test_cjk_notes_are_found_by_cjk_queries_without_spaces(make_pal_runtime, config):
    rt = make_pal_runtime(config=config)
    zh = remember(rt, "我们决定把数据库迁移到新的服务器上")
    ja = remember(rt, "明日は東京で会議があります")
    remember(rt, "The meeting is in London tomorrow")
    assert ids(rt, "数据库迁移")[0] == zh
    assert ids(rt, "東京の会議")[0] == ja
    assert ids(rt, "会議", fusion="keyword_only") == [ja]
    assert ids(rt, "数据库", fusion="keyword_only") == [zh]


def test_cjk_queries_go_to_the_cjk_embedder_when_one_is_configured(make_pal_runtime):
    rt = make_pal_runtime(config={"packs": {"memory": {"embedder": "hashing", "cjk_embedder": "wordllama"}}})
    zh = remember(rt, "我们决定把数据库迁移到新的服务器上")
    en = remember(rt, "We moved the database to a new server")
    models = rt.store.con.execute("SELECT model, count(*) FROM memory.vectors GROUP BY model ORDER BY model").fetchall()
    assert models == [("hashing", 2), ("wordllama", 2)]  # every note is embedded with both
    res = recall(rt, "数据库迁移")
    assert res.embedder == "wordllama" and res.results[0].note.id == zh
    res = recall(rt, "database server")
    assert res.embedder == "hashing" and res.results[0].note.id == en


def test_reembed_after_a_model_change(tmp_path, clock):
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        car = remember(rt, "We bought a car yesterday")
        remember(rt, "The cat sleeps on the sofa", namespace="other")
    with open_test_runtime(config=WORDLLAMA, path=db, clock=clock) as rt:
        assert ids(rt, "car", fusion="vector_only") == []  # no wordllama vectors yet
        assert ids(rt, "car", fusion="keyword_only") == [car]
        res = rt.call("memory.reembed", {})
        assert (res.model, res.embedded) == ("wordllama", 2)  # every namespace's notes
        assert ids(rt, "automobile", fusion="vector_only")[0] == car  # usable right after the call
        models = rt.store.con.execute("SELECT model, count(*) FROM memory.vectors GROUP BY 1 ORDER BY 1").fetchall()
        assert models == [("hashing", 2), ("wordllama", 2)]
    with open_test_runtime(config=WORDLLAMA, path=db, clock=clock) as rt:
        assert ids(rt, "automobile", fusion="vector_only")[0] == car  # and after a reopen
        with pytest.raises(errors.InvalidParams):  # the caller's mistake, not the configuration's (issue 16.12)
            rt.call("memory.reembed", {"model": "no-such-model"})


def test_recalled_notes_equal_the_stored_rows_through_every_write(tmp_path, clock):
    """recall answers from the index's copy of each note (no SQL); after remember, supersede, un-supersede,
    archive and a reopen that copy must equal what memory.get reads from the table, field for field."""
    db = str(tmp_path / "pal.duckdb")

    def agree(rt) -> int:  # type: ignore[no-untyped-def]
        hits = recall(rt, "Orion database", include_superseded=True, limit=20).results
        stored = {n.id: n for n in rt.call("memory.get", {"ids": [h.note.id for h in hits]}).notes}
        for h in hits:
            assert h.note.model_dump(exclude={"entities"}) == stored[h.note.id].model_dump(exclude={"entities"})
        return len(hits)

    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        old = remember(rt, "Orion database is MySQL", tags=["db", "orion"], source_id="chat:1", key="k-old",
                       kind="decision", scope="orion", thread="s1")
        new = remember(rt, "Orion database is Postgres", salience=0.9, thread="s1")
        third = remember(rt, "Orion database backups run nightly", memory_type="semantic")
        assert agree(rt) == 3
        clock.now = T0 + timedelta(days=2)
        edge = rt.call("memory.link", {"source_id": new, "target_id": old, "relation": "supersedes"}).edge.id
        assert agree(rt) == 3
        assert rt.call("memory.get", {"ids": [old]}).notes[0].superseded_by == new
        rt.call("memory.unlink", {"edge_id": edge})
        assert agree(rt) == 3
        rt.call("memory.link", {"source_id": new, "target_id": old, "relation": "supersedes"})
        rt.call("memory.archive", {"ids": [third]})
        assert agree(rt) == 2
    with open_test_runtime(config=HASHING, path=db, clock=clock) as rt:
        assert agree(rt) == 2
        got = {h.note.id: h.note for h in recall(rt, "Orion database", include_superseded=True).results}
        assert got[old].superseded_by == new and got[old].key == "k-old" and got[old].source_id == "chat:1"

"""A follower applies what the writer computed (issue 41, item 7; ADR 0016): a ``notes_added`` change carries the
notes as columns, each note's BM25 tokens and its stored vectors, and another process's index takes them instead of
tokenising and embedding again. Its index must still equal one loaded from the tables: same digest (rows, columns,
BM25 postings and weights, vector ids), and the same recall answers with the same scores (to 1e-9: both sides
compute them from the same bits, so in practice they are identical).

The follower side needs a second process on one store: PostgreSQL (two runtimes on one database in this process,
as tests/runtime/test_postgres_shared.py does). The writer's own apply runs on both backends."""
from __future__ import annotations

import dataclasses
import random
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest
from store_support import HASHING, Clock

from palimpsest_memory.packs.memory import note_store
from palimpsest_memory.packs.memory.engine import index_writes
from palimpsest_memory.packs.memory.mirrors import changes
from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
from palimpsest_memory.packs.memory.engine.embedders import HashingEmbedder
from palimpsest_memory.packs.memory.mirrors.embedder_registry import EmbedderSpec
from palimpsest_memory.packs.memory.engine.index_writes import IndexWrites
from palimpsest_memory.packs.memory.engine.threads import expand_bag
from palimpsest_memory.runtime import Pack, changelog, hookimpl
from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available

NS = "follow"
T0 = datetime(2026, 3, 2, 10, 0, 0)
SCORE_TOLERANCE = 1e-9


class CountedEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it embeds (each runtime builds its own instance)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return super().embed(texts)


class CountedHooks:
    @hookimpl
    def register_embedders(self) -> list[EmbedderSpec]:
        return [EmbedderSpec("counted", CountedEmbedder, note="test: counts what it embeds")]


counted_pack = Pack("countedembedder", version="0.1.0")
counted_pack.add_hooks(CountedHooks())
COUNTED = {"packs": {"memory": {"embedder": "counted"}}}


def open_rt(path: str, config: dict | None = None) -> Any:
    import palimpsest_memory.packs.brain.pack as brain
    import palimpsest_memory.packs.kg.pack as kg
    import palimpsest_memory.packs.memory.pack as memory

    # one fixed clock: recall's recency weighs the time of the call, and both sides must answer at the same time
    return open_test_runtime(kg, memory, brain, counted_pack, config=config or COUNTED, path=path,
                             clock=Clock(T0 + timedelta(days=1)))


def batch(start: int, n: int) -> list[dict[str, Any]]:
    """Notes in two threads, some without one (their episodes are inferred), tags on some, dated in order."""
    out = []
    for i in range(start, start + n):
        note: dict[str, Any] = {"content": f"note {i} about {['coffee in Paris', 'the Orion deadline', 'tea'][i % 3]}"
                                           f" and {['Alice', 'Bob', 'the harbour'][i % 4 % 3]}",
                                "occurred_at": (T0 + timedelta(minutes=7 * i)).isoformat()}
        if i % 4:
            note["thread"] = f"t{i % 2}"
            note["scope"] = "s"
        if i % 5 == 0:
            note["tags"] = ["x", f"y{i % 3}"]
        out.append(note)
    return out


def index_digest(rt: Any) -> Any:
    with rt._lock:
        return rt.pack_state("memory").index.digest().get(NS)


def answers(rt: Any) -> list[list[tuple[int, float]]]:
    out = []
    for q in ("coffee in Paris", "Orion deadline Bob", "tea with the harbour", "note 7"):
        got = rt.call("memory.recall", {"query": q, "limit": 10}, namespace=NS).results
        out.append([(h.note.id, h.score) for h in got])
    return out


def same_answers(a: list[list[tuple[int, float]]], b: list[list[tuple[int, float]]]) -> None:
    assert [[i for i, _ in r] for r in a] == [[i for i, _ in r] for r in b]
    for ra, rb in zip(a, b):
        assert np.allclose([s for _, s in ra], [s for _, s in rb], rtol=0, atol=SCORE_TOLERANCE)


# -- what every process computes per note it applies: batched, exactly as one at a time ----------------------------
def test_bm25_add_weighted_in_one_batch_equals_one_note_at_a_time_exactly() -> None:
    """The batch path (one pass over the batch's terms) leaves the index exactly as adding each bag alone does:
    term ids, postings, rows' terms and lengths, and the running total length (the same float sums)."""
    rng = random.Random(7)
    words = [f"w{i}" for i in range(200)]

    def state(x: BM25Index) -> tuple:
        n = x._n_rows
        return (x._ids[:n].tolist(), x._dl[:n].tobytes(), x._alive[:n].tolist(), x._total_len, x._n_alive,
                x._n_dead, dict(x.postings.vocab), list(x.postings.df),
                [[(r.tobytes(), f.tobytes()) for r, f in x.postings.parts(t)] for t in range(len(x.postings))],
                [None if t is None else (t[0].tobytes(), t[1].tobytes())
                                                 for t in x._row_terms], sorted(x._row_of.ids().tolist()))

    batched, alone = BM25Index(), BM25Index()
    top = 0
    for _ in range(40):
        ids = list(dict.fromkeys(rng.randrange(top) if top and rng.random() < 0.2 else (top := top + 1)
                                 for _ in range(rng.randint(1, 30))))
        bags = []
        for _ in ids:
            bag: Counter = Counter(rng.choice(words) for _ in range(rng.randint(0, 25)))
            for t in rng.sample(words, 4):
                bag[t] += rng.choice([0.5, 0.3, 0.0, -0.25])  # fractional, and none (<= 0: not a term)
            bags.append(bag)
        batched.add_weighted(ids, bags)
        for i, bag in zip(ids, bags):
            alone.add_weighted([i], [bag])
        assert state(batched) == state(alone)


def test_expand_bag_adds_the_neighbours_words_as_word_by_word() -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(30)]
    for _ in range(2000):
        own = [rng.choice(words) for _ in range(rng.randint(0, 15))]
        neighbours = [[rng.choice(words) for _ in range(rng.randint(0, 15))] for _ in range(rng.randint(0, 2))]
        weight = rng.choice([0.5, 0.3, 1 / 3, 0.0])
        want: Counter = Counter(own)
        for toks in neighbours if weight > 0 else ():
            for t in toks:
                want[t] += weight
        assert list(expand_bag(own, neighbours, weight).items()) == list(want.items())  # values and order


def test_a_notes_added_change_carries_columns_tokens_and_vectors() -> None:
    rt = open_test_runtime(config=HASHING)
    try:
        seen: list[Any] = []
        real = note_store.notes_added
        note_store.notes_added = lambda rows, vectors: seen.append(real(rows, vectors)) or seen[-1]  # type: ignore
        try:
            rt.call("memory.remember_many", {"notes": batch(0, 5)}, namespace=NS)
        finally:
            note_store.notes_added = real  # type: ignore[assignment]
        (c,) = seen
        assert c.rows == [] and c.tokenizer == changes.TOKENIZER
        assert isinstance(c.columns["id"], np.ndarray) and c.columns["occurred_at"].dtype.kind == "M"
        assert set(c.columns) == set(IndexWrites.FIELDS)
        assert c.vectors["hashing"].shape == (5, 256) and c.vectors["hashing"].dtype == np.float32
        index = rt.pack_state("memory").index.of(NS)
        for nid, toks in zip(c.columns["id"].tolist(), c.token_lists()):
            assert toks == IndexWrites.tokens_of(index.rows[nid])  # what the follower would have tokenised
        codec = changelog.Codec(["palimpsest_memory.packs.memory"])  # the change log's round trip
        back = codec.decode(codec.encode(c))
        assert back.token_lists() == c.token_lists() and back.columns["content"] == c.columns["content"]
        for f in ("id", "salience", "occurred_at", "created_at", "superseded_at", "superseded_by"):
            assert back.columns[f].dtype == c.columns[f].dtype and back.columns[f].tobytes() == c.columns[f].tobytes()
        assert np.array_equal(back.vectors["hashing"], c.vectors["hashing"])
    finally:
        rt.close()


@pytest.fixture
def target(pal_target: str) -> str:
    return pal_target


def test_the_writers_own_index_equals_a_load_after_columns_and_tokens(target) -> None:  # type: ignore[no-untyped-def]
    with open_rt(target) as rt:
        for k in range(4):
            rt.call("memory.remember_many", {"notes": batch(10 * k, 10)}, namespace=NS)
        rt.call("memory.remember", {"content": "a lone note about coffee", "thread": "t1", "scope": "s"},
                namespace=NS)
        live, live_answers = index_digest(rt), answers(rt)
    with open_rt(target) as fresh:
        fresh.hold(NS)
        assert index_digest(fresh) == live
        same_answers(answers(fresh), live_answers)


# -- a follower: PostgreSQL ------------------------------------------------------------------------------------------
needs_pg = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)


@pytest.fixture
def url(pal_postgres):  # type: ignore[no-untyped-def]
    made = pal_postgres.fresh()
    yield made
    pal_postgres.drop(made)


def follow(writer: Any, follower: Any, monkeypatch: Any, notes: int = 60, per_call: int = 20) -> tuple[int, int]:
    """The writer remembers ``notes`` notes (and one more) in a namespace the follower holds; the follower catches up
    (under its lock, as its listener thread does; the thread is stopped, so that everything is applied here).
    Returns how many texts the follower tokenised and embedded meanwhile."""
    listener = follower.store._listener
    follower.store.unfollow()
    listener._thread.join(10)  # (it ends at its next poll)
    follower.call("memory.recall", {"query": "first"}, namespace=NS, consistency="strong")  # caught up, by this thread
    for k in range(0, notes, per_call):
        writer.call("memory.remember_many", {"notes": batch(k, per_call)}, namespace=NS)
    writer.call("memory.remember", {"content": "one more note about tea", "thread": "t0", "scope": "s"},
                namespace=NS)
    tokenised: list[str] = []
    real = index_writes.tokenize
    monkeypatch.setattr(index_writes, "tokenize", lambda text: tokenised.append(text) or real(text))
    embedded = counted(follower).texts
    with follower._lock:
        follower.followers.catch_up()
    monkeypatch.setattr(index_writes, "tokenize", real)
    return len(tokenised), counted(follower).texts - embedded


def counted(rt: Any) -> CountedEmbedder:
    return rt.pack_state("memory").embedders.get("counted")



def agrees_with_a_fresh_load(url: str, live: Any, live_answers: Any) -> None:
    """What the follower built equals what a fresh process loads from the tables: index and answers."""
    with open_rt(url) as fresh:
        fresh.hold(NS)
        assert index_digest(fresh) == live
        same_answers(answers(fresh), live_answers)

@needs_pg
def test_a_follower_takes_the_writers_tokens_and_vectors_and_equals_a_load(url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    writer, follower = open_rt(url), open_rt(url)
    try:
        writer.call("memory.remember", {"content": "first note"}, namespace=NS)
        follower.hold(NS)
        tokenised, embedded = follow(writer, follower, monkeypatch)
        assert embedded == 0, "the follower embedded notes that came with their vectors"
        # only the notes a change re-expands that it did not bring (each thread's or episode's note before the
        # change's first one in it): a few per change, not one per note (61)
        assert tokenised <= 4 * 4, "the follower tokenised notes that came with their tokens"
        assert counted(writer).texts == 62  # (the writer embedded each note once: the test can fail)
        live, live_answers = index_digest(follower), answers(follower)
    finally:
        writer.close()
        follower.close()
    agrees_with_a_fresh_load(url, live, live_answers)


@needs_pg
@pytest.mark.parametrize("old", ["rows", "tokenizer"])
def test_a_change_without_usable_tokens_is_tokenised_by_the_follower(url, monkeypatch, old) -> None:  # type: ignore[no-untyped-def]
    """A change logged before columns (rows) or by another tokeniser version: the follower tokenises the texts
    itself, as its own load would, and still never embeds."""
    real = changes.notes_added

    def logged(rows: Any, vectors: Any) -> changes.NotesAdded:
        if old == "rows":
            return changes.NotesAdded(rows, vectors)
        return dataclasses.replace(real(rows, vectors), tokenizer=changes.TOKENIZER + 1)

    writer, follower = open_rt(url), open_rt(url)
    try:
        writer.call("memory.remember", {"content": "first note"}, namespace=NS)
        follower.hold(NS)
        monkeypatch.setattr(note_store, "notes_added", logged)
        tokenised, embedded = follow(writer, follower, monkeypatch)
        assert tokenised >= 61 and embedded == 0  # every note, and never embedded
        live, live_answers = index_digest(follower), answers(follower)
    finally:
        writer.close()
        follower.close()
    agrees_with_a_fresh_load(url, live, live_answers)


@needs_pg
def test_a_follower_with_other_models_takes_only_its_own_and_embeds_nothing(url, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The writer stores two models' vectors (a CJK model beside the default), the follower's config one: it takes
    the vectors of the model it indexes, leaves the other (as a load does) and embeds nothing."""
    both = {"packs": {"memory": {"embedder": "counted", "cjk_embedder": "hashing"}}}
    writer, follower = open_rt(url, both), open_rt(url)
    try:
        writer.call("memory.remember", {"content": "first note"}, namespace=NS)
        follower.hold(NS)
        _, embedded = follow(writer, follower, monkeypatch)
        index = follower.pack_state("memory").index.of(NS)
        assert sorted(index.vectors) == ["counted"] and len(index.vectors["counted"]) == 62
        assert sorted(writer.pack_state("memory").index.of(NS).vectors) == ["counted", "hashing"]
        assert embedded == 0
        live, live_answers = index_digest(follower), answers(follower)
    finally:
        writer.close()
        follower.close()
    agrees_with_a_fresh_load(url, live, live_answers)


@needs_pg
def test_a_notification_of_changes_already_applied_reads_no_log(url) -> None:  # type: ignore[no-untyped-def]
    """The listener passes a notification's sequence number (its payload): a runtime that applied that far (its own
    commit, or one its last read of the log took) does not read the log again."""
    from palimpsest_memory.runtime.storage.pg_follow import newest

    assert newest(["3", "7", "5"]) == 7 and newest([]) is None and newest(["3", "x"]) is None
    rt = open_rt(url)
    try:
        listener = rt.store._listener
        rt.store.unfollow()
        listener._thread.join(10)  # (the thread ends at its next poll: no wake of its own below)
        assert not listener._thread.is_alive()
        rt.call("memory.remember", {"content": "a note"}, namespace=NS)
        reads: list[int] = []
        real = rt.followers.catch_up
        rt.followers.catch_up = lambda *a, **k: reads.append(1) or real(*a, **k)  # type: ignore[method-assign]
        seq = rt.followers.seq
        assert seq > 0 and rt._wake(seq) is True and reads == []
        assert rt._wake(seq + 1) is True and rt._wake() is True and reads == [1, 1]
    finally:
        rt.close()
    assert rt._wake(1) is False  # closed

"""The index holds its notes as columns (rowstore.py, ADR 0025): a row read back is the row given, the thread links
kept in the columns are those ``threads.ThreadLinks`` keeps, a batch read with ``fetchnumpy`` (NULLs masked) indexes
as the same notes given one ``NoteRow`` at a time, and the id → row arrays (idrows.py) answer as a dict."""
from __future__ import annotations

import random
from datetime import datetime, timedelta

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine.idrows import IdRows
from palimpsest_memory.packs.memory.engine.index import MemoryIndex
from palimpsest_memory.packs.memory.engine.rowstore import Coded, NoteRow
from palimpsest_memory.packs.memory.mirrors.index import index_digest
from palimpsest_memory.packs.memory.engine.threads import ThreadLinks

T0 = datetime(2024, 5, 8, 13, 56, 7, 123456)


def index() -> MemoryIndex:
    return MemoryIndex(k1=1.2, b=0.75, max_query_terms=16, expansion_weight=0.5, prefix_chars=20,
                       episode_gap_seconds=3600.0)


def rows(n: int, start: int = 1, ns: str = "default") -> list[NoteRow]:
    out = []
    for i in range(start, start + n):
        out.append(NoteRow(i, ns, f"note {i} about the harbour ferry {i % 7}", ["episodic", "semantic"][i % 2],
                           ["decision", None, "preference"][i % 3], [None, "home", "orion"][i % 3],
                           [None, "t1", "t2", None][i % 4], [[], ["red"], ["b", "a"]][i % 3], 0.1 * (i % 9),
                           0.02, T0 + timedelta(minutes=7 * i, microseconds=i), T0 + timedelta(seconds=i),
                           None if i % 5 else T0 + timedelta(days=1), None if i % 6 else T0 + timedelta(days=2),
                           ["caller", "classifier"][i % 2], None if i % 4 else f"src-{i}",
                           None if i % 3 else f"key-{i}", None if i % 5 else i + 1))
    return out


def test_a_row_read_back_is_the_row_given() -> None:
    ix = index()
    given = rows(40)
    ix.add(given, {})
    assert len(ix.rows) == 40 and list(ix.rows) == [r.id for r in given]
    for r in given:
        got = ix.rows[r.id]
        assert got == NoteRow(**{**{f: getattr(r, f) for f in NoteRow.__slots__}, "tags": list(r.tags)})
    assert 999 not in ix.rows and ix.rows.get(999) is None
    with pytest.raises(KeyError):
        ix.rows[999]


def test_edits_are_read_back_and_a_forgotten_row_is_gone() -> None:
    ix = index()
    ix.add(rows(10), {})
    ix.set_superseded(3, T0, by=4)
    ix.set_archived(5, T0 + timedelta(hours=1))
    ix.set_metadata(6, [("tags", ["x", "y"]), ("salience", 0.9), ("kind", "milestone"), ("kind_source", "caller"),
                        ("scope", "elsewhere")])
    assert (ix.rows[3].superseded_at, ix.rows[3].superseded_by) == (T0, 4)
    assert ix.rows[5].archived_at == T0 + timedelta(hours=1) and not ix.cols["alive"][ix.slot(5)]
    r = ix.rows[6]
    assert (r.tags, r.salience, r.kind, r.kind_source, r.scope) == (["x", "y"], 0.9, "milestone", "caller",
                                                                     "elsewhere")
    ix.forget([7])
    assert 7 not in ix.rows and len(ix.rows) == 9 and ix.rows.get(7) is None


@pytest.mark.parametrize("few", ["objects", "coded"])
def test_a_batch_of_columns_as_fetchnumpy_gives_them_indexes_as_the_rows(few: str) -> None:
    """A batch of columns (as a load reads them: NULLs masked; with ``coded``, the text columns of few values as
    positions, ``rowstore.Coded``) indexes as the same notes given one at a time: the same rows, links, BM25 rows
    and the same codes, made in the same order (threads given, episodes inferred, in three scopes)."""
    given = rows(60)
    one = index()
    for r in given:  # one at a time, as a live ingest
        one.add([r], {})
    cols = {f: [getattr(r, f) for r in given] for f in MemoryIndex.FIELDS}
    batch = {}
    for f, v in cols.items():
        if f == "namespace":
            batch[f] = "default"
        elif f in ("occurred_at", "created_at", "superseded_at", "archived_at"):
            arr = np.array([np.datetime64("NaT") if x is None else np.datetime64(x, "us") for x in v],
                           dtype="datetime64[us]")
            batch[f] = np.ma.masked_array(arr, mask=[x is None for x in v])
        elif f in ("salience", "decay_factor", "id"):
            batch[f] = np.array(v)
        elif f == "superseded_by":
            batch[f] = np.ma.masked_array(np.array([0 if x is None else x for x in v]), mask=[x is None for x in v])
        else:
            data = np.empty(len(v), dtype=object)
            data[:] = [None if x is None else (np.array(x, dtype=object) if f == "tags" else x) for x in v]
            batch[f] = np.ma.masked_array(data, mask=[x is None for x in v])
    if few == "coded":
        for f in ("memory_type", "kind", "kind_source"):
            values = np.array([None, *sorted({x for x in cols[f] if x is not None})], dtype=object)  # not in first use
            batch[f] = Coded(values, np.array([values.tolist().index(x) for x in cols[f]], dtype=np.int64))
    many = index()
    many.add_columns(batch)
    assert index_digest(many) == index_digest(one)
    for table in ("namespaces", "scopes", "threads"):  # codes made in the same order: the same columns
        assert getattr(many, table).values == getattr(one, table).values
    for table in ("threads", "kinds", "kind_sources"):
        assert getattr(many.rows, table).values == getattr(one.rows, table).values
    for name in ("thread", "scope", "kind", "mtype", "ns"):
        assert np.array_equal(many.cols[name][many.slots(many.rows.ids())], one.cols[name][one.slots(one.rows.ids())])
    assert len({k for k in one.threads.values if isinstance(k, tuple) and k[0] == "~episode"}) >= 2
    assert [many.rows[i] for i in many.rows] == [one.rows[i] for i in one.rows]
    for i in one.rows:
        assert many.neighbours(i) == one.neighbours(i)
        assert many.bm25.search("harbour ferry 3", 5) == one.bm25.search("harbour ferry 3", 5)


def test_thread_links_in_the_columns_are_the_links_a_dict_keeps() -> None:
    rng = random.Random(7)
    ix, ref = index(), ThreadLinks()
    links = ix.expander.links
    ids = rng.sample(range(1, 400), 200)
    ix.add_columns({f: [getattr(r, f) for r in rows(400)] for f in MemoryIndex.FIELDS}, text_index=False)
    for i in range(1, 401):  # unlink all, then link in a random order (out of order inserts) with random threads
        links.remove(i)
    for i in ids:
        t = rng.choice(["a", "b", "c", None])
        links.add(i, t)
        ref.add(i, t)
        if rng.random() < 0.2:
            j = rng.choice(ids[: ids.index(i) + 1])
            links.remove(j)
            ref.remove(j)
    for i in range(1, 401):
        assert links.neighbours(i) == ref.neighbours(i)
        assert links.thread_of(i) == ref.thread_of(i)


def test_id_rows_answer_as_a_dict() -> None:
    rng = random.Random(3)
    m, ref = IdRows(), {}
    m.set_many(np.arange(10, 20), np.arange(10))
    ref.update(zip(range(10, 20), range(10)))
    for _ in range(2000):
        i = rng.choice([rng.randrange(0, 300), rng.randrange(10**12, 10**12 + 5), -rng.randrange(1, 5)])
        op = rng.random()
        if op < 0.5:
            r = rng.randrange(0, 10**6)
            m[i] = r
            ref[i] = r
        elif op < 0.8:
            assert m.pop(i, None) == ref.pop(i, None)
        else:
            assert m.get(i) == ref.get(i) and (i in m) == (i in ref)
    assert len(m) == len(ref) and list(m) == sorted(ref)
    assert m.max_id() == max(ref)
    probe = np.array(sorted(ref)[:50] + [5, 999, 10**12 + 9], dtype=np.int64)
    assert m.rows_of(probe).tolist() == [ref.get(int(i), -1) for i in probe]
    assert m.rows_of(np.array([10**12 + 1])).size == 1  # far ids stay out of the array (a small dict holds them)
    assert m._rows.size < 10**6


def test_a_store_reopened_holds_each_note_as_its_row_reads(tmp_path) -> None:
    """At a namespace's first call the index reads its notes from the table (index_mirror.read_columns: the text
    columns of a few values come as positions in the namespace's list of them). Each row it then holds is the row a
    ``SELECT`` of that note gives — memory types, caller and classifier kinds, none, in two namespaces whose lists
    differ."""
    from index_support import held_index
    from store_support import HASHING

    from palimpsest_memory.packs.memory.engine.index import FULL_COLUMNS
    from palimpsest_memory.runtime.testing import open_test_runtime

    db = str(tmp_path / "pal.duckdb")
    texts = ["We decided to move the launch to May", "I prefer tea over coffee", "the ferry leaves at nine",
             "Shipped the 2.0 milestone today", "a quiet afternoon"]
    with open_test_runtime(config=HASHING, path=db) as rt:
        rt.call("memory.remember_many", {"notes": [
            {"content": f"{texts[i % 5]} ({i})", "memory_type": ["episodic", "semantic"][i % 2],
             **({"kind": ["problem", "emotional"][i % 2]} if i % 3 == 0 else {})} for i in range(40)]})
        rt.call("memory.remember_many", {"namespace": "other", "notes": [
            {"content": f"{texts[1]} ({i})", "memory_type": "semantic"} for i in range(5)]})
    with open_test_runtime(config=HASHING, path=db) as rt:
        for ns in ("default", "other"):
            index = held_index(rt, ns)
            stored = {r[0]: NoteRow(*r) for r in rt.store.con.execute(
                f"SELECT {FULL_COLUMNS} FROM memory.notes WHERE namespace = ?", [ns]).fetchall()}
            held = {i: index.rows[i] for i in index.rows}
            assert held == {i: NoteRow(**{**{f: getattr(r, f) for f in NoteRow.__slots__}, "tags": list(r.tags)})
                            for i, r in stored.items()}
            kinds = {(r.memory_type, r.kind, r.kind_source) for r in held.values()}
            assert len(kinds) >= (4 if ns == "default" else 1)

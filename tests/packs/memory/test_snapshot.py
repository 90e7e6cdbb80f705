"""The full-text index snapshot: a restart restores BM25 instead of re-tokenising, and answers exactly as a rebuild."""
import copy
import io
import zipfile

import numpy as np
import pytest
from store_support import HASHING, T0

from palimpsest_memory.runtime.testing import open_test_runtime
from index_support import held_index
from palimpsest_memory.packs.memory.engine import snapshot_io
from palimpsest_memory.packs.memory.mirrors.index import index_digest

SNAP = copy.deepcopy(HASHING)
SNAP["packs"]["memory"]["index_snapshot_min_notes"] = 1
NO_SNAP = copy.deepcopy(HASHING)
NO_SNAP["packs"]["memory"]["index_snapshot_min_notes"] = 10 ** 9

WORDS = ["orion", "postgres", "vega", "mysql", "harbour", "crane", "ferry", "dawn", "budget", "launch", "sofa",
         "replication", "backup", "nightly", "alice", "bob", "decision", "because", "latency", "東京タワー"]
QUERIES = ["orion postgres", "vega mysql backup", "ferry at dawn", "why the budget decision", "東京", "alice launch"]


def notes(n: int, start: int = 0) -> list[dict]:
    return [{"content": f"{WORDS[(i * 7) % len(WORDS)]} {WORDS[(i * 3 + 1) % len(WORDS)]} note {i} "
                        f"{WORDS[(i * 5 + 2) % len(WORDS)]}",
             "thread": f"s{i % 4}", "scope": f"p{i % 2}"} for i in range(start, start + n)]


def answers(rt) -> dict:  # type: ignore[no-untyped-def]
    return {q: [(h.note.id, round(h.score, 12)) for h in rt.call(
        "memory.recall", {"query": q, "limit": 20, "now": T0.isoformat(), "fusion": "keyword_only"}).results]
        for q in QUERIES}


def snapshot_row(rt, upto: int = 1):  # type: ignore[no-untyped-def]
    """The BM25 snapshot's (notes, max_id); with ``upto=999`` the graphs' too (rows 1000 and up: the vectors)."""
    return rt.store.con.execute("SELECT notes, max_id FROM memory.index_snapshot WHERE id <= ? ORDER BY id",
                           [upto]).fetchall()


def vector_rows(rt):  # type: ignore[no-untyped-def]
    return rt.store.con.execute("SELECT notes, max_id FROM memory.index_snapshot WHERE id >= 1000 ORDER BY id").fetchall()


def test_a_restart_restores_the_index_and_answers_as_before(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=SNAP, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(60)}).ids
        rt.call("memory.archive", {"ids": [ids[3]]})
        before = answers(rt)
    with open_test_runtime(config=SNAP, path=db) as rt:
        index = held_index(rt)
        assert snapshot_row(rt) == [(60, ids[-1])]
        assert not index.dirty and not index.expander._tokens  # restored: nothing was tokenised
        assert answers(rt) == before
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        rt.store.con.execute("DELETE FROM memory.index_snapshot")
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        assert held_index(rt).dirty  # rebuilt from the notes
        assert answers(rt) == before


def test_notes_added_after_a_restore_expand_their_thread_neighbours_like_a_rebuild(tmp_path) -> None:
    """A new note re-expands its thread neighbour's bag: after a restore the neighbour's tokens come from its
    text on demand, so the index must end up exactly as one rebuilt from all the notes."""
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=SNAP, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(40)})
    with open_test_runtime(config=SNAP, path=db) as rt:
        assert not held_index(rt).dirty
        rt.call("memory.remember_many", {"notes": notes(12, start=40)})
        live = answers(rt)
    with open_test_runtime(config=SNAP, path=db) as rt:  # the snapshot written at that close covers all 52
        assert snapshot_row(rt)[0][0] == 52 and not held_index(rt).dirty
        assert answers(rt) == live
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        rt.store.con.execute("DELETE FROM memory.index_snapshot")
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        assert answers(rt) == live


@pytest.mark.parametrize("spoil", ["stale", "settings", "corrupt", "flipped bit"])
def test_a_snapshot_that_does_not_match_is_ignored_and_the_index_rebuilt(tmp_path, spoil) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=SNAP, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(30)})
    config = SNAP
    if spoil == "stale":  # notes written by a runtime that never saves: the snapshot no longer covers them
        with open_test_runtime(config=NO_SNAP, path=db) as rt:
            rt.call("memory.remember_many", {"notes": notes(5, start=30)})
    elif spoil == "settings":
        config = copy.deepcopy(SNAP)
        config["packs"]["memory"]["bm25_k1"] = 2.0
    elif spoil == "corrupt":
        with open_test_runtime(config=NO_SNAP, path=db) as rt:
            rt.store.con.execute("UPDATE memory.index_snapshot SET data = 'not a numpy archive'::BLOB")
    else:  # one bit of a weight in the file beside the store: the archive still parses, its CRC-32 does not match
        from palimpsest_memory.packs.memory.engine.snapshot_io import HEAD
        (path,) = (tmp_path / "pal.duckdb.index").glob("*-1-*.bin")
        raw = bytearray(path.read_bytes())
        info = zipfile.ZipFile(io.BytesIO(bytes(raw[HEAD:]))).getinfo("tfs.npy")
        local = HEAD + info.header_offset
        start = local + 30 + int.from_bytes(raw[local + 26:local + 28], "little") + \
            int.from_bytes(raw[local + 28:local + 30], "little")
        raw[start + info.file_size - 1] ^= 0x40
        path.write_bytes(bytes(raw))
    with open_test_runtime(config=config, path=db) as rt:
        assert held_index(rt).dirty  # rebuilt, and will be saved again at close
        got = answers(rt)
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        rt.store.con.execute("DELETE FROM memory.index_snapshot")
    with open_test_runtime(config=config, path=db) as rt:
        assert answers(rt) == got


def test_small_stores_and_unchanged_indexes_write_no_snapshot(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=HASHING, path=db) as rt:  # default threshold: 5,000 notes
        rt.call("memory.remember_many", {"notes": notes(20)})
    with open_test_runtime(config=SNAP, path=db) as rt:
        assert snapshot_row(rt) == []
        assert rt.call("memory.save_index", {}, internal=True).saved  # rebuilt on open: dirty
        assert not rt.call("memory.save_index", {}, internal=True).saved  # nothing changed since


@pytest.mark.parametrize("broken", ["snapshot", "brain flush"])
def test_one_failing_close_hook_does_not_stop_the_others(tmp_path, monkeypatch, broken) -> None:
    """A plain pluggy hook call stops at the first exception, so Runtime.close runs each pack's close hook on its
    own: a failed snapshot still lets the brain write its buffered serves, and the reverse."""
    import palimpsest_memory.packs.brain.pack  # noqa: F401  # the pack module first: it imports its verb modules in order
    from palimpsest_memory.packs.brain import ledger
    from palimpsest_memory.packs.memory.engine.bm25 import BM25Index

    def fail(*args, **kwargs):  # type: ignore[no-untyped-def]  # a fault injected into our own code
        raise OSError("disk full")

    db = str(tmp_path / "pal.duckdb")
    rt = open_test_runtime(config=SNAP, path=db)
    rt.call("memory.remember_many", {"notes": notes(10)})
    recall_id = rt.call("memory.recall", {"query": "orion postgres"}).recall_id
    if broken == "snapshot":
        monkeypatch.setattr(BM25Index, "snapshot", fail)
    else:
        monkeypatch.setattr(ledger, "flush", fail)
    rt.close()
    monkeypatch.undo()
    with open_test_runtime(config=SNAP, path=db) as rt:
        served = rt.store.con.execute("SELECT count(*) FROM brain.serves WHERE recall_id = ?", [recall_id]).fetchone()
        assert (snapshot_row(rt) == []) == (broken == "snapshot")
        assert served == ((0,) if broken == "brain flush" else (1,))


# -- the vector leg's HNSW graph (vectors.py) is snapshotted beside BM25 ----------------------------------------
GRAPH = copy.deepcopy(SNAP)
GRAPH["packs"]["memory"]["vector_index"] = {"min_rows": 30}


def vector_answers(rt) -> dict:  # type: ignore[no-untyped-def]
    return {q: [(h.note.id, round(h.score, 12)) for h in rt.call(
        "memory.recall", {"query": q, "limit": 20, "now": T0.isoformat(), "fusion": "vector_only"}).results]
        for q in QUERIES}


def graph_rows(rt) -> list:  # type: ignore[no-untyped-def]
    return rt.store.con.execute("SELECT id, notes, max_id FROM memory.index_snapshot WHERE id >= 2 AND id < 1000"
                           ).fetchall()  # (1000 and up: the saved vectors)


def test_a_restart_restores_the_vector_graph_instead_of_building_it(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(80)}).ids
        assert held_index(rt).vectors["hashing"].has_graph
        before = vector_answers(rt)
    with open_test_runtime(config=GRAPH, path=db) as rt:
        vi = held_index(rt).vectors["hashing"]
        assert graph_rows(rt) == [(2, 80, ids[-1])]
        assert vi.has_graph and not vi.graph_dirty  # restored, not built
        assert vector_answers(rt) == before
        rt.call("memory.remember_many", {"notes": notes(10, start=80)})  # grows the restored graph
        after = vector_answers(rt)
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert graph_rows(rt) == [(2, 90, ids[-1] + 10)]
        assert vector_answers(rt) == after


def test_a_graph_of_other_vectors_or_settings_is_never_restored(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(60)})
    other = copy.deepcopy(GRAPH)
    other["packs"]["memory"]["vector_index"]["connectivity"] = 8
    with open_test_runtime(config=other, path=db) as rt:  # other graph settings: built again, saved at close
        assert held_index(rt).vectors["hashing"].graph_dirty
    with open_test_runtime(config=other, path=db) as rt:
        assert not held_index(rt).vectors["hashing"].graph_dirty
        rt.call("memory.reembed", {})
        # reembed replaces vectors without changing their count: the saved graph goes in the same transaction,
        # so a process that dies before its close cannot restore a graph of the old vectors
        assert graph_rows(rt) == []
        assert held_index(rt).vectors["hashing"].graph_dirty
    with open_test_runtime(config=other, path=db) as rt:
        assert len(graph_rows(rt)) == 1 and not held_index(rt).vectors["hashing"].graph_dirty


def test_the_vector_graph_snapshot_is_written_and_restored_on_both_backends(pal_backend, pal_store, tmp_path,
                                                                            caplog) -> None:
    # the graph's row was written with DuckDB-only SQL: on PostgreSQL every close failed and every open rebuilt
    db = pal_store() if pal_backend == "postgres" else str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(80)}).ids
        before = vector_answers(rt)
    assert "failed" not in caplog.text
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert graph_rows(rt) == [(2, 80, ids[-1])]
        assert not held_index(rt).vectors["hashing"].graph_dirty  # restored, not built
        assert vector_answers(rt) == before


# -- a snapshot that covers all but the newest few notes is kept, and the newer notes indexed on open (issue 18) --
def test_a_few_notes_after_the_snapshot_are_indexed_on_open_and_answer_as_live_and_as_a_rebuild(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(100)}).ids
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        assert not index.dirty
        rt.call("memory.remember_many", {"notes": notes(6, start=100)})  # 6 <= a tenth of 100: no rewrite at close
        rt.call("memory.archive", {"ids": [ids[5]]})
        live, live_vec = answers(rt), vector_answers(rt)
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        assert snapshot_row(rt, 999) == [(100, ids[-1]), (100, ids[-1])]  # BM25 and the graph: the first 100 notes
        assert vector_rows(rt) == [(100, ids[-1])]  # and the vectors
        vi = index.vectors["hashing"]
        assert len(index.bm25) == 106 and len(vi) == 106 and vi.has_graph
        assert index.dirty and index.saved_notes == 100 and vi.saved_rows == 100
        assert answers(rt) == live and vector_answers(rt) == live_vec
        digest = index_digest(held_index(rt))
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        rt.store.con.execute("DELETE FROM memory.index_snapshot")
    with open_test_runtime(config=NO_SNAP, path=db) as rt:  # rebuilt from the notes alone
        assert index_digest(held_index(rt)) == digest
        assert answers(rt) == live


def test_more_notes_than_a_tenth_after_the_snapshot_rewrite_it_at_close(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(100)})
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(5, start=100)})
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert [r[0] for r in snapshot_row(rt, 999) + vector_rows(rt)] == [100, 100, 100]
        rt.call("memory.remember_many", {"notes": notes(6, start=105)})  # now 11 past the snapshot
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert [r[0] for r in snapshot_row(rt, 999) + vector_rows(rt)] == [111, 111, 111]
        assert not held_index(rt).dirty


def test_an_edit_that_re_bags_old_notes_rewrites_the_snapshot_even_for_one_note(tmp_path) -> None:
    """Moving a thread-less note to another scope re-infers episodes (old notes' bags change): the stored snapshot
    is then no longer a prefix of the index and must be written again, whatever the number of notes."""
    db = str(tmp_path / "pal.duckdb")
    loose = [{"content": n["content"], "scope": n["scope"], "occurred_at": T0.isoformat()} for n in notes(60)]
    with open_test_runtime(config=SNAP, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": loose}).ids
    with open_test_runtime(config=SNAP, path=db) as rt:
        rt.call("memory.update", {"id": ids[10], "scope": "elsewhere"})
        assert not held_index(rt).appended_only
        live = answers(rt)
    with open_test_runtime(config=SNAP, path=db) as rt:
        assert not held_index(rt).dirty  # rewritten at that close, and restored whole
        assert answers(rt) == live


@pytest.mark.parametrize("spoil", ["count", "ids"])
def test_a_snapshot_naming_other_notes_is_detected_and_rebuilt(tmp_path, spoil) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(60)}).ids
        live, live_vec = answers(rt), vector_answers(rt)
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        if spoil == "count":  # says it covers one note more than the store holds up to its highest id
            rt.store.con.execute("UPDATE memory.index_snapshot SET notes = notes + 1")
        else:  # says it ends one note earlier: its content then holds a note the row does not name
            rt.store.con.execute("UPDATE memory.index_snapshot SET notes = notes - 1, max_id = ?", [ids[-2]])
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        assert index.dirty and index.saved_notes == 0 and index.vectors["hashing"].graph_dirty  # rebuilt
        assert answers(rt) == live and vector_answers(rt) == live_vec


def test_bm25_snapshot_round_trip_keeps_scores_and_allows_removal_after_restore() -> None:
    from palimpsest_memory.packs.memory.engine.bm25 import BM25Index
    texts = [" ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 6)) for i in range(50)]
    a = BM25Index()
    a.add(list(range(1, 51)), texts)
    a.remove([3, 7])
    a.add([9], ["orion orion vega"])  # replaced: a dead row and a new one
    b = BM25Index()
    b.restore(a.snapshot())
    for q in QUERIES:
        assert a.search(q, 20) == b.search(q, 20)
    assert a.digest() == b.digest()
    for idx in (a, b):  # a restored row's terms come back from the postings when first needed
        idx.remove([1, 2])
        idx.add([4], ["ferry dawn"])
    for q in QUERIES:
        assert a.search(q, 20) == b.search(q, 20)
    assert a.digest() == b.digest()
    snap = a.snapshot()
    snap["df"] = snap["df"][:-1]
    with pytest.raises(ValueError):
        BM25Index().restore(snap)


# -- the vectors are saved too, and a DuckDB store keeps snapshot bytes in files beside it (ADR 0025) --
def _matrix(rt):  # type: ignore[no-untyped-def]
    vi = held_index(rt).vectors["hashing"]
    ids, rows = vi.live_rows()
    return ids, vi.matrix_rows(rows)


def test_saved_vectors_are_bit_for_bit_the_vectors_read_from_the_table(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(80)})
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert [r[0] for r in vector_rows(rt)] == [80]
        vi = held_index(rt).vectors["hashing"]
        assert vi.vectors_saved == 80 and vi.vectors_appended  # restored
        ids, saved = _matrix(rt)
        before = vector_answers(rt)
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        rt.store.con.execute("DELETE FROM memory.index_snapshot WHERE id >= 1000")
    with open_test_runtime(config=NO_SNAP, path=db) as rt:  # read from the table and normalised on load
        ids2, read = _matrix(rt)
        assert np.array_equal(ids, ids2) and saved.tobytes() == read.tobytes()
        assert vector_answers(rt) == before


def test_snapshot_bytes_live_in_files_and_a_file_of_another_write_is_not_used(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes(80)})
        live, live_vec = answers(rt), vector_answers(rt)
    files = sorted((tmp_path / "pal.duckdb.index").glob("*.bin"))
    assert len(files) == 3  # BM25, the graph, the vectors; each row names its file
    with open_test_runtime(config=NO_SNAP, path=db) as rt:
        assert all(bytes(d).startswith(snapshot_io.MARK) for (d,) in
                   rt.store.con.execute("SELECT data FROM memory.index_snapshot").fetchall())
    for f in files:  # another write's file under the same name: its tag differs
        data = bytearray(f.read_bytes())
        data[len(snapshot_io.MARK)] ^= 0xFF
        f.write_bytes(bytes(data))
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        vi = index.vectors["hashing"]
        assert index.dirty and index.saved_notes == 0 and vi.graph_dirty and vi.vectors_saved == 0  # rebuilt
        assert answers(rt) == live and vector_answers(rt) == live_vec
    with open_test_runtime(config=GRAPH, path=db) as rt:  # saved again at that close, to new files
        assert not held_index(rt).dirty
        assert answers(rt) == live
    assert len(list((tmp_path / "pal.duckdb.index").glob("*"))) == 3


def test_forget_deletes_the_snapshot_files_with_their_rows(tmp_path) -> None:
    db = str(tmp_path / "pal.duckdb")
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes(80)}).ids
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert len(list((tmp_path / "pal.duckdb.index").glob("*.bin"))) == 3
        rt.call("memory.forget", {"ids": [ids[0]], "reason": "test"})
        assert list((tmp_path / "pal.duckdb.index").glob("*")) == []
        assert rt.store.con.execute("SELECT count(*) FROM memory.index_snapshot").fetchall() == [(0,)]


def test_the_graph_search_list_grows_with_the_graph() -> None:
    from palimpsest_memory.packs.memory.engine.vector_graph import Ann
    from palimpsest_memory.packs.memory.engine.vectors import VectorIndex
    rng = np.random.default_rng(1)
    vi = VectorIndex(16, ann=Ann(min_rows=50, expansion_search=64, rows_per_expansion=2))
    vi.add(np.arange(1, 401), rng.normal(size=(400, 16)).astype(np.float32))
    assert vi.has_graph and vi.graph.expansion() == 400 // 2
    vi.search(rng.normal(size=16).astype(np.float32), 30)  # asks the graph for 60 rows
    assert vi.graph.current.expansion_search == 200  # set on the graph before it is searched
    vi.search(rng.normal(size=16).astype(np.float32), 5)  # 10 rows: no longer than 6 x 10, nor below 64
    assert vi.graph.current.expansion_search == 64 and vi.graph.expansion(20) == 6 * 20
    assert VectorIndex(16, ann=Ann(min_rows=50, expansion_search=64, rows_per_expansion=0)).graph.expansion() == 64

"""Snapshot files are mapped, not read: the BM25 archive's arrays are views of its file (npz_arrays), which the
index keeps for the postings, as it keeps the vectors' and, until it changes, the graph's; the reader the
archive's directory is read through behaves as a file."""
import copy
import gc
import io
from pathlib import Path

import numpy as np
import pytest
from store_support import HASHING, T0

from index_support import held_index
import zipfile

from palimpsest_memory.packs.memory.engine.snapshot_io import BufferReader, npz_arrays
from palimpsest_memory.runtime.testing import open_test_runtime

GRAPH = copy.deepcopy(HASHING)
GRAPH["packs"]["memory"]["index_snapshot_min_notes"] = 1
GRAPH["packs"]["memory"]["vector_index"] = {"min_rows": 30}


def test_buffer_reader_reads_an_npz_as_bytesio_does() -> None:
    rng = np.random.default_rng(3)
    arrays = {"small": np.arange(7, dtype=np.int32), "big": rng.standard_normal(200_000).astype(np.float32),
              "empty": np.zeros(0, dtype=np.int64)}
    out = io.BytesIO()
    np.savez(out, **arrays)
    raw = out.getvalue()
    with np.load(BufferReader(memoryview(raw))) as z:
        got = {k: z[k] for k in z.files}
    assert set(got) == set(arrays) and all(np.array_equal(got[k], v) and got[k].dtype == v.dtype
                                           for k, v in arrays.items())
    r = BufferReader(memoryview(b"0123456789"))
    assert r.read(3) == b"012" and r.tell() == 3
    assert r.seek(-2, io.SEEK_END) == 8 and r.read() == b"89" and r.read(5) == b""
    assert r.seek(-5, io.SEEK_CUR) == 5 and r.read(2) == b"56"
    with pytest.raises(ValueError, match="negative"):
        r.seek(-1)


def test_npz_arrays_are_np_load_s_arrays_without_a_copy_and_a_flipped_bit_fails_its_crc() -> None:
    rng = np.random.default_rng(5)
    arrays = {"ids": np.arange(1000, dtype=np.int64), "tfs": rng.random(70_001).astype(np.float32),
              "grid": np.asfortranarray(rng.random((30, 7))), "empty": np.zeros(0, dtype=np.int32),
              "vocab": np.frombuffer("ferry\nharbour\nkö".encode(), dtype=np.uint8), "one": np.array([2.5])}
    out = io.BytesIO()
    np.savez(out, **arrays)
    raw = bytearray(out.getvalue())
    got = npz_arrays(memoryview(raw))
    with np.load(io.BytesIO(bytes(raw))) as z:
        assert set(got) == set(z.files) == set(arrays)
        for k in arrays:
            assert got[k].dtype == z[k].dtype and got[k].shape == z[k].shape and np.array_equal(got[k], z[k])
    assert np.shares_memory(got["tfs"], np.frombuffer(raw, dtype=np.uint8))  # a view of the buffer, not a copy
    del got
    raw[len(raw) // 3] ^= 0x10  # inside the largest member
    with pytest.raises(zipfile.BadZipFile, match="CRC"):
        npz_arrays(memoryview(raw))
    packed = io.BytesIO()
    np.savez_compressed(packed, a=np.arange(10))
    with pytest.raises(zipfile.BadZipFile, match="stored"):
        npz_arrays(memoryview(packed.getvalue()))
    objects = io.BytesIO()
    np.savez(objects, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match="object"):
        npz_arrays(memoryview(objects.getvalue()))


def mapped_files(folder: Path) -> set[str]:
    """The files of ``folder`` this process maps (Linux's /proc/self/maps)."""
    return {line.split()[-1].rsplit("/", 1)[-1] for line in Path("/proc/self/maps").read_text().splitlines()
            if str(folder) in line}


def test_a_restore_maps_the_vectors_and_the_graph_copies_the_rest_and_answers_as_before(tmp_path) -> None:
    """After a reopen the vectors file stays mapped (the index adopts it), the BM25 file too (each term's postings
    are read where they lie, what is appended waiting in a tail), and the graph's while it has not changed: a few newer
    vectors are its tail, searched beside it. Writes past a tenth of the graph copy it into memory of its own (the
    tail inserted) and let its file go; the postings a write appends to a term wait in that term's tail, its view
    kept. A reopen answers exactly as the store did, before and after those writes."""
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc/self/maps (Linux) to see what the process maps")
    db = str(tmp_path / "pal.duckdb")
    words = ["harbour", "crane", "ferry", "dawn", "budget", "orion", "vega", "sofa"]
    notes = [{"content": f"{words[i % 8]} {words[(i * 3) % 8]} note {i}", "thread": f"t{i % 5}"} for i in range(90)]
    queries = ["harbour crane", "ferry at dawn", "orion budget"]

    def answers(rt, fusion: str) -> list:  # type: ignore[no-untyped-def]
        return [[(h.note.id, round(h.score, 12)) for h in rt.call(
            "memory.recall", {"query": q, "limit": 20, "now": T0.isoformat(), "fusion": fusion}).results]
            for q in queries]

    extra = {"content": "harbour crane ferry at dawn", "thread": "t9"}
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes})
        live = answers(rt, "keyword_only"), answers(rt, "vector_only")
    folder = tmp_path / "pal.duckdb.index"
    names = {p.name.split("-")[1]: p.name for p in folder.glob("*.bin")}
    assert sorted(names) == ["1", "1000", "2"]  # BM25, the vectors, the graph
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        vi = index.vectors["hashing"]
        assert not index.dirty and not vi.graph_dirty  # both restored, not rebuilt
        assert (answers(rt, "keyword_only"), answers(rt, "vector_only")) == live
        assert mapped_files(folder) == {names["1000"], names["2"], names["1"]}
        assert vi.graph.viewed
        postings = index.bm25.postings
        assert len(postings) and all(map(postings.viewed, range(len(postings))))  # every term's where the file lies
        new_id = rt.call("memory.remember", {"content": extra["content"], "thread": extra["thread"]}).note.id
        assert mapped_files(folder) == {names["1000"], names["2"], names["1"]}  # one newer vector: the graph's tail
        assert vi.graph.viewed and vi.graph.tail is not None and not vi.graph_dirty
        harbour = postings.vocab[index.bm25.query_terms("harbour")[0]]
        assert postings.viewed(harbour)  # a term appended to: still its file's view,
        assert len(postings.tail(harbour)[0]) == 1  # the new posting in its tail
        assert new_id in [i for i, _ in vi.search(vi.get(new_id), 5)]
        tailed = answers(rt, "keyword_only"), answers(rt, "vector_only")
    del index, postings, vi, rt  # the closed store (and the graph file its index views) goes with them
    gc.collect()
    # the close kept the saved graph (it covers all but one vector): the reopen views it again, with the same tail
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert (answers(rt, "keyword_only"), answers(rt, "vector_only")) == tailed
        vi = held_index(rt).vectors["hashing"]
        assert vi.graph.viewed and vi.graph.tail is not None
        assert mapped_files(folder) == {names["1000"], names["2"], names["1"]}
        more = [{"content": f"orion vega more {i}", "thread": "t8"} for i in range(9)]
        rt.call("memory.remember_many", {"notes": more})  # ten newer vectors: past a tenth of the graph's 90
        assert not vi.graph.viewed and vi.graph.tail is None and vi.graph_dirty and len(vi.graph.hnsw) == 100
        assert names["2"] not in mapped_files(folder)  # its own copy now
        after = answers(rt, "keyword_only"), answers(rt, "vector_only")
    del vi, rt
    gc.collect()
    # the close saved the graph again (past the rule): the reopen views it whole
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert (answers(rt, "keyword_only"), answers(rt, "vector_only")) == after
        vi = held_index(rt).vectors["hashing"]
        assert vi.graph.viewed and vi.graph.tail is None and len(vi.graph.hnsw) == 100
        assert {n.split("-")[1] for n in mapped_files(folder)} == {"1", "1000", "2"}


def test_a_forget_leaves_no_snapshot_file_mapped_not_even_a_deleted_one(tmp_path) -> None:
    """A reopened index reads its vectors, graph and postings where their files lie; memory.forget deletes those
    files (ADR 0018), and a file a process still maps keeps its bytes on disk, deleted or not, while the mapping
    lives. So the forget gives every one of them a copy of its own first: no line of /proc/self/maps names the
    index's folder afterwards, and the store answers without the note."""
    if not Path("/proc/self/maps").exists():
        pytest.skip("needs /proc/self/maps (Linux) to see what the process maps")
    db = str(tmp_path / "pal.duckdb")
    words = ["harbour", "crane", "ferry", "dawn", "budget", "orion", "vega", "sofa"]
    notes = [{"content": f"{words[i % 8]} {words[(i * 3) % 8]} note {i}", "thread": f"t{i % 5}"} for i in range(90)]
    with open_test_runtime(config=GRAPH, path=db) as rt:
        ids = rt.call("memory.remember_many", {"notes": notes}).ids
    folder = tmp_path / "pal.duckdb.index"

    def mapping_lines() -> list[str]:
        return [line for line in Path("/proc/self/maps").read_text().splitlines() if str(folder) in line]

    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        assert len(mapping_lines()) >= 3  # vectors, graph, postings
        rt.call("memory.forget", {"ids": [ids[0]], "reason": "asked to"})
        assert mapping_lines() == []
        hits = rt.call("memory.recall", {"query": notes[0]["content"], "limit": 20, "now": T0.isoformat()}).results
        assert hits and ids[0] not in [h.note.id for h in hits]
        assert index.vectors["hashing"].search(index.vectors["hashing"].get(ids[1]), 1)[0][0] == ids[1]


def test_a_store_saved_with_float32_vectors_reads_them_from_the_table_once_and_saves_them_as_held(tmp_path) -> None:
    # ADR 0030: the vectors' snapshot format 1 held float32 rows; a store saved so must not map them as float16
    import duckdb
    db = str(tmp_path / "pal.duckdb")
    notes = [{"content": f"note {i} about {['harbour', 'ferry', 'orion'][i % 3]}"} for i in range(60)]
    with open_test_runtime(config=GRAPH, path=db) as rt:
        rt.call("memory.remember_many", {"notes": notes})
        live = [[(h.note.id, h.score) for h in rt.call("memory.recall", {
            "query": q, "fusion": "vector_only", "now": T0.isoformat()}).results] for q in ("harbour", "orion")]
    con = duckdb.connect(db)
    (sig,), = con.execute("SELECT signature FROM memory.index_snapshot WHERE id = 1000").fetchall()
    assert '"format": 2' in sig
    con.execute("UPDATE memory.index_snapshot SET signature = ? WHERE id = 1000", [sig.replace('"format": 2',
                                                                                              '"format": 1')])
    con.close()
    with open_test_runtime(config=GRAPH, path=db) as rt:
        index = held_index(rt)
        assert index.dirty and not isinstance(index.vectors["hashing"].rows.mat, np.memmap)  # read from the table
        again = [[(h.note.id, h.score) for h in rt.call("memory.recall", {
            "query": q, "fusion": "vector_only", "now": T0.isoformat()}).results] for q in ("harbour", "orion")]
        assert again == live
    con = duckdb.connect(db)
    (sig,), = con.execute("SELECT signature FROM memory.index_snapshot WHERE id = 1000").fetchall()
    con.close()
    assert '"format": 2' in sig  # saved again, as held
    with open_test_runtime(config=GRAPH, path=db) as rt:
        assert isinstance(held_index(rt).vectors["hashing"].rows.mat, np.memmap)

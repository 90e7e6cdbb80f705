"""A damaged index snapshot file is detected, logged, never used, and rebuilt from the tables (issue 46, F6).

Zeroed rows of the vectors file took vector-only recall from 25/25 to 0/25 with no error, and flipped bytes of a
graph file degraded results silently. Each file's CRC-32 is now written in its row: a reopen over a damaged file
answers exactly as a fresh build from the tables does (the snapshot folder deleted), warns, does not map the file,
and saves good files at close. Temporary files a killed close left in the folder are removed at open.
"""
from __future__ import annotations

import copy
import gc
import logging
import shutil
from pathlib import Path

import pytest
from store_support import HASHING, T0

from palimpsest_memory.packs.memory.engine.snapshot_io import HEAD
from palimpsest_memory.runtime.testing import open_test_runtime

pytestmark = pytest.mark.duckdb_only  # the files beside a DuckDB store

GRAPH = copy.deepcopy(HASHING)
GRAPH["packs"]["memory"]["index_snapshot_min_notes"] = 1
GRAPH["packs"]["memory"]["vector_index"] = {"min_rows": 30}
WORDS = ["harbour", "crane", "ferry", "dawn", "budget", "orion", "vega", "sofa"]
QUERIES = ["harbour crane", "ferry at dawn", "orion budget", "vega sofa note 7"]


def answers(rt) -> list:  # type: ignore[no-untyped-def]
    return [[(h.note.id, round(h.score, 9)) for h in rt.call(
        "memory.recall", {"query": q, "limit": 20, "now": T0.isoformat(), "fusion": fusion}).results]
        for q in QUERIES for fusion in ("keyword_only", "vector_only")]


def mapped(folder: Path) -> set[str]:
    with open("/proc/self/maps") as f:
        return {Path(line.split()[-1]).name for line in f if str(folder) in line}


@pytest.fixture
def store(tmp_path) -> tuple[Path, list]:  # type: ignore[no-untyped-def]
    """A store whose close wrote all three snapshot files, and the answers of a fresh build from its tables."""
    db = tmp_path / "pal.duckdb"
    with open_test_runtime(config=GRAPH, path=str(db)) as rt:
        rt.call("memory.remember_many", {"notes": [
            {"content": f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} note {i}", "thread": f"t{i % 5}"} for i in range(90)]})
    fresh_copy = tmp_path / "fresh"
    fresh_copy.mkdir()
    shutil.copy(db, fresh_copy / "pal.duckdb")  # no .index folder beside it: everything built from the tables
    with open_test_runtime(config=GRAPH, path=str(fresh_copy / "pal.duckdb")) as rt:
        fresh = answers(rt)
    return db, fresh


def file_of_row(db: Path, row: str) -> Path:
    (path,) = [p for p in Path(f"{db}.index").glob("*.bin") if p.name.split("-")[1] == row]
    return path


def zero_vector_rows(path: Path) -> None:
    with open(path, "r+b") as f:  # the head, two counts, 90 ids, then the rows: zero the first forty rows
        f.seek(HEAD + 16 + 8 * 90)
        f.write(bytes(40 * 2 * 256))


def flip_bytes(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        for at in range(HEAD + 64, size, max(1, size // 50)):
            f.seek(at)
            b = f.read(1)
            f.seek(at)
            f.write(bytes([b[0] ^ 0xFF]))


DAMAGE = {"vectors: rows zeroed": ("1000", zero_vector_rows), "graph: bytes flipped": ("2", flip_bytes),
          "full text: bytes flipped": ("1", flip_bytes)}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_snapshot_file_is_rebuilt_from_the_tables_and_never_used(store, caplog, case) -> None:  # type: ignore[no-untyped-def]
    db, fresh = store
    row, damage = DAMAGE[case]
    damaged = file_of_row(db, row)
    damage(damaged)
    with caplog.at_level(logging.WARNING):
        with open_test_runtime(config=GRAPH, path=str(db)) as rt:
            assert answers(rt) == fresh  # as if built from the tables
            assert damaged.name not in mapped(damaged.parent)  # never used
            assert any("damaged" in r.getMessage() and damaged.name in r.getMessage() for r in caplog.records)
    del rt
    gc.collect()
    assert not damaged.exists()  # the close saved that snapshot again, to a new file
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        with open_test_runtime(config=GRAPH, path=str(db)) as rt:
            assert answers(rt) == fresh
            assert file_of_row(db, row).name in mapped(damaged.parent)  # the saved file is used again
    assert not [r for r in caplog.records if "damaged" in r.getMessage()]


def test_an_undamaged_snapshot_is_used_without_a_warning(store, caplog) -> None:  # type: ignore[no-untyped-def]
    db, fresh = store
    names = {p.name for p in Path(f"{db}.index").glob("*.bin")}
    with caplog.at_level(logging.WARNING):
        with open_test_runtime(config=GRAPH, path=str(db)) as rt:
            assert answers(rt) == fresh
            assert mapped(Path(f"{db}.index")) == names  # all three restored from their files
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_temporary_files_a_killed_close_left_are_removed_at_open(store) -> None:  # type: ignore[no-untyped-def]
    db, fresh = store
    folder = Path(f"{db}.index")
    left = [folder / "0123456789abcdef-1-00ff.bin.tmp", folder / "0123456789abcdef-1000-0aff.bin.tmp"]
    for p in left:
        p.write_bytes(b"\0" * 4096)
    copy_left = db.with_name(db.name + ".erase-copy")
    copy_left.write_bytes(b"erased text still here")
    kept = [folder / "notes.txt"]  # not ours to judge: left alone
    kept[0].write_text("mine")
    with open_test_runtime(config=GRAPH, path=str(db)) as rt:
        assert answers(rt) == fresh
    assert not any(p.exists() for p in left) and not copy_left.exists()
    assert all(p.exists() for p in kept)


def test_files_of_the_first_format_are_used_and_saved_again_with_a_crc(store) -> None:  # type: ignore[no-untyped-def]
    """A store saved before the CRC-32 (rows and files marked LEGACY) is not rebuilt on upgrade: its files are
    used as before, and the close saves each snapshot again with its CRC-32."""
    import duckdb

    from palimpsest_memory.packs.memory.engine.snapshot_io import LEGACY, MARK

    db, fresh = store
    con = duckdb.connect(str(db))
    rows = con.execute("SELECT namespace, id, data FROM memory.index_snapshot").fetchall()
    for ns, row_id, data in rows:  # back to the first format: no CRC-32 in the row, the old marker in both
        data = bytes(data)
        legacy = LEGACY + data[len(MARK):HEAD + 8] + data[HEAD + 12:]
        con.execute("UPDATE memory.index_snapshot SET data = ? WHERE namespace = ? AND id = ?", [legacy, ns, row_id])
        path = Path(f"{db}.index") / data[HEAD + 12:].decode()
        with open(path, "r+b") as f:
            f.write(LEGACY)
    con.close()
    with open_test_runtime(config=GRAPH, path=str(db)) as rt:
        from index_support import held_index

        index = held_index(rt)
        assert index.saved_notes == 90  # the full text restored, not rebuilt
        assert answers(rt) == fresh
    con = duckdb.connect(str(db), read_only=True)
    saved = [bytes(d) for (d,) in con.execute("SELECT data FROM memory.index_snapshot").fetchall()]
    con.close()
    assert saved and all(d.startswith(MARK) for d in saved)

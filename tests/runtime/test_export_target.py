"""`pal export FILE` never overwrites by surprise (issue 46, F7): an existing FILE only with --force, and the store
itself or any of its side files never, --force or not; a refusal is a typed error and leaves every file as it was."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pal(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST__packs__memory__embedder="hashing", COLUMNS="200",
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db",
                           str(tmp / "s.duckdb"), "--json", *args], capture_output=True, text=True, env=env,
                          cwd=str(tmp), timeout=300)


def error_of(proc: subprocess.CompletedProcess[str]) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    body = json.loads(proc.stdout or proc.stderr)
    assert body["ok"] is False
    return body["error"]


def digest(folder: Path) -> dict[str, str]:
    """Every file under the folder (the store and all its side files) by content."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("export_target")
    assert pal(tmp, "memory", "remember", "the grey heron waits by the weir").returncode == 0
    db = tmp / "s.duckdb"
    # every kind of file a store keeps beside itself, present (a server's announcement, an index snapshot, a
    # backup; the WAL is made empty: DuckDB replays any bytes in it at open)
    (tmp / "s.duckdb.server.json").write_text('{"pid": 0}', encoding="utf-8")
    (tmp / "s.duckdb.wal").touch()
    (tmp / "s.duckdb.index").mkdir(exist_ok=True)
    (tmp / "s.duckdb.index" / "vectors.bin").write_bytes(b"\1" * 64)
    (tmp / "s.duckdb.backups").mkdir()
    (tmp / "s.duckdb.backups" / "monday.duckdb").write_bytes(db.read_bytes())
    os.symlink(db, tmp / "link.duckdb")
    os.link(db, tmp / "hard.duckdb")
    return tmp


OWN = [("s.duckdb", "the store itself"), ("link.duckdb", "the store itself"), ("hard.duckdb", "the store itself"),
       ("./sub/../s.duckdb", "the store itself"), ("s.duckdb.wal", "write-ahead log"),
       ("s.duckdb.server.json", "server announcement"), ("s.duckdb.index/vectors.bin", "index snapshots"),
       ("s.duckdb.index/new.bin", "index snapshots"), ("s.duckdb.backups/monday.duckdb", "backups"),
       ("s.duckdb.backups/tuesday.jsonl", "backups")]


@pytest.mark.parametrize("force", [False, True], ids=["plain", "force"])
@pytest.mark.parametrize("name, what", OWN, ids=[o[0] for o in OWN])
def test_export_never_writes_the_store_or_its_side_files(store, name, what, force) -> None:  # type: ignore[no-untyped-def]
    (store / "sub").mkdir(exist_ok=True)
    before = digest(store)
    proc = pal(store, "export", name, *(["--force"] if force else []))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = error_of(proc)
    assert err["code"] == "invalid_params" and what in err["message"], err
    assert digest(store) == before  # nothing written, not even a temporary file
    recalled = pal(store, "memory", "recall", "heron")
    assert "grey heron" in recalled.stdout, recalled.stdout + recalled.stderr


def test_an_existing_file_is_replaced_only_with_force(store) -> None:  # type: ignore[no-untyped-def]
    other = store / "notes.txt"
    other.write_text("my own notes\n", encoding="utf-8")
    before = digest(store)
    proc = pal(store, "export", "notes.txt")
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    err = error_of(proc)
    assert err["code"] == "conflict" and "--force" in err["message"]
    assert digest(store) == before
    proc = pal(store, "export", "notes.txt", "--force")
    assert proc.returncode == 0, proc.stderr
    lines = other.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["format"] == "palimpsest-export" and json.loads(lines[-1])["end"] is True
    assert not [p for p in store.iterdir() if p.name.endswith(".part")]  # the temporary file is gone


def test_a_new_file_is_written_and_a_folder_refused(store) -> None:  # type: ignore[no-untyped-def]
    proc = pal(store, "export", "fresh.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["records"] > 0 and (store / "fresh.jsonl").is_file()
    (store / "folder").mkdir()
    proc = pal(store, "export", "folder", "--force")
    assert proc.returncode == 2 and "folder" in error_of(proc)["message"]


def test_a_name_that_only_starts_like_the_store_is_not_its_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime.storage import store_file_of

    db = tmp_path / "s.duckdb"
    assert store_file_of(str(db), tmp_path / "s.duckdb.jsonl") is None  # a user's natural name for the export
    assert store_file_of(str(db), tmp_path / "s.duckdb.index2" / "x") is None
    assert store_file_of(str(db), tmp_path / "other" / "s.duckdb") is None
    assert store_file_of("postgresql://u@h/db", tmp_path / "s.duckdb") is None


def test_the_store_named_by_the_configuration_is_refused_as_the_store(store) -> None:  # type: ignore[no-untyped-def]
    """Without --db (the database comes from the configuration) the store is known once it is open: the refusal
    still names it as the store, not as a file --force could replace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST__packs__memory__embedder="hashing", PYTHONPATH=str(ROOT),
               PALIMPSEST__runtime__database=str(store / "s.duckdb"))
    before = digest(store)
    proc = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", "export",
                           "s.duckdb"], capture_output=True, text=True, env=env, cwd=str(store), timeout=300)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "the store itself" in error_of(proc)["message"]
    assert digest(store) == before

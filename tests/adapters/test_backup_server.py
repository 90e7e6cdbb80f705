"""`pal backup` while `pal serve` holds the database (issue 17, item 5; ADR 0018): the copy goes through the
server, is consistent (every write the server acknowledged is in it), and `pal restore` brings it back."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from conftest import ServerProcess, child_env, run_cli  # noqa: E402

from palimpsest_memory.runtime.adapters.remote import RemoteClient  # noqa: E402

HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}


def test_backup_through_a_running_server_and_restore(tmp_path):
    db = tmp_path / "held.duckdb"
    env = child_env(**HASHING)
    server = ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                      "serve", "--port", "0"])
    try:
        for i in range(5):
            proc = run_cli("--server", server.url, "memory", "remember", f"kingfisher sighting number {i}", env=env)
            assert proc.returncode == 0, proc.stderr
        proc = run_cli("--db", str(db), "backup", str(tmp_path / "bk.duckdb"), env=env)  # held: names the server
        assert proc.returncode == 6 and "--server" in proc.stderr
        proc = run_cli("--server", server.url, "--json", "backup", str(tmp_path / "bk.duckdb"), env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["path"] == str(tmp_path / "bk.duckdb")
        proc = run_cli("--server", server.url, "backup", str(tmp_path / "bk.duckdb"), env=env)
        assert proc.returncode == 4, proc.stderr  # never overwrites
        proc = run_cli("--server", server.url, "memory", "remember", "written after the backup", env=env)
        assert proc.returncode == 0, proc.stderr
    finally:
        server.stop()
    restored = tmp_path / "restored.duckdb"
    proc = run_cli("--db", str(restored), "restore", str(tmp_path / "bk.duckdb"), env=env)
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("--db", str(restored), "--json", "memory", "count", env=env)
    assert json.loads(proc.stdout)["count"] == 5, proc.stdout + proc.stderr
    proc = run_cli("--db", str(restored), "restore", str(tmp_path / "nope.duckdb"), env=env)
    assert proc.returncode == 3


def test_export_and_import_through_a_running_server(tmp_path):
    """`pal --server URL export FILE` and `… import palimpsest FILE`: the server that holds the database reads and
    writes it (GET /v1/export, POST /v1/import); a bad file is refused whole, with nothing written."""
    env = child_env(**HASHING)

    def serve(db):  # type: ignore[no-untyped-def]
        return ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli",
                                                        "--db", str(db), "serve", "--port", "0"])

    out = tmp_path / "team.jsonl"
    server = serve(tmp_path / "held.duckdb")
    try:
        for i in range(4):
            proc = run_cli("--server", server.url, "-n", "team", "memory", "remember", f"heron at the pond {i}",
                           env=env)
            assert proc.returncode == 0, proc.stderr
        proc = run_cli("--server", server.url, "-n", "team", "export", str(out), env=env)
        assert proc.returncode == 0, proc.stderr
    finally:
        server.stop()
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["namespace"] == "team" and sum(1 for r in lines if r.get("type") == "note") == 4
    server = serve(tmp_path / "other.duckdb")  # ids are kept: an export goes to another store
    try:
        broken = tmp_path / "broken.jsonl"
        broken.write_text("\n".join(out.read_text(encoding="utf-8").splitlines()[:-1]) + "\n", encoding="utf-8")
        proc = run_cli("--server", server.url, "import", "palimpsest", str(broken), env=env)
        assert proc.returncode != 0  # truncated (no end line): refused before anything is written
        proc = run_cli("--server", server.url, "-n", "team", "--json", "memory", "count", env=env)
        assert json.loads(proc.stdout)["count"] == 0, proc.stdout
        proc = run_cli("--server", server.url, "--json", "import", "palimpsest", str(out), env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["memory"]["note"] == 4
        proc = run_cli("--server", server.url, "-n", "team", "--json", "memory", "recall", "heron pond", env=env)
        assert len(json.loads(proc.stdout)["results"]) == 4
        again = run_cli("--server", server.url, "import", "palimpsest", str(out), env=env)
        assert again.returncode != 0  # the namespace is no longer empty: refused
    finally:
        server.stop()


def test_a_backup_and_a_restore_leave_the_servers_hold_on_the_file(tmp_path):
    """Issue 46, F1: the backup copied the file by opening and closing it, which dropped the server's POSIX lock
    (a process loses every lock on a file when it closes any descriptor of it): a CLI write then landed beside the
    server, which reused its note id (an acknowledged write lost). F3: `pal restore --force` replaced the file
    under the running server, which went on acknowledging writes into the unlinked file."""
    db = tmp_path / "held.duckdb"
    env = child_env(**HASHING)
    server = ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                      "serve", "--port", "0"])
    try:
        proc = run_cli("--server", server.url, "memory", "remember", "before the backup", env=env)
        assert proc.returncode == 0, proc.stderr
        proc = run_cli("--server", server.url, "backup", str(tmp_path / "bk.duckdb"), env=env)
        assert proc.returncode == 0, proc.stderr
        beside = run_cli("--db", str(db), "memory", "remember", "written beside the server", env=env)
        assert beside.returncode == 6 and "held" in beside.stderr, beside.stderr
        restore = run_cli("--db", str(db), "restore", "--force", str(tmp_path / "bk.duckdb"), env=env)
        assert restore.returncode == 6 and "held" in restore.stderr, restore.stderr
        proc = run_cli("--server", server.url, "memory", "remember", "after the backup", env=env)
        assert proc.returncode == 0, proc.stderr
        proc = run_cli("--server", server.url, "--json", "memory", "list", env=env)
        assert sorted(n["content"] for n in json.loads(proc.stdout)["notes"]) == ["after the backup",
                                                                                  "before the backup"]
    finally:
        server.stop()
    proc = run_cli("--db", str(db), "--json", "memory", "count", env=env)  # the file the server wrote holds both
    assert json.loads(proc.stdout)["count"] == 2, proc.stdout + proc.stderr


POLLER = """
import sys, time, duckdb
path, stop = sys.argv[1], sys.argv[2]
import os
won = tries = 0
while not os.path.exists(stop):
    tries += 1
    try:
        duckdb.connect(path).close()
        won += 1
    except duckdb.Error:
        pass
    time.sleep(0.001)
print(won, tries)
"""


def test_a_forget_s_rewrite_goes_on_beside_a_process_that_keeps_opening_the_file(tmp_path):
    """Issue 46, F2: the rewrite after a forget closed the connection (releasing the lock), copied, swapped and
    reopened; a process opening the store every 2 ms won it at the first try, the forget answered 500 and the
    server said "the runtime is closed" from then on. Now the file is held through the copy and the swap; only
    DuckDB's own reopen (open, close, open, lock) leaves it unheld for microseconds, and an opener that passes
    through then is waited out. A poller opens the file every millisecond while the server forgets three times:
    every forget answers, and the server goes on."""
    db = tmp_path / "held.duckdb"
    env = child_env(**HASHING)
    server = ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                      "serve", "--port", "0"])
    stop = tmp_path / "stop"
    poller = subprocess.Popen([sys.executable, "-c", POLLER, str(db), str(stop)], env=env, stdout=subprocess.PIPE,
                              text=True)
    try:
        client = RemoteClient(server.url)
        ids = [client.call("memory.remember", {"content": f"secret number {i}"})["note"]["id"] for i in range(3)]
        for note_id in ids:
            client.call("memory.forget", {"reason": "test", "ids": [note_id]})
        client.call("memory.remember", {"content": "after the forgets"})
        assert client.call("memory.count", {})["count"] == 1
    finally:
        stop.write_text("")
        won, tries = map(int, poller.communicate(timeout=60)[0].split())
        server.stop()
    assert tries > 0, "the poller never ran"  # (how often it got in, in the reopen windows, depends on the load)
    assert b"secret number" not in db.read_bytes()

"""`pal backup` while `pal serve` holds the database (issue 17, item 5; ADR 0018): the copy goes through the
server, is consistent (every write the server acknowledged is in it), and `pal restore` brings it back."""
from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from conftest import ServerProcess, child_env, run_cli  # noqa: E402

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

"""Forget on PostgreSQL (issue 17 item 3; ADR 0018): once memory.forget commits, the erased text is in no file of the
cluster's data directory but the WAL — the runtime prunes the change log and runs VACUUM (FULL) over the packs'
tables from the same post-commit hook as DuckDB's file rewrite (runtime/compact.py). The WAL keeps the text until
PostgreSQL removes the segment; the operator step ADR 0018 documents (wal_recycle = off, pg_switch_wal(),
CHECKPOINT) is tested here too."""
from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest_memory.runtime.testing import open_test_runtime

HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
SECRET = b"Oxbridge-5521-Valparaiso"


def files_holding(folder: Path, needle: bytes) -> list[str]:
    out = []
    for f in folder.rglob("*"):
        try:
            if f.is_file() and needle in f.read_bytes():
                out.append(str(f.relative_to(folder)))
        except OSError:  # a file removed while we walk
            continue
    return out


def admin(server, sql: str) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as con:
        con.execute(sql)


def test_forgotten_text_leaves_the_postgres_data_files(pal_postgres) -> None:
    url = pal_postgres.fresh()
    data = Path(pal_postgres.data_dir)
    rt = open_test_runtime(config=HASHING, discover=True, path=url)
    try:
        for i in range(20):
            rt.call("memory.remember", {"content": f"ordinary note {i} about the tides", "thread": "t"})
        text = f"{SECRET.decode()} is the safe word of the harbour master, keep it"
        sid = rt.call("memory.remember", {"content": text, "thread": "t", "tags": ["safe"]}).note.id
        rt.call("memory.update", {"id": sid, "salience": 0.8})  # an audit row and a dead tuple of the note
        rt.call("memory.recall", {"query": "safe word harbour"})  # a serve that holds it
        rt.call("brain.flush_serves", {}, internal=True)
        admin(pal_postgres, "CHECKPOINT")
        before = files_holding(data, SECRET)
        assert any(f.startswith("base/") for f in before), before  # the test can fail: the text is in the tables
        rt.call("memory.forget", {"ids": [sid], "reason": "asked"})
        assert rt.call("memory.get", {"ids": [sid]}).missing == [sid]
        changes = rt.store.con.execute("SELECT count(*) FROM _palimpsest.changes").fetchone()[0]
        assert changes == 0  # the change log (which carried the text) was pruned through its head
        admin(pal_postgres, "CHECKPOINT")
        left = [f for f in files_holding(data, SECRET) if not f.startswith("pg_wal/")]
        assert left == [], left  # no table, TOAST, index or free-space page holds it
        assert rt.call("memory.recall", {"query": "tides"}).results  # the store still works after the rewrite
        new = rt.call("memory.remember", {"content": "after the vacuum"}).note.id
        assert new > sid
    finally:
        rt.close()
        pal_postgres.drop(url)
    # The WAL: the inserts' records hold the text until PostgreSQL drops their segment. With wal_recycle on (the
    # default) an old segment is renamed for reuse and keeps its bytes until overwritten; the operator step of
    # ADR 0018 — wal_recycle = off, then pg_switch_wal() and CHECKPOINT — unlinks it.
    wal = [f for f in files_holding(data, SECRET) if f.startswith("pg_wal/")]
    if not wal:
        pytest.skip("the WAL no longer held the text (a segment switch happened): nothing to show for the WAL step")
    admin(pal_postgres, "ALTER SYSTEM SET wal_recycle = off")
    admin(pal_postgres, "SELECT pg_reload_conf()")
    try:
        for _ in range(2):
            admin(pal_postgres, "SELECT pg_switch_wal()")
            admin(pal_postgres, "CHECKPOINT")
        assert files_holding(data / "pg_wal", SECRET) == []
    finally:
        admin(pal_postgres, "ALTER SYSTEM RESET wal_recycle")
        admin(pal_postgres, "SELECT pg_reload_conf()")

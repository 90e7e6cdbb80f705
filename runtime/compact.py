"""Rewrite the store file so that deleted rows leave its bytes (ADR 0018).

DuckDB deletes a row by marking it; a checkpoint writes the surviving rows to new blocks, but the blocks it frees
keep their old bytes until something reuses them (measured: a deleted note's text is still in the file after
DELETE + CHECKPOINT, and after closing). Forgetting must not leave the text behind, so after a call that erased
data (``ctx.erase_from_file()``) the runtime checkpoints, copies the database into a fresh file with DuckDB's
own ``COPY FROM DATABASE`` (tables, sequences with their values, views, indexes), swaps it in, and reopens.
The copy holds only live rows: free blocks are not copied. While it runs the runtime's lock is held, so no other
call sees the store half-swapped.

On PostgreSQL (:func:`vacuum_erased`) a DELETE or UPDATE leaves the old tuple's bytes in its page; plain VACUUM
only marks that space reusable (the bytes stay until a later write lands on them), so the runtime runs
``VACUUM (FULL)`` — a rewrite of each table, its TOAST table and indexes into new files, the old files truncated
at commit — over every table of the loaded packs' schemas and the change log, after pruning the change log
(its rows carry the changes' data, note text included). WAL segments are PostgreSQL's: see ADR 0018.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from palimpsest_memory.runtime import storage
from palimpsest_memory.runtime.errors import Conflict, InvalidParams, StorageError

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest.runtime")


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")


def copy_database(src: Path, dst: Path) -> None:
    """Copy the closed database ``src`` into the new file ``dst`` (live rows only)."""
    for stale in (dst, Path(f"{dst}.wal")):
        stale.unlink(missing_ok=True)
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"ATTACH '{_quote(src)}' AS pal_src (READ_ONLY)")
        con.execute(f"ATTACH '{_quote(dst)}' AS pal_dst")
        con.execute("COPY FROM DATABASE pal_src TO pal_dst")
        con.execute("DETACH pal_dst")
        con.execute("DETACH pal_src")
    finally:
        con.close()


def compact(rt: "Runtime") -> float:
    """Checkpoint, rewrite and reopen the runtime's store file; returns the seconds it took (0 in memory)."""
    if rt.path == ":memory:" or rt._con is None:
        return 0.0
    if storage.dialect_of(rt._con) == "postgres":
        return vacuum_erased(rt)
    start = time.perf_counter()
    path = Path(rt.path).expanduser()
    tmp = path.with_name(path.name + ".compact")
    rt._con.execute("CHECKPOINT")
    rt._con.close()
    rt._con = None
    failure: Exception | None = None
    try:
        copy_database(path, tmp)
        os.replace(tmp, path)
        Path(f"{path}.wal").unlink(missing_ok=True)  # the checkpoint emptied it; the copy has none
    except (duckdb.Error, OSError) as exc:
        failure = exc
        tmp.unlink(missing_ok=True)
    rt._con = storage.connect(path, checkpoint_threshold=rt.config.get("runtime", {}).get("checkpoint_threshold"))
    storage.seal(rt._con)
    took = time.perf_counter() - start
    if failure is not None:
        raise StorageError(f"the data was erased, but the store file could not be rewritten ({failure}); "
                           "its bytes may still hold it until the next forget or compaction",
                           details={"path": str(path)})
    log.info("store file rewritten after an erase in %.2f s", took)
    return took


def vacuum_erased(rt: "Runtime") -> float:
    """PostgreSQL: make erased rows leave the database files (the DuckDB rewrite's counterpart; ADR 0018).

    1. The change log is pruned through its head (the horizon moves there): its rows hold what packs recorded,
       e.g. a remembered note's text. A process whose mirrors are behind the horizon loads them again, as after
       any pruning; it loses nothing.
    2. ``VACUUM (FULL)`` of every table in the loaded packs' schemas and of the change log, outside a transaction.
       Which tables a forget touched is not known here (its events reach other packs, which delete their own
       rows), and statistics such as ``n_dead_tup`` cannot tell — a plain VACUUM, manual or automatic, zeroes the
       counter but leaves the dead tuples' bytes in the page — so every table that may hold a dead tuple is
       rewritten. Each VACUUM FULL holds an ACCESS EXCLUSIVE lock on its table while it copies it: other
       processes' calls wait for that long. A lock that cannot be had within ``lock_timeout`` (30 s) fails the
       rewrite, not the forget (the erase is committed): the call says so."""
    from palimpsest_memory.runtime import changelog

    con = rt._con
    start = time.perf_counter()
    schemas = sorted(rt.catalog.packs) + [storage.META_SCHEMA]
    try:
        changelog.prune(con, None)  # the log's rows carry the erased change data too
        tables = [f'"{s}"."{t}"' for s, t in con.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = ANY(?::VARCHAR[]) "
            "ORDER BY schemaname, tablename", [schemas]).fetchall()]
        con.execute("SET lock_timeout = '30s'")
        try:
            for table in tables:  # one statement each: a failure names its table
                con.execute(f"VACUUM (FULL) {table}")
        finally:
            con.execute("RESET lock_timeout")
    except storage.DB_ERRORS as exc:
        raise StorageError(f"the data was erased, but VACUUM FULL could not rewrite the tables ({exc}); the "
                           "erased bytes may stay in the database files until the next forget or VACUUM FULL",
                           details={"store": storage.describe(rt.path)}) from None
    took = time.perf_counter() - start
    log.info("%d tables rewritten (VACUUM FULL) after an erase in %.2f s", len(tables), took)
    return took


BACKUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")


def backup_path(rt: "Runtime", name: str) -> Path:
    """Where ``memory.backup`` writes: ``<database>.backups/<name>`` beside the store (a caller over HTTP names a
    file, never a path, so a server writes nowhere else)."""
    if rt.path == ":memory:":
        raise InvalidParams("an in-memory store has no file to back up")
    if not BACKUP_NAME.match(name):
        raise InvalidParams(f"backup name {name!r} must be a file name: letters, digits, '.', '_', '-'",
                            details={"errors": [{"loc": ["name"], "msg": "not a file name"}]})
    db = Path(rt.path).expanduser()
    path = db.with_name(db.name + ".backups") / name
    if path.exists():
        raise Conflict(f"backup {path} exists: choose another name", details={"path": str(path)})
    return path


def backup(rt: "Runtime", dest: str) -> None:
    """Checkpoint (the WAL is then empty) and copy the store file, under the runtime's lock: no write can land
    between the two, so the copy is the committed store as of this moment."""
    target = Path(dest)
    target.parent.mkdir(parents=True, exist_ok=True)
    rt._con.execute("CHECKPOINT")
    tmp = target.with_name(target.name + ".part")
    try:
        shutil.copyfile(Path(rt.path).expanduser(), tmp)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise StorageError(f"backup to {target} failed: {exc}", details={"path": str(target)}) from None

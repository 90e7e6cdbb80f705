"""What the runtime does after a call that erased data or asked for a backup (ADR 0018); the store does the work.

After a forget (``ctx.erase_from_file()``) the deleted rows' bytes must leave the store's files: the store rewrites
itself (``Store.erase_bytes``: a file is copied into a fresh one and swapped in, a database's tables are rewritten),
under the runtime's lock, so no other call sees it half-done (ADR 0031: the store seam).

A forget marks the rewrite as owed in its own transaction (``_palimpsest.erase_pending``), and the mark goes only
once the rewrite is done: a process that dies between the commit and the rewrite (issue 46, F4) leaves the mark,
and the next process that opens the store (and may write) does the rewrite before anything else.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from palimpsest_memory.runtime.errors import Conflict, InvalidParams, StorageError

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest.runtime")
PENDING = "_palimpsest.erase_pending"
PENDING_DDL = f"CREATE TABLE {PENDING} (requested_at TIMESTAMP NOT NULL)"
BACKUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")


def ensure_table(con: Any) -> None:
    """Create the mark's table when it is missing (only then: a role that may not create opens the store)."""
    schema, name = PENDING.split(".")
    if not con.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
                       [schema, name]).fetchone()[0]:
        con.execute(PENDING_DDL)


def mark(con: Any, now: Any) -> None:
    """In an erasing call's transaction: the rewrite is owed from the moment the erase commits."""
    con.execute(f"INSERT INTO {PENDING} VALUES (?)", [now])


def erase_bytes(rt: "Runtime") -> float:
    """Rewrite the store so erased rows leave its files, then clear the mark; returns the seconds it took."""
    if rt.store is None:
        return 0.0
    took = rt.store.erase_bytes(sorted(rt.catalog.packs))
    rt.store.con.execute(f"DELETE FROM {PENDING}")
    return took


def resume(rt: "Runtime") -> float:
    """At open: the rewrite a process owed when it died (its forget committed, its rewrite never ran)."""
    store = rt.store
    if store is None or not store.writable or not store.con.execute(f"SELECT count(*) FROM {PENDING}").fetchone()[0]:
        return 0.0
    log.warning("an erase committed before the store was last closed was not rewritten out of its files: "
                "rewriting now")
    return erase_bytes(rt)


def backup_path(rt: "Runtime", name: str) -> Path:
    """Where ``memory.backup`` writes: the store's backup folder (``<file>.backups/<name>`` beside a file); a caller
    over HTTP names a file, never a path, so a server writes nowhere else."""
    if rt.store is None:
        raise StorageError("the runtime is closed")
    folder = rt.store.backup_folder()
    if not BACKUP_NAME.match(name):
        raise InvalidParams(f"backup name {name!r} must be a file name: letters, digits, '.', '_', '-'",
                            details={"errors": [{"loc": ["name"], "msg": "not a file name"}]})
    path = folder / name
    if path.exists():
        raise Conflict(f"backup {path} exists: choose another name", details={"path": str(path)})
    return path

"""What the runtime does after a call that erased data or asked for a backup (ADR 0018); the store does the work.

After a forget (``ctx.erase_from_file()``) the deleted rows' bytes must leave the store's files: the store rewrites
itself (``Store.erase_bytes``: a file is copied into a fresh one and swapped in, a database's tables are rewritten),
under the runtime's lock, so no other call sees it half-done (ADR 0031: the store seam).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING

from palimpsest_memory.runtime.errors import Conflict, InvalidParams, StorageError

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest.runtime")
BACKUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,120}$")


def erase_bytes(rt: "Runtime") -> float:
    """Rewrite the store so erased rows leave its files; returns the seconds it took (0 when nothing to do)."""
    if rt.store is None:
        return 0.0
    return rt.store.erase_bytes(sorted(rt.catalog.packs))


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

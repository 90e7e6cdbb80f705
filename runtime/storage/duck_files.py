"""The files a DuckDB store keeps beside its own (issue 46): what each is, so that no command the user points at a
path writes over one (``pal export``, F7), and which ones a killed process leaves half-written, removed when the
store next opens.

Beside ``s.duckdb``: ``s.duckdb.wal`` (DuckDB's write-ahead log), ``s.duckdb.server.json`` (a running server's
announcement, written through ``s.duckdb.server.json.<pid>.tmp``), ``s.duckdb.index/`` (the memory pack's index
snapshots, written through ``*.tmp`` names), ``s.duckdb.backups/`` (``memory.backup``), and while a forget's
rewrite or a restore runs, ``s.duckdb.erase-copy``, ``s.duckdb.compact`` and ``s.duckdb.restore``.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("palimpsest.runtime")
INFO_SUFFIX = ".server.json"
SIDE_FILES = {".wal": "its write-ahead log", INFO_SUFFIX: "its server announcement", ".erase-copy": "a rewrite's copy",
              ".compact": "a rewrite's copy", ".restore": "a restore's copy"}
SIDE_FOLDERS = {".index": "its index snapshots", ".backups": "its backups"}
# written only by the process that holds the store (a forget's rewrite): at open, any found are a dead writer's
REWRITE_COPIES = (".erase-copy", ".erase-copy.wal", ".compact", ".compact.wal")


def resolve(target: str) -> str:
    """The file's absolute path (``~`` expanded), or ``:memory:``."""
    return target if target == ":memory:" else str(Path(target).expanduser().resolve())


def store_file_of(location: str, path: str | Path) -> str | None:
    """What ``path`` is to the store file ``location`` ("the store itself", "its write-ahead log", ...), or None
    when it is none of its files. A path is compared after resolving links, and by inode when it exists (a hard
    link to the store is the store), so no spelling of the store's name slips through."""
    store = Path(resolve(location))
    target = Path(resolve(str(path)))
    if target == store or _same_file(target, store):
        return "the store itself"
    for suffix, what in SIDE_FILES.items():
        side = Path(f"{store}{suffix}")
        if target == side or _same_file(target, side):
            return what
    if target.name.startswith(f"{store.name}{INFO_SUFFIX}.") and target.parent == store.parent:
        return "its server announcement"  # the announcement's temporary file
    for suffix, what in SIDE_FOLDERS.items():
        if target.is_relative_to(Path(f"{store}{suffix}")):
            return what
    return None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # either does not exist
        return False


def clean_leftovers(location: str) -> None:
    """Delete what a killed process left half-written beside the store file ``location``, which the caller now
    holds: index snapshot temporaries (``.index/*.tmp``: a disk that filled during a close's snapshot write left
    ~1 GB at 1M notes for good) and a rewrite's copies (``.erase-copy`` holds the very bytes a forget erased)."""
    base = Path(location)
    leftovers = [base.with_name(base.name + suffix) for suffix in REWRITE_COPIES]
    index = Path(location + ".index")
    if index.is_dir():
        leftovers += sorted(index.glob("*.tmp"))
    for path in leftovers:
        try:
            if path.is_file():
                path.unlink()
                log.warning("removed %s, left by a process that stopped while writing it", path)
        except OSError as exc:  # not ours to remove after all (permissions): say so, open anyway
            log.warning("could not remove %s: %s", path, exc)

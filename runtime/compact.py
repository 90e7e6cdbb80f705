"""Rewrite the store file so that deleted rows leave its bytes (ADR 0018).

DuckDB deletes a row by marking it; a checkpoint writes the surviving rows to new blocks, but the blocks it frees
keep their old bytes until something reuses them (measured: a deleted note's text is still in the file after
DELETE + CHECKPOINT, and after closing). Forgetting must not leave the text behind, so after a call that erased
data (``ctx.erase_from_file()``) the runtime checkpoints, copies the database into a fresh file with DuckDB's
own ``COPY FROM DATABASE`` (tables, sequences with their values, views, indexes), swaps it in, and reopens.
The copy holds only live rows: free blocks are not copied. While it runs the runtime's lock is held, so no other
call sees the store half-swapped.
"""
from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from runtime import storage
from runtime.errors import StorageError

if TYPE_CHECKING:
    from runtime.engine import Runtime

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

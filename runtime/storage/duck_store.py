"""The embedded store: one DuckDB file (or ``:memory:``), written by this process alone (ADR 0004, ADR 0031).

Only this process writes, so the change log is the last commit's changes, numbered in memory; no lock is taken in
the database (the runtime's own lock serialises calls); a server announces itself in ``<file>.server.json``.

Erasing (ADR 0018): DuckDB deletes a row by marking it; a checkpoint writes the surviving rows to new blocks, but
the blocks it frees keep their old bytes until something reuses them. After a call that erased data the store
checkpoints, copies the database into a fresh file with DuckDB's own ``COPY FROM DATABASE`` (live rows only),
swaps it in and reopens, under the runtime's lock.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Iterator

import duckdb

from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.storage import duck
from palimpsest_memory.runtime.storage.duck_files import INFO_SUFFIX, clean_leftovers, resolve, store_file_of
from palimpsest_memory.runtime.storage.store import Row, Store, server_record

log = logging.getLogger("palimpsest.runtime")
REOPEN_TRIES, REOPEN_PAUSE = 400, 0.005  # ~2 s of retries to reopen a rewritten file a passing process opened


class DuckStore(Store):
    backend = "duckdb"

    def __init__(self, target: str, *, checkpoint_threshold: str | None = None) -> None:
        self.location = resolve(target)
        self._checkpoint_threshold = checkpoint_threshold
        self.con = duck.connect(self.location, checkpoint_threshold=checkpoint_threshold)
        self._fd = self._hold_fd()
        if not self.in_memory:  # held now: anything half-written beside the file is a dead writer's
            clean_leftovers(self.location)
        self._sealed = False
        self._seq = 0
        self._last: list[Row] = []  # the last commit's changes: the followers read them when they cannot take
        # them from memory (a reload asked for)

    def _hold_fd(self) -> int | None:
        """A descriptor of the store file held open while the store is, to read it for backups (issue 46, F1).

        DuckDB's lock on the file is a POSIX lock, and POSIX drops every lock a process holds on a file when the
        process closes *any* descriptor of that file: a backup that opened and closed the file released the lock,
        and a second process could then open and write the store beside this one. This descriptor is closed only
        with the store (or swapped for the new file's after a rewrite), when giving up the lock is meant."""
        return None if self.in_memory else os.open(self.location, os.O_RDWR)

    def _let_go_fd(self) -> None:
        if getattr(self, "_fd", None) is not None:
            os.close(self._fd)
            self._fd = None

    @property
    def in_memory(self) -> bool:
        return self.location == ":memory:"

    @property
    def reached_through_holder(self) -> bool:  # type: ignore[override]
        return not self.in_memory  # (nobody else can reach a :memory: store at all)

    def describe(self) -> dict[str, Any]:
        size = None
        if not self.in_memory:
            size = sum(p.stat().st_size for p in (Path(self.location), Path(self.location + ".wal")) if p.exists())
            index = Path(self.location + ".index")
            if index.is_dir():
                size += sum(f.stat().st_size for f in index.iterdir() if f.is_file())
        return {"backend": self.backend, "location": self.location, "size_bytes": size,
                "server": f"DuckDB {duckdb.__version__} (embedded)"}

    def files_beside(self, suffix: str) -> Path | None:
        return None if self.in_memory else Path(self.location + suffix)

    def owns_file(self, path: str | Path) -> str | None:
        return None if self.in_memory else store_file_of(self.location, path)

    # -- commit and the change log (this process's own, in memory) -------------------------------------------
    def commit(self, began: bool, changes: list[tuple[str, str, str, Any]], origin: str) -> list[int]:
        if began:
            self.con.execute("COMMIT")
        seqs = list(range(self._seq + 1, self._seq + 1 + len(changes)))
        if changes:
            self._seq = seqs[-1]
            self._last = [(s, p, ns, k, None, origin) for s, (p, ns, k, _) in zip(seqs, changes)]
        return seqs

    def head(self) -> int:
        return self._seq

    def changes_after(self, seq: int) -> tuple[int, list[Row]]:
        return 0, [r for r in self._last if r[0] > seq]

    # -- opening and closing ---------------------------------------------------------------------------------
    def seal(self) -> None:
        duck.seal(self.con)
        self._sealed = True

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        self._let_go_fd()

    # -- rewriting and backups -------------------------------------------------------------------------------
    def erase_bytes(self, schemas: list[str]) -> float:
        """Rewrite the file with live rows only and reopen it; returns the seconds it took (0 in memory).

        The file stays held through the copy and the swap (issue 46, F2: the rewrite used to close the connection,
        releasing the lock, then copy, swap and reopen, and a process opening the store every 2 ms won it at the
        first try). DuckDB will not open a file twice in one process, so the checkpointed file is first copied byte
        for byte through the descriptor the store holds; that copy is rewritten into a new file (``COPY FROM
        DATABASE``: free blocks, where erased bytes lie, are not copied); the new file is locked by this process
        before it takes the store's name, and only then is the old connection closed and the new file opened
        (:meth:`_reopen_held` says what DuckDB's own reopen leaves unheld, for microseconds)."""
        if self.in_memory or self.con is None:
            return 0.0
        start = time.perf_counter()
        path = Path(self.location)
        raw, tmp = path.with_name(path.name + ".erase-copy"), path.with_name(path.name + ".compact")
        self.con.execute("CHECKPOINT")
        held: int | None = None
        try:
            copy_from_fd(self._fd, raw)
            copy_database(raw, tmp)
            held = os.open(tmp, os.O_RDWR)
            fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)  # the whole file, as DuckDB's own lock
            os.replace(tmp, path)
        except (duckdb.Error, OSError) as exc:
            if held is not None:
                os.close(held)
            tmp.unlink(missing_ok=True)
            raise StorageError(f"the data was erased, but the store file could not be rewritten ({exc}); its bytes "
                               "may still hold it until the next forget or compaction", details={"path": str(path)})
        finally:
            for leftover in (raw, Path(f"{raw}.wal")):  # the byte copy holds the erased bytes too
                leftover.unlink(missing_ok=True)
        self.con.close()
        self.con = None
        self._let_go_fd()
        Path(f"{path}.wal").unlink(missing_ok=True)  # the checkpoint emptied it; the new file has none
        self.con = self._reopen_held(path, held)
        if self._sealed:  # (a rewrite owed from before, run while the store opens, comes before the seal)
            duck.seal(self.con)
        self._fd = held  # the new file's lock stays with the descriptor the store reads backups through
        took = time.perf_counter() - start
        log.info("store file rewritten after an erase in %.2f s", took)
        return took

    def _reopen_held(self, path: Path, held: int) -> Any:
        """Open the rewritten file, which ``held`` locks. DuckDB opens a file, closes it and opens it again before
        it locks it (strace: open O_RDONLY, close, open O_RDWR, F_SETLK), and that close drops every POSIX lock this
        process holds on the file: for those microseconds another process can take it. One that only looked (a
        connect and close) is waited out: the lock is taken again and the open retried. One that keeps it fails the
        call after ``REOPEN_TRIES`` with a typed error naming it; its writes went to this file, the store's, so no
        acknowledged write is lost (the old rewrite left the file unheld for the whole copy)."""
        failure: StorageError | None = None
        for _ in range(REOPEN_TRIES):
            try:
                fcntl.lockf(held, fcntl.LOCK_EX | fcntl.LOCK_NB, 0, 0)
                return duck.connect(path, checkpoint_threshold=self._checkpoint_threshold)
            except OSError:
                pass  # another process holds it for now
            except StorageError as exc:
                failure = exc
                if (exc.details or {}).get("reason") != "locked":
                    break
            time.sleep(REOPEN_PAUSE)
        os.close(held)
        raise failure or StorageError(f"database {path} was taken by another process while it was rewritten",
                                      details={"path": str(path), "reason": "locked"})

    def backup_folder(self) -> Path:
        if self.in_memory:
            return super().backup_folder()
        return Path(self.location + ".backups")

    def backup(self, dest: str) -> None:
        """Checkpoint (the WAL is then empty) and copy the file: no write can land between the two (the runtime's
        lock is held), so the copy is the committed store as of this moment."""
        if self.in_memory:
            self.backup_folder()  # raises: nothing to copy
        target = Path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.con.execute("CHECKPOINT")
        tmp = target.with_name(target.name + ".part")
        try:
            copy_from_fd(self._fd, tmp)  # never open (and so close) the store file itself: see _hold_fd
            os.replace(tmp, target)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"backup to {target} failed: {exc}", details={"path": str(target)}) from None

    # -- server discovery: <file>.server.json ---------------------------------------------------------------
    def announce(self, kind: str, url: str | None, *, api: str | None = None,
                 token: str | None = None) -> contextlib.AbstractContextManager[None]:
        return announce_file(self.location, kind, url, api=api, token=token)


def copy_from_fd(fd: int, dst: Path) -> None:
    """Copy the whole file behind ``fd`` into the new file ``dst`` without moving ``fd``'s offset or closing it."""
    size = os.fstat(fd).st_size
    with open(dst, "wb") as out:
        done = 0
        while done < size:
            chunk = os.pread(fd, min(8 << 20, size - done), done)
            if not chunk:
                break
            out.write(chunk)
            done += len(chunk)
        out.flush()
        os.fsync(out.fileno())


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


def restore_file(source: Path, target: Path) -> None:
    """Replace the store file ``target`` with a copy of the backup ``source``. While it is replaced, ``target`` is
    held open read-only: a process that holds it (a server, a host app) makes this fail as locked, instead of
    going on writing into a file that is no longer there (its acknowledged writes would be lost)."""
    held = None
    if target.exists():
        try:
            held = duckdb.connect(str(target), read_only=True)
        except duckdb.Error as exc:
            locked = "lock" in str(exc).lower()
            raise StorageError(f"database {target} is held by another process: stop it before restoring"
                               if locked else f"cannot open {target} to replace it: {exc}",
                               details={"path": str(target), **({"reason": "locked"} if locked else {})}) from None
    tmp = target.with_name(target.name + ".restore")
    try:
        copy_database(source, tmp)
        os.replace(tmp, target)
        Path(f"{target}.wal").unlink(missing_ok=True)
    finally:
        tmp.unlink(missing_ok=True)
        if held is not None:
            held.close()


def _quote(path: Path) -> str:
    return str(path).replace("'", "''")


def info_path(target: str) -> Path | None:
    return None if target == ":memory:" else Path(resolve(target) + INFO_SUFFIX)


@contextlib.contextmanager
def announce_file(target: str, kind: str, url: str | None, *, api: str | None = None,
                  token: str | None = None) -> Iterator[None]:
    """Write ``<file>.server.json`` while serving; remove it on exit (only if it is still ours). The file is
    readable by its owner only: it may hold the token of a ``pal mcp``'s sharing endpoint (ADR 0037), which lets
    this user's other processes in, as the store file itself does.

    The write sits inside the ``try``: a stop signal that lands between the file appearing and the ``with`` body
    starting still removes it (a class's ``__exit__`` does not run when its ``__enter__`` is interrupted)."""
    path = info_path(target)
    tmp = None if path is None else path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        if path is not None and tmp is not None:  # (both or neither)
            record = server_record(kind, url, resolve(target))
            record.update({k: v for k, v in (("api", api), ("token", token)) if v})
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with open(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(record, indent=2))
            os.replace(tmp, path)
        yield
    finally:
        if path is not None and tmp is not None:
            current = read_info(path)
            if current is not None and current.get("pid") == os.getpid():
                path.unlink(missing_ok=True)
            tmp.unlink(missing_ok=True)


def read_info(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, TypeError, ValueError):
        return True  # exists but not ours, or unreadable: do not claim it is gone
    return True


def live_servers(target: str) -> list[dict[str, Any]]:
    """The server that announced itself beside the file, if its process is alive."""
    info = read_info(info_path(target))
    return [info] if info is not None and _alive(info.get("pid")) else []

"""The store seam (ADR 0031): everything that differs between a DuckDB file and a PostgreSQL database, behind one
class. The runtime, its followers and every adapter hold a :class:`Store` and never ask which backend it is.

A store owns:
- its name as it may be shown (:attr:`location`: a path, ``:memory:``, or a URL without secrets) and what
  ``pal info`` says of it (:meth:`describe`);
- the connection (:attr:`con`, wrapped per call by :class:`~palimpsest_memory.runtime.storage.base.Database`),
  transactions, snapshot reads (:meth:`snapshot`) and locks (:meth:`lock_for_write`, :meth:`lock_shared`);
- commit with the change log (:meth:`commit`, :meth:`changes_after`, :meth:`head`): on a file, only this process
  writes, so its log is the last commit's changes, in memory; on PostgreSQL, a table every process reads;
- following other processes (:meth:`follow`) and how fresh this process's view is (:meth:`read_at`);
- reconnecting (the PostgreSQL connection comes back by itself, with backoff);
- making erased bytes leave the files (:meth:`erase_bytes`), backups (:meth:`backup`);
- server discovery: where a running server announces itself (:meth:`announce`) and where a client finds one
  (:func:`live_servers`, without opening the store).
"""
from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Mapping, Protocol, Sequence

from palimpsest_memory.runtime.storage.base import DB_ERRORS, META_SCHEMA, rollback_quietly


class WriteFrame(Protocol):
    """What the store needs of a writing call: whether its transaction began, the locks it holds."""

    began: bool
    locked: set[str]


Row = tuple[int, str, str, str, Any, str]  # (seq, pack, namespace, kind, data, origin) of the change log


class Store:
    """One open store. Made by :func:`open_store`; closed by :meth:`close`."""

    backend: ClassVar[str] = ""
    con: Any = None  # the open connection: verbs reach it through a Database handle, tools and tests directly
    writable: bool = True  # False for a read-only database role: it reads, and leaves log and key pruning to others
    location: str = ""  # printable: a path, ":memory:", or a URL without credentials
    # True when only the process that opened the store can use it (a DuckDB file): other processes reach it through
    # a server that process runs (``pal serve``, or a ``pal mcp`` sharing it: ADR 0037)
    reached_through_holder: bool = False

    # -- naming -----------------------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """What ``pal info`` shows: backend, location (no secrets), size in bytes (None if unknown), server."""
        raise NotImplementedError

    def files_beside(self, suffix: str) -> Path | None:
        """A folder beside the store's file for derived data (``<file><suffix>``), None when there is no file."""
        return None

    def owns_file(self, path: str | Path) -> str | None:
        """What ``path`` is to this store if it is one of its own files (the store, its WAL, its index snapshots,
        its backups, ...), else None: a command that writes a file the user names must never write these."""
        return None

    # -- transactions ---------------------------------------------------------------------------------------
    def begin(self, *, read_only: bool) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def rollback_quietly(self) -> None:
        if self.con is not None:
            rollback_quietly(self.con)

    SNAPSHOT = "BEGIN TRANSACTION"  # how a snapshot read begins on this backend

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[int]:
        """A read-only transaction whose reads all see one state, and the change log's head in that state."""
        self.con.execute(self.SNAPSHOT)
        try:
            yield self.head()
        finally:
            self.rollback_quietly()

    def lock_for_write(self, frame: WriteFrame, locks: Sequence[tuple[str, str, str]]) -> bool:
        """Take each ``(label, kind, name)`` lock ``frame`` does not hold yet, until its transaction ends.

        Returns True when locks were taken in the database (the frame's transaction then began, and the caller
        catches up with what other processes committed before they were granted); False when this process is the
        only writer (its own lock already serialises calls)."""
        frame.locked.update(label for label, _, _ in locks)
        return False

    def lock_shared(self, kind: str, name: str) -> None:
        """A shared lock on ``name`` until the transaction ends (readers of a namespace being loaded)."""

    # -- commit and the change log ---------------------------------------------------------------------------
    def commit(self, began: bool, changes: list[tuple[str, str, str, Any]], origin: str) -> list[int]:
        """Commit (if ``began``) with ``changes`` logged in the same transaction; returns their sequence numbers."""
        raise NotImplementedError

    def head(self) -> int:
        """The newest committed change's sequence number."""
        raise NotImplementedError

    def changes_after(self, seq: int) -> tuple[int, list[Row]]:
        """``(horizon, rows after seq)``: a process whose ``seq`` is behind the horizon (pruned) reloads instead."""
        raise NotImplementedError

    def decode(self, data: Any) -> Any:
        """Another process's change data, as it was recorded (only a shared store has any)."""
        raise NotImplementedError

    def prepare(self, codec: Any, change_log_hours: float) -> None:
        """After migrations: how change data travels (``codec``) and how long the log keeps it."""

    def follow(self, wake: Callable[..., object], idle: Callable[[], bool] | None = None) -> None:
        """Call ``wake()`` whenever another process may have committed (nothing to do when none can); ``wake(n)``
        when it knows that commit's last sequence number ``n``; ``idle()`` between commits, while it returns True
        (the mirrors' deferred work, ``Mirror.idle``)."""

    def unfollow(self) -> None:
        """Stop following other processes (their commits then arrive only with a catch-up: a write's lock, a
        strong read, the staleness bound)."""

    def read_at(self) -> float:
        """``time.monotonic()`` of the last successful read of the change log: how fresh this process's view is.
        A store only this process writes is always fresh."""
        return time.monotonic()

    # -- opening and closing --------------------------------------------------------------------------------
    def seal(self) -> None:
        """The mirrors are loaded: lock down what SQL may change."""

    def opened(self) -> None:
        """The runtime finished opening (migrations, mirror loads)."""

    def close(self) -> None:
        raise NotImplementedError

    def grants(self, role: str, schemas: list[str], *, read_only: bool) -> list[str]:
        """The statements that let ``role`` open this store (read-write, or read-only)."""
        from palimpsest_memory.runtime.errors import InvalidParams

        raise InvalidParams(f"a {self.backend} store has no database roles: who may open {self.location} is "
                            "decided by the file's permissions")

    # -- rewriting, backups, servers ------------------------------------------------------------------------
    def erase_bytes(self, schemas: list[str]) -> float:
        """After a committed erase: rewrite so the deleted rows' bytes leave the files. Returns the seconds."""
        return 0.0

    def backup_folder(self) -> Path:
        """Where ``memory.backup`` writes named backups."""
        from palimpsest_memory.runtime.errors import InvalidParams

        raise InvalidParams(f"a {self.backend} store at {self.location} has no file to back up")

    def backup(self, dest: str) -> None:
        """A consistent copy of the whole store at ``dest`` (called under the runtime's lock)."""
        raise NotImplementedError

    def announce(self, kind: str, url: str | None, *, api: str | None = None,
                 token: str | None = None) -> contextlib.AbstractContextManager[None]:
        """While the block runs, a client looking for this store's server finds this process (see
        :func:`live_servers`). ``api``/``token``: where another process of this user calls the verbs, when it is
        not ``url`` (a ``pal mcp`` that shares the file it holds; ADR 0037)."""
        return contextlib.nullcontext()


def server_record(kind: str, url: str | None, database: str) -> dict[str, Any]:
    """The announcement of one server: who, what kind, where, since when."""
    import os
    import socket

    return {"pid": os.getpid(), "host": socket.gethostname(), "kind": kind, "url": url, "database": database,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def reachable_from_here(server: Mapping[str, Any]) -> bool:
    """A server announced by another host is reachable only at a non-loopback URL."""
    import socket
    from urllib.parse import urlsplit

    if server.get("host") in (None, socket.gethostname()):
        return True
    try:
        host = urlsplit(str(server.get("url") or "")).hostname or ""
    except ValueError:
        return False
    return host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127.")


__all__ = ["DB_ERRORS", "META_SCHEMA", "Row", "Store", "WriteFrame", "reachable_from_here", "server_record"]

"""The shared store: a PostgreSQL database written by many processes on many hosts (ADR 0016, ADR 0031).

- Locks: a writing call takes its namespace's transaction advisory lock (and any named lock), then catches up with
  the change log, so it starts from the newest state.
- The change log (``_palimpsest.changes``): each commit logs its changes in its own transaction, numbered in commit
  order under the commit lock, and notifies ``palimpsest_changes``; followers read the rows after the last one they
  applied (:mod:`palimpsest_memory.runtime.storage.pg_follow` wakes them).
- Servers announce themselves in ``_palimpsest.servers`` with a heartbeat, so ``pal mcp`` on any host finds the
  team's ``pal serve``.
- Erasing (ADR 0018): the log is pruned through its head, then ``VACUUM (FULL)`` rewrites every table that may
  hold an erased tuple's bytes.
"""
from __future__ import annotations

import contextlib
import logging
import re
import time
import uuid
from typing import Any, Callable, Iterator, Mapping, Sequence

from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.storage import postgres
from palimpsest_memory.runtime.storage.base import DB_ERRORS, META_SCHEMA
from palimpsest_memory.runtime.storage.pg_follow import ChangeListener, Heartbeat
from palimpsest_memory.runtime.storage.store import Row, Store, WriteFrame, server_record

log = logging.getLogger("palimpsest.runtime")
TABLE = f"{META_SCHEMA}.changes"
HORIZON = f"{META_SCHEMA}.change_horizon"
SERVERS = f"{META_SCHEMA}.servers"
LIVE_SECONDS = 30.0  # a server whose heartbeat is older than this is taken for gone


class PgStore(Store):
    backend = "postgres"
    SNAPSHOT = "BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY"

    def __init__(self, url: str, env: Mapping[str, str]) -> None:
        self._url = url
        self._secrets = postgres.secrets_of(url, env)
        self.location = postgres.redact(url)
        self.con = postgres.connect(url, env)
        try:
            self.writable = bool(self.con.execute(f"SELECT has_table_privilege('{TABLE}', 'INSERT') AND "
                                                  f"has_table_privilege('{TABLE}', 'DELETE')").fetchone()[0])
        except BaseException:
            self.con.close()  # with it the open lock it holds until the runtime has opened
            raise
        self.codec: Any = None
        self._read_at = time.monotonic()
        self._listener: ChangeListener | None = None

    def describe(self) -> dict[str, Any]:
        size, version = self.con.execute("SELECT pg_database_size(current_database()), "
                                          "current_setting('server_version')").fetchone()
        return {"backend": self.backend, "location": self.location, "size_bytes": int(size),
                "server": f"PostgreSQL {version}"}

    # -- transactions and locks ------------------------------------------------------------------------------
    def begin(self, *, read_only: bool) -> None:
        # a read-only call's transaction is READ ONLY: the server refuses writes as well as the statement guard
        self.con.execute("BEGIN TRANSACTION READ ONLY" if read_only else "BEGIN TRANSACTION")

    def lock_for_write(self, frame: WriteFrame, locks: Sequence[tuple[str, str, str]]) -> bool:
        todo = [lock for lock in locks if lock[0] not in frame.locked]
        if not todo:
            return False
        if not frame.began:
            self.begin(read_only=False)
            frame.began = True
        for label, kind, name in todo:
            self.con.execute("SELECT pg_advisory_xact_lock(?)", [postgres.lock_key(kind, name)])
            frame.locked.add(label)
        return True

    def lock_shared(self, kind: str, name: str) -> None:
        self.con.execute("SELECT pg_advisory_xact_lock_shared(?)", [postgres.lock_key(kind, name)])

    # -- commit and the change log ---------------------------------------------------------------------------
    def commit(self, began: bool, changes: list[tuple[str, str, str, Any]], origin: str) -> list[int]:
        seqs: list[int] = []
        if changes:
            # in the call's transaction; or, when it wrote no table (a kept serve), a transaction by itself: one
            # round trip instead of BEGIN, write, COMMIT, and no fsync wait (ADR 0016)
            seqs = self._log(changes, origin, durable=began)
        if began:
            self.con.execute("COMMIT")
        return seqs

    def _log(self, changes: list[tuple[str, str, str, Any]], origin: str, *, durable: bool) -> list[int]:
        """Log the changes in the open transaction (just before COMMIT), in one round trip: ``log_changes`` takes
        the commit lock (held until the transaction ends, so numbers follow commit order), draws the sequence
        numbers, inserts the rows and notifies. ``durable=False`` commits asynchronously (this transaction only):
        it survives any process's crash; a crash of the server may lose the last fraction of a second of them."""
        texts = [self.codec.encode(data) for _, _, _, data in changes]  # before any lock: a codec error costs nothing
        (seqs,) = self.con.execute(
            f"SELECT {META_SCHEMA}.log_changes(?::VARCHAR[], ?::VARCHAR[], ?::VARCHAR[], ?::VARCHAR[], ?, ?)",
            [[c[0] for c in changes], [c[1] for c in changes], [c[2] for c in changes], texts, origin,
             durable]).fetchone()
        return [int(x) for x in seqs]

    def head(self) -> int:
        head = int(self.con.execute(f"SELECT coalesce(max(seq), 0) FROM {TABLE}").fetchone()[0])
        self._read_at = time.monotonic()
        return head

    def changes_after(self, seq: int) -> tuple[int, list[Row]]:
        got = self.con.execute(f"SELECT h.horizon, c.seq, c.pack, c.namespace, c.kind, c.data, c.origin FROM "
                               f"(SELECT coalesce(max(seq), 0) AS horizon FROM {HORIZON}) h LEFT JOIN LATERAL "
                               f"(SELECT * FROM {TABLE} WHERE seq > ? ORDER BY seq) c ON true ORDER BY c.seq",
                               [seq]).fetchall()
        self._read_at = time.monotonic()
        return int(got[0][0]), [(int(r[1]), r[2], r[3], r[4], r[5], r[6]) for r in got if r[1] is not None]

    def decode(self, data: Any) -> Any:
        return self.codec.decode(data)

    def prepare(self, codec: Any, change_log_hours: float) -> None:
        self.codec = codec
        if self.writable:
            self.prune_log(change_log_hours)

    def prune_log(self, hours: float | None) -> None:
        """Drop rows older than ``hours`` (every row: ``None``, after a forget, ADR 0018) and remember the newest
        dropped: a process behind it reloads its mirrors instead of catching up."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"SELECT pg_advisory_xact_lock({postgres.COMMIT_LOCK})")
            if hours is None:
                cut = con.execute(f"SELECT max(seq) FROM {TABLE}").fetchone()[0]
            else:
                cut = con.execute(f"SELECT max(seq) FROM {TABLE} WHERE committed_at < (now() AT TIME ZONE 'UTC') - "
                                  "make_interval(secs => ?)", [hours * 3600.0]).fetchone()[0]
            if cut is not None:
                con.execute(f"DELETE FROM {TABLE} WHERE seq <= ?", [cut])
                con.execute(f"DELETE FROM {HORIZON}")
                con.execute(f"INSERT INTO {HORIZON} VALUES (?)", [cut])
            con.execute("COMMIT")
        except BaseException:
            self.rollback_quietly()
            raise

    def follow(self, wake: Callable[..., object], idle: Callable[[], bool] | None = None) -> None:
        self._listener = ChangeListener(lambda: postgres.raw_connect(self._url, self._secrets), self.location, wake,
                                        idle)
        self._listener.start()

    def unfollow(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None

    def read_at(self) -> float:
        return self._read_at

    # -- opening and closing ---------------------------------------------------------------------------------
    def opened(self) -> None:
        self.con.execute(f"SELECT pg_advisory_unlock({postgres.OPEN_LOCK})")

    def close(self) -> None:
        self.unfollow()
        if self.con is not None:
            self.con.close()
            self.con = None

    def grants(self, role: str, schemas: list[str], *, read_only: bool) -> list[str]:
        """GRANTs for a role that is not the owner (ADR 0031). Read-write: rows of every table, the sequences, the
        runtime's functions, and MAINTAIN (PostgreSQL 17+) so a forget's VACUUM FULL can rewrite the tables.
        Read-only: SELECT. Default privileges cover the tables later migrations create (run by the owner)."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]{0,62}", role):
            from palimpsest_memory.runtime.errors import InvalidParams

            raise InvalidParams(f"role {role!r} must be a plain PostgreSQL identifier (letters, digits, _ and $)")
        database = self.con.execute("SELECT current_database()").fetchone()[0]
        version = int(self.con.execute("SELECT current_setting('server_version_num')").fetchone()[0])
        names = ", ".join(f'"{s}"' for s in [*schemas, META_SCHEMA])
        tables = "SELECT" if read_only else "SELECT, INSERT, UPDATE, DELETE" + (", MAINTAIN" if version >= 170000
                                                                               else "")
        out = [f'GRANT CONNECT ON DATABASE "{database}" TO {role};', f"GRANT USAGE ON SCHEMA {names} TO {role};",
               f"GRANT {tables} ON ALL TABLES IN SCHEMA {names} TO {role};",
               f"ALTER DEFAULT PRIVILEGES IN SCHEMA {names} GRANT {tables} ON TABLES TO {role};",
               f"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {META_SCHEMA} TO {role};"]
        if not read_only:
            out += [f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {names} TO {role};",
                    f"ALTER DEFAULT PRIVILEGES IN SCHEMA {names} GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {role};"]
        return out

    # -- rewriting and backups -------------------------------------------------------------------------------
    def erase_bytes(self, schemas: list[str]) -> float:
        """Make erased rows leave the database files (ADR 0018).

        1. The change log is pruned through its head: its rows hold what packs recorded (a note's text).
        2. ``VACUUM (FULL)`` of every table of ``schemas`` and of the runtime's, outside a transaction. Which
           tables a forget touched is not known here (its events reach other packs), and statistics cannot tell
           (a plain VACUUM zeroes ``n_dead_tup`` but leaves the bytes), so every table is rewritten. Each holds an
           ACCESS EXCLUSIVE lock while it is copied; one that cannot be had within 30 s fails the rewrite, not the
           forget (the erase is committed): the call says so."""
        start = time.perf_counter()
        try:
            self.prune_log(None)
            tables = [f'"{s}"."{t}"' for s, t in self.con.execute(
                "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = ANY(?::VARCHAR[]) "
                "ORDER BY schemaname, tablename", [schemas + [META_SCHEMA]]).fetchall()]
            self.con.execute("SET lock_timeout = '30s'")
            try:
                for table in tables:  # one statement each: a failure names its table
                    self.con.execute(f"VACUUM (FULL) {table}")
            finally:
                self.con.execute("RESET lock_timeout")
        except DB_ERRORS as exc:
            raise StorageError(f"the data was erased, but VACUUM FULL could not rewrite the tables ({exc}); the "
                               "erased bytes may stay in the database files until the next forget or VACUUM FULL",
                               details={"store": self.location}) from None
        took = time.perf_counter() - start
        log.info("%d tables rewritten (VACUUM FULL) after an erase in %.2f s", len(tables), took)
        return took

    def backup_folder(self) -> Any:
        from palimpsest_memory.runtime.errors import InvalidParams

        raise InvalidParams(f"{self.location} is a PostgreSQL database, not a file: back it up with `pal copy "
                            f"{self.location} FILE.duckdb` (every namespace into a DuckDB file) or with pg_dump")

    def backup(self, dest: str) -> None:
        self.backup_folder()

    # -- server discovery: _palimpsest.servers ---------------------------------------------------------------
    @contextlib.contextmanager
    def announce(self, kind: str, url: str | None, *, api: str | None = None,
                 token: str | None = None) -> Iterator[None]:
        """A row in ``_palimpsest.servers`` kept alive by a heartbeat thread (its own connection) while serving;
        deleted on exit. A server that died without deleting it stops beating and is ignored after 30 s. (No
        ``api``/``token``: every process opens a shared store itself, nobody shares one through a ``pal mcp``.)"""
        me = uuid.uuid4().hex
        record = server_record(kind, url, self.location)
        beat = Heartbeat(lambda: postgres.raw_connect(self._url, self._secrets), me, record, SERVERS,
                         every=LIVE_SECONDS / 6)
        try:
            beat.start()
            yield
        finally:
            beat.stop()


def live_servers(url: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The servers of the database at ``url`` whose heartbeat is fresh, newest first (none when it has never
    been opened, or cannot be reached: the caller then opens the store itself and says why it failed)."""
    secrets = postgres.secrets_of(url, env)
    try:
        raw = postgres.raw_connect(url, secrets)
    except StorageError:
        return []
    try:
        with raw:
            if raw.execute(f"SELECT to_regclass('{SERVERS}')").fetchone()[0] is None:
                return []
            rows = raw.execute(
                f"SELECT pid, host, kind, url, started_at FROM {SERVERS} WHERE heartbeat_at > "
                f"(now() AT TIME ZONE 'UTC') - make_interval(secs => %s) ORDER BY started_at DESC",
                [LIVE_SECONDS]).fetchall()
    except Exception:  # noqa: BLE001 - discovery is a hint: a failure means "none found"
        return []
    return [{"pid": pid, "host": host, "kind": kind, "url": u, "database": postgres.redact(url),
             "started_at": started.strftime("%Y-%m-%dT%H:%M:%SZ")} for pid, host, kind, u, started in rows]

"""The shared backend: a PostgreSQL database (``postgresql://`` URL), for many processes on many hosts (ADR 0016).

Pack SQL is DuckDB's dialect with ``?`` placeholders; ``pg_dialect.translate`` turns each statement text into
PostgreSQL's once (cached), and the connection wrapper (:class:`PgConnection`) answers like a DuckDB connection
(``execute(...).fetchall()``, ``fetchnumpy``, a row count for DML without RETURNING, JSON as text).
Credentials come from the URL or libpq's ``PG*`` variables and never appear in an error message.
"""
from __future__ import annotations

import hashlib
import os
from decimal import Decimal
import time
from typing import Any, Callable, Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.storage.base import META_SCHEMA, BackendError
from palimpsest_memory.runtime.storage.pg_dialect import translate
from palimpsest_memory.runtime.storage.pg_result import PgResult

URL_SCHEMES = ("postgresql://", "postgres://")
OPEN_LOCK = 0x70616C_0001  # session advisory lock held while a process creates or migrates the schema
COMMIT_LOCK = 0x70616C_0002  # transaction advisory lock: change-log sequence numbers are taken in commit order
CHANNEL = "palimpsest_changes"  # LISTEN/NOTIFY channel: a wake-up only, the change log is the truth
DEFAULT_CONNECT_TIMEOUT = 10  # seconds, when neither the URL nor PGCONNECT_TIMEOUT says (libpq's own default: none)
RECONNECT_FIRST, RECONNECT_MAX = 0.2, 5.0  # seconds between reconnect attempts: doubling from the first to the max
# SQLSTATE classes of a lost connection: 08 connection exception; 57P01-57P03 the server shut down or is starting
LOST_SQLSTATES = ("08", "57P01", "57P02", "57P03")


class ConnectionLost(BackendError):
    """The connection went away (server restart, network); retryable once the server is back."""

    lost_connection = True  # how base.store_error tells it from other backend errors without importing this
    outcome_unknown = False
    retry_after = 0.0


def is_url(target: str) -> bool:
    return str(target).startswith(URL_SCHEMES)


def redact(url: str) -> str:
    """The URL without user, password or query (where ``password=`` may hide): safe to print."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "postgresql://<unparsable URL>"
    return f"{parts.scheme}://{host}{port}{parts.path}"


def secrets_of(url: str, env: Mapping[str, str]) -> list[str]:
    """Every password the connection may use (URL, its query, PGPASSWORD), to scrub from messages."""
    out = []
    try:
        parts = urlsplit(url)
        if parts.password:
            out += [parts.password, unquote(parts.password)]
        for item in parts.query.split("&"):
            key, _, value = item.partition("=")
            if key == "password" and value:
                out += [value, unquote(value)]
    except ValueError:
        pass
    if env.get("PGPASSWORD"):
        out.append(env["PGPASSWORD"])
    return sorted({s for s in out if s}, key=len, reverse=True)


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory-lock key for a tuple of strings (blake2b, so every process agrees)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# -- the connection ----------------------------------------------------------------------------------------------
class PgConnection:
    """A psycopg connection that answers like a DuckDB one for the runtime, the packs and the tests."""

    dialect = "postgres"

    def __init__(self, raw: Any, url: str, secrets: list[str], reconnect: "Callable[[], Any] | None" = None) -> None:
        self.raw = raw
        self.url = redact(url)
        self._secrets = secrets
        self._last = PgResult(self, None)
        # Coming back after a lost connection (ADR 0031): the connection is marked lost when the server went away;
        # the transaction it carried is gone (the server rolled it back). The next statement that starts anew
        # (BEGIN, or one outside a transaction) reconnects, at most once per backoff step (0.2 s doubling to 5 s);
        # before that, or when the server is still down, it fails at once with ConnectionLost (retryable).
        self._reconnect = reconnect
        self.lost = False
        self.in_transaction = False
        self._backoff = RECONNECT_FIRST
        self._next_try = 0.0
        self.reconnects = 0

    def scrub(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _fail(self, exc: Exception, sql: str = "") -> BackendError:
        msg = self.scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        sqlstate = getattr(exc, "sqlstate", None)
        if self.raw.closed or self.raw.broken or (sqlstate or "").startswith(LOST_SQLSTATES):
            was_committing = sql.lstrip().upper().startswith("COMMIT")
            self._lose()
            lost = ConnectionLost(f"the connection to {self.url} was lost ({msg})"
                                  + ("; the commit's outcome is unknown" if was_committing else
                                     "; the transaction was rolled back"))
            lost.outcome_unknown = was_committing
            return lost
        err = BackendError(msg)
        err.sqlstate = sqlstate  # type: ignore[attr-defined]
        return err

    def _lose(self) -> None:
        self.lost = True  # in_transaction stays as it was: the caller's ROLLBACK ends the lost transaction
        self._next_try = 0.0  # the first reconnect may be tried at once
        try:
            self.raw.close()
        except Exception:  # noqa: BLE001 - it is gone already
            pass

    def _come_back(self) -> None:
        """Reconnect now if the backoff allows, else raise ConnectionLost saying when."""
        now = time.monotonic()
        if self._reconnect is None:
            raise ConnectionLost(f"the connection to {self.url} is closed")
        if now < self._next_try:
            err = ConnectionLost(f"the database {self.url} is unreachable; the next reconnect is in "
                                 f"{self._next_try - now:.1f} s")
            err.retry_after = self._next_try - now
            raise err
        try:
            self.raw = self._reconnect()
        except StorageError as exc:
            self._next_try = now + self._backoff
            err = ConnectionLost(f"the database {self.url} is unreachable ({exc.message}); retrying in "
                                 f"{self._backoff:.1f} s")
            err.retry_after = self._backoff
            self._backoff = min(self._backoff * 2, RECONNECT_MAX)
            raise err from None
        self.lost, self._backoff = False, RECONNECT_FIRST
        self.reconnects += 1

    def _track(self, sql: str) -> bool:
        """Before a statement on a lost connection: a ROLLBACK ends the lost transaction (True: nothing to send);
        any other statement of that transaction fails (its earlier statements are gone, and running the rest
        outside it would commit half a call); a statement that starts anew reconnects first."""
        if not self.lost:
            return False
        if sql.lstrip()[:8].upper().startswith("ROLLBACK"):
            self.in_transaction = False
            return True
        if self.in_transaction:
            raise ConnectionLost(f"the connection to {self.url} was lost; the transaction was rolled back")
        self._come_back()
        return False

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> "PgResult":
        """Run one statement; the answer is its own :class:`PgResult` (``.fetchall()`` …), also kept as the
        connection's last result for DuckDB-style ``con.execute(…); con.fetchall()``. A result of its own per
        statement: a thread that reads the store (a tool, a test) never gets another thread's rows."""
        import psycopg

        t = translate(sql, params is not None)
        text, values = t.bind(params)
        if self._track(sql):
            self._last = PgResult(self, None)
            return self._last
        try:
            cur = self.raw.execute(text, values, prepare=False)
        except psycopg.Error as exc:
            err = self._fail(exc, sql)
            if not (isinstance(err, ConnectionLost) and sql.lstrip()[:5].upper() == "BEGIN"):
                raise err from None
            # the connection was found dead at a transaction's first statement: nothing has happened yet, so
            # reconnect and begin again at once instead of failing the call (the server was restarted in between)
            self._come_back()
            try:
                cur = self.raw.execute(text, values, prepare=False)
            except psycopg.Error as again:
                raise self._fail(again, sql) from None
        word = sql.lstrip()[:8].upper()
        if word.startswith("BEGIN"):
            self.in_transaction = True
        elif word.startswith(("COMMIT", "ROLLBACK")):
            self.in_transaction = False
        self._last = PgResult(self, cur)
        return self._last

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> "PgResult":
        import psycopg

        t = translate(sql, True)
        batch = [t.bind(r) for r in rows]
        if not batch:
            self._last = PgResult(self, None)
            return self._last
        self._track(sql)
        try:
            cur = self.raw.cursor()
            cur.executemany(batch[0][0], [v for _, v in batch])
        except psycopg.Error as exc:
            raise self._fail(exc, sql) from None
        self._last = PgResult(self, cur)
        return self._last

    @property
    def description(self) -> list[tuple[Any, ...]] | None:
        return self._last.description

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._last.fetchall()

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._last.fetchone()

    def fetchnumpy(self) -> dict[str, Any]:
        return self._last.fetchnumpy()

    def close(self) -> None:
        try:
            self.raw.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass


def _configure(raw: Any) -> None:
    """JSON comes back as text and numeric as int/float, as DuckDB gives them; times are UTC."""
    from psycopg.adapt import Loader
    from psycopg.types.string import TextLoader

    class NumericLoader(Loader):
        def load(self, data: Any) -> Any:
            d = Decimal(bytes(data).decode())
            return int(d) if d == d.to_integral_value() else float(d)

    for name in ("json", "jsonb"):
        raw.adapters.register_loader(name, TextLoader)
    raw.adapters.register_loader("numeric", NumericLoader)
    raw.execute("SET TIME ZONE 'UTC'")


META_DDL = f"""
CREATE SCHEMA IF NOT EXISTS {META_SCHEMA};
CREATE TABLE IF NOT EXISTS {META_SCHEMA}.migrations (
    pack VARCHAR NOT NULL, version INTEGER NOT NULL, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'), PRIMARY KEY (pack, version));
CREATE TABLE IF NOT EXISTS {META_SCHEMA}.tunables (
    namespace VARCHAR NOT NULL, actor VARCHAR NOT NULL, pack VARCHAR NOT NULL, name VARCHAR NOT NULL,
    value DOUBLE PRECISION NOT NULL, set_by VARCHAR, updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, actor, pack, name));
CREATE SEQUENCE IF NOT EXISTS {META_SCHEMA}.change_seq;
CREATE TABLE IF NOT EXISTS {META_SCHEMA}.changes (
    seq BIGINT PRIMARY KEY, pack VARCHAR NOT NULL, namespace VARCHAR NOT NULL, kind VARCHAR NOT NULL,
    data TEXT NOT NULL, origin VARCHAR NOT NULL, committed_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'));
CREATE TABLE IF NOT EXISTS {META_SCHEMA}.change_horizon (seq BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS changes_committed_idx ON {META_SCHEMA}.changes (committed_at);
CREATE TABLE IF NOT EXISTS {META_SCHEMA}.servers (
    id VARCHAR PRIMARY KEY, pid INTEGER NOT NULL, host VARCHAR NOT NULL, kind VARCHAR NOT NULL, url VARCHAR,
    started_at TIMESTAMP NOT NULL, heartbeat_at TIMESTAMP NOT NULL);
CREATE OR REPLACE FUNCTION {META_SCHEMA}.log_changes(p text[], n text[], k text[], d text[], o text, durable boolean)
    RETURNS bigint[] LANGUAGE plpgsql AS $$
    DECLARE s bigint[];
    BEGIN
        IF NOT durable THEN PERFORM set_config('synchronous_commit', 'off', true); END IF;
        PERFORM pg_advisory_xact_lock({COMMIT_LOCK});
        SELECT array_agg(nextval('{META_SCHEMA}.change_seq') ORDER BY i) INTO s
            FROM generate_series(1, cardinality(p)) i;
        INSERT INTO {META_SCHEMA}.changes (seq, pack, namespace, kind, data, origin)
            SELECT x.s, x.p, x.n, x.k, x.d, o FROM unnest(s, p, n, k, d) AS x(s, p, n, k, d);
        PERFORM pg_notify('{CHANNEL}', s[cardinality(s)]::text);
        RETURN s;
    END $$;
CREATE OR REPLACE FUNCTION {META_SCHEMA}.jarr(j text) RETURNS text[] LANGUAGE sql IMMUTABLE AS
    $$ SELECT CASE WHEN j IS NULL THEN NULL
              ELSE coalesce((SELECT array_agg(x) FROM jsonb_array_elements_text(j::jsonb) x), '{{}}'::text[]) END $$;
"""


def raw_connect(url: str, secrets: list[str], **kwargs: Any) -> Any:
    """A psycopg connection in autocommit, configured as the runtime reads results; every libpq parameter of
    the URL and of the ``PG*`` environment applies (``connect_timeout`` defaults to 10 s only when neither says)."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise StorageError("a postgresql:// database needs the postgres extra: "
                           "pip install 'palimpsest-memory[postgres]'",
                           details={"database": redact(url), "reason": "missing_extra"}) from None
    safe = redact(url)
    try:
        if "connect_timeout" not in conninfo_to_dict(url) and not os.environ.get("PGCONNECT_TIMEOUT"):
            kwargs.setdefault("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
        raw = psycopg.connect(url, autocommit=True, **kwargs)
    except psycopg.Error as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        for s in secrets:
            msg = msg.replace(s, "***")
        raise StorageError(f"cannot connect to PostgreSQL database {safe}: {msg}",
                           details={"database": safe}) from None
    except Exception as exc:  # noqa: BLE001 - e.g. a malformed URL (psycopg raises ProgrammingError/ValueError)
        msg = str(exc)
        for s in secrets:
            msg = msg.replace(s, "***")
        raise StorageError(f"cannot connect to PostgreSQL database {safe}: {type(exc).__name__}: {msg}",
                           details={"database": safe}) from None
    try:
        _configure(raw)
    except psycopg.Error as exc:
        raw.close()
        raise StorageError(f"cannot prepare PostgreSQL database {safe}: {exc}", details={"database": safe}) from None
    return raw


# the runtime's tables exist in their current layout: a role that may not create them (ADR 0031: roles) opens
META_CURRENT = (f"SELECT to_regclass('{META_SCHEMA}.servers') IS NOT NULL AND to_regprocedure("
                f"'{META_SCHEMA}.log_changes(text[],text[],text[],text[],text,boolean)') IS NOT NULL")


def connect(url: str, env: Mapping[str, str]) -> PgConnection:
    """Connect (libpq reads ``PG*`` variables for whatever the URL leaves out), create the runtime's tables and
    hold the open lock until :func:`opened` (so two processes never migrate at once)."""
    secrets = secrets_of(url, env)
    safe = redact(url)
    raw = raw_connect(url, secrets)
    con = PgConnection(raw, url, secrets, reconnect=lambda: raw_connect(url, secrets))
    try:
        version = raw.info.server_version
        if version < 160000:
            raise StorageError(f"PostgreSQL {version // 10000} is too old: palimpsest needs PostgreSQL 16 or newer",
                               details={"database": safe, "server_version": version})
        con.execute(f"SELECT pg_advisory_lock({OPEN_LOCK})")
        if not con.execute(META_CURRENT).fetchone()[0]:
            con.execute(META_DDL)
    except BackendError as exc:
        con.close()
        raise StorageError(f"cannot prepare PostgreSQL database {safe}: {exc}", details={"database": safe}) from None
    except BaseException:
        con.close()
        raise
    return con


def opened(con: PgConnection) -> None:
    """Migrations and mirror loads are done: let the next process open the database."""
    con.execute(f"SELECT pg_advisory_unlock({OPEN_LOCK})")

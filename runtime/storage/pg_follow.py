"""The threads of a shared store, each with a connection of its own (ADR 0016, ADR 0031).

- :class:`ChangeListener`: LISTENs for other processes' commits and, on each notification (or every few seconds,
  in case one was lost), calls the runtime's ``wake`` (which catches up with the change log under the runtime's
  lock). The log is the truth; a notification only says "look now". A lost connection is opened again. Between
  notifications it calls ``idle``, which lets the mirrors do the work they deferred to keep up (``Mirror.idle``).
- :class:`Heartbeat`: keeps a server's row in ``_palimpsest.servers`` fresh while it serves, writes it again if it
  went missing (a database restored, a row pruned), and deletes it when the server stops.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

log = logging.getLogger("palimpsest")
LISTEN_POLL = 0.2  # seconds the listener waits for a notification before checking whether to stop
SAFETY_POLL = 5.0  # seconds without a notification after which the listener reads the log anyway
CHANNEL = "palimpsest_changes"
RETRY_FIRST, RETRY_MAX = 0.2, 5.0  # seconds between attempts to open a lost connection again: doubling


class ChangeListener:
    def __init__(self, connect: Callable[[], Any], location: str, wake: Callable[..., object],
                 idle: Callable[[], bool] | None = None) -> None:
        self._connect, self._location, self._wake, self._idle = connect, location, wake, idle
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="palimpsest-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        retry = RETRY_FIRST
        while not self._stop.is_set():
            try:
                with self._connect() as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self._wake()  # whatever was committed while this connection was away
                    retry = RETRY_FIRST
                    quiet_for = 0.0
                    # the mirrors' deferred work (Mirror.idle): asked for a chunk at most every LISTEN_POLL, after
                    # each catch-up and for as long as they say some remains (they say when it is due)
                    chores, last_chore = True, 0.0
                    while not self._stop.is_set():
                        got = [n.payload for n in conn.notifies(timeout=LISTEN_POLL, stop_after=1)]
                        if got:  # and every other one already here (commits during the last catch-up)
                            got += [n.payload for n in conn.notifies(timeout=0.0)]
                        woke = bool(got)
                        now = time.monotonic()
                        if self._idle is not None and chores and now - last_chore >= LISTEN_POLL:
                            chores, last_chore = bool(self._idle()), now
                        quiet_for = 0.0 if woke else quiet_for + LISTEN_POLL
                        if not woke and quiet_for < SAFETY_POLL:
                            continue
                        quiet_for = 0.0
                        # a notification's payload is its commit's last sequence number: the runtime reads the log
                        # only when it has not applied that far (its own commits and those its last read took
                        # cost a read of the log each, most of them empty; issue 41, item 7)
                        if self._wake(newest(got)) is False:  # the runtime closed
                            return
                        chores = True
            except Exception:  # noqa: BLE001 - a lost connection: log it and listen again
                if self._stop.is_set():
                    return
                log.warning("change-log listener lost its connection to %s; retrying in %.1f s", self._location, retry)
                self._stop.wait(retry)
                retry = min(retry * 2, RETRY_MAX)


def newest(payloads: list[str]) -> int | None:
    """The highest sequence number notified (None: none, or a payload that is not one: read the log anyway)."""
    try:
        return max(int(p) for p in payloads) if payloads else None
    except ValueError:
        return None


class Heartbeat:
    def __init__(self, connect: Callable[[], Any], server_id: str, record: dict[str, Any], table: str, *,
                 every: float) -> None:
        self._connect, self._id, self._record, self._table, self._every = connect, server_id, record, table, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="palimpsest-heartbeat", daemon=True)
        self._conn: Any = None

    def start(self) -> None:
        try:
            self._beat()  # announced before the server answers its first request
        except Exception as exc:  # noqa: BLE001 - e.g. a read-only role: it serves, but cannot be discovered
            log.warning("this server cannot announce itself in %s (%s): clients must be given its URL",
                        self._table, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._every + 1)
        try:
            conn = self._conn or self._connect()
            with conn:
                conn.execute(f"DELETE FROM {self._table} WHERE id = %s", [self._id])
        except Exception:  # noqa: BLE001 - the database is away: the row goes stale and is ignored
            log.warning("could not remove this server's announcement from %s", self._table)

    def _beat(self) -> None:
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        r = self._record
        self._conn.execute(
            f"INSERT INTO {self._table} (id, pid, host, kind, url, started_at, heartbeat_at) VALUES "
            "(%s, %s, %s, %s, %s, %s::timestamp, now() AT TIME ZONE 'UTC') ON CONFLICT (id) DO UPDATE SET "
            "heartbeat_at = excluded.heartbeat_at", [self._id, r["pid"], r["host"], r["kind"], r["url"],
                                                    r["started_at"].rstrip("Z")])

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - the database is away: beat again when it is back
                try:
                    if self._conn is not None:
                        self._conn.close()
                except Exception:  # noqa: BLE001
                    pass
                self._conn = None

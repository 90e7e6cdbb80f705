"""The follower's wake-up on a shared store (ADR 0016): a thread with its own connection that LISTENs for other
processes' commits and, on each notification (or every few seconds, in case one was lost), has the runtime catch
up with the change log under the runtime's lock. The log is the truth; a notification only says "look now"."""
from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Callable

from palimpsest_memory.runtime.storage import postgres

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest")
LISTEN_POLL = 0.2  # seconds the listener waits for a notification before checking whether to stop
SAFETY_POLL = 5.0  # seconds without a notification after which the listener reads the log anyway


class ChangeListener:
    """Calls ``catch_up()`` under ``runtime._lock`` whenever another process may have committed."""

    def __init__(self, runtime: "Runtime", url: str, catch_up: Callable[[], object]) -> None:
        self._rt, self._url, self._catch_up = runtime, url, catch_up
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="palimpsest-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        import psycopg

        rt = self._rt
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=10) as conn:
                    conn.execute(f"LISTEN {postgres.CHANNEL}")
                    idle = 0.0
                    while not self._stop.is_set():
                        woke = any(True for _ in conn.notifies(timeout=LISTEN_POLL, stop_after=1))
                        idle = 0.0 if woke else idle + LISTEN_POLL
                        if not woke and idle < SAFETY_POLL:
                            continue
                        idle = 0.0
                        with rt._lock:
                            if rt._con is None or self._stop.is_set():
                                return
                            self._catch_up()
            except Exception:  # noqa: BLE001 - a lost connection: log it and listen again
                if self._stop.is_set():
                    return
                log.warning("change-log listener lost its connection to %s; retrying", postgres.redact(self._url),
                            exc_info=False)
                self._stop.wait(1.0)

"""Bounds on what a client can hold open: a whole request must arrive within ``read_timeout`` seconds, and at
most ``max_connections`` connections are open at once (issue 16, item 4).

uvicorn bounds neither: a client that sends half a header block, or a body that never ends, keeps its
connection (and the buffered bytes) for ever. This protocol arms a timer when a connection opens and again after
each response; the timer is cancelled once a request has fully arrived, and closes the connection if it fires
first. A connection beyond the limit is closed at once, before it can buffer anything.
"""
from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def bounded_protocol(read_timeout: float, max_connections: int) -> type[H11Protocol]:
    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._read_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.close()  # over the limit: refuse before reading anything
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
                self._disarm()  # the request is in: the handler's own time is not the client's

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.conn.our_state is h11.IDLE or self.conn.their_state is h11.IDLE:
                self._arm()  # keep-alive: the next request must arrive in time too

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._read_timer = self.loop.call_later(read_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._read_timer is not None:
                self._read_timer.cancel()
                self._read_timer = None

        def _too_slow(self) -> None:
            self._read_timer = None
            if self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE):
                self.transport.close()

    return BoundedH11Protocol

"""After a transaction: committed changes to the mirrors, then published events to their subscribers.

This is the one path by which in-memory state follows the store (ADR 0015). The engine calls
:meth:`Followers.committed` once a top-level call (or a subscriber, or a close step) has committed or ended
read-only; a call that rolled back never gets here, so its changes and events are simply dropped.
"""
from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from runtime.dispatch import Context, Frame
from runtime.events import Subscription
from runtime.mirror import Change, Mirror, mirrors_of
from runtime.storage import rollback_quietly

if TYPE_CHECKING:
    from runtime.engine import Runtime

log = logging.getLogger("palimpsest")
MAX_DELIVERIES = 10_000  # events one call may cause, subscribers' own events included (a loop is a pack bug)


class Followers:
    """The mirrors of every pack (and the runtime's own) and the subscribers of every declared event."""

    def __init__(self, runtime: "Runtime") -> None:
        self._rt = runtime
        self.seq = 0  # sequence number of the last committed change
        self.mirrors: dict[str, list[tuple[str, Mirror]]] = {}
        self.subscribers: dict[str, list[Subscription]] = {}

    def add_mirrors(self, owner: str, state: Any) -> None:
        self.mirrors[owner] = mirrors_of(state)

    def add_subscription(self, sub: Subscription) -> None:
        self.subscribers.setdefault(sub.event, []).append(sub)

    # -- loading and closing ------------------------------------------------------------------------------------
    def load_all(self) -> None:
        for owner, mirrors in self.mirrors.items():
            for _, mirror in mirrors:
                self.load(owner, mirror)
        release_freed_memory()

    def load(self, owner: str, mirror: Mirror) -> None:
        """(Re)build one mirror from committed data, in a read-only transaction of its own."""
        con = self._rt._con
        frame = Frame(read_only=True)
        try:
            mirror.load(Context(self._rt, owner, f"{owner}.<load>", self._rt.default_namespace, frame, 0,
                                read_only=True))
        finally:
            if frame.began:
                rollback_quietly(con)

    def close_all(self) -> None:
        """Each mirror's ``close`` in a write transaction of its own; a failure is logged and closes the rest."""
        for owner, mirrors in reversed(list(self.mirrors.items())):
            for name, mirror in mirrors:
                self.run_own(owner, f"{owner}.<close {name}>", self._rt.default_namespace, None,
                             lambda ctx, m=mirror: m.close(ctx))

    # -- after commit -------------------------------------------------------------------------------------------
    def committed(self, frame: Frame) -> None:
        """Feed a finished frame's changes to the mirrors, then deliver its events (and their consequences)."""
        self._apply(frame)
        if frame.events:
            self._deliver(frame.events)

    def _apply(self, frame: Frame) -> None:
        by_owner: dict[str, list[Change]] = {}
        for owner, ns, kind, data in frame.changes:
            self.seq += 1
            by_owner.setdefault(owner, []).append(Change(self.seq, owner, ns, kind, data))
        for owner in frame.reload:
            for _, mirror in self.mirrors.get(owner, ()):
                self.load(owner, mirror)
        for owner, changes in by_owner.items():
            if owner in frame.reload:
                continue
            for name, mirror in self.mirrors.get(owner, ()):
                try:
                    mirror.apply(changes)
                except Exception:  # noqa: BLE001 - the data is committed: rebuild the mirror from it
                    log.exception("mirror %s.%s failed to apply changes %d-%d; reloading it", owner, name,
                                  changes[0].seq, changes[-1].seq)
                    self.load(owner, mirror)

    def _deliver(self, events: list[tuple[str, str, str | None, Any]]) -> None:
        queue = deque(events)
        delivered = 0
        while queue:
            event, ns, actor, payload = queue.popleft()
            for sub in self.subscribers.get(event, ()):
                delivered += 1
                if delivered > MAX_DELIVERIES:
                    log.error("more than %d event deliveries after one call; dropping the rest (an event loop?)",
                              MAX_DELIVERIES)
                    return
                frame = self.run_own(sub.pack, f"{sub.pack}.<on {event}>", ns, actor,
                                     lambda ctx, s=sub, p=payload: s.handler(p, ctx), follow_events=False)
                if frame is not None:
                    queue.extend(frame.events)

    def run_own(self, pack: str, label: str, namespace: str, actor: str | None,
                body: Callable[[Context], None], *, follow_events: bool = True) -> Frame | None:
        """Run ``body(ctx)`` for ``pack`` in a write transaction of its own, commit it and feed its changes.

        Returns the finished frame, or None when ``body`` failed (logged, rolled back): a subscriber's or a
        closing mirror's failure never fails anything else."""
        rt = self._rt
        con = rt._con
        frame = Frame(read_only=False)
        with rt._lock:
            try:
                body(Context(rt, pack, label, namespace, frame, 0, actor, read_only=False))
                if frame.began:
                    con.execute("COMMIT")
            except Exception:  # noqa: BLE001
                if frame.began:
                    rollback_quietly(con)
                log.exception("%s failed", label)
                return None
            self._apply(frame)
        if follow_events and frame.events:
            self._deliver(frame.events)
        return frame


def release_freed_memory() -> None:
    """Hand back to the OS what building the mirrors allocated and freed again (fetched rows, temporary
    arrays): glibc's malloc keeps it otherwise, and a process that opened a large store would stay that big."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        pass

"""After a transaction: committed changes to the mirrors, then published events to their subscribers.

This is the one path by which in-memory state follows the store (ADR 0015). The engine calls
:meth:`Followers.committed` once a top-level call (or a subscriber, or a close step) has committed or ended
read-only; a call that rolled back never gets here, so its changes and events are simply dropped.

Every store numbers each commit's changes (ADR 0031). When nobody committed between the last change applied and
a call's own, its changes are applied from memory. Otherwise (a shared store: PostgreSQL, ADR 0016) the process
applies every logged change it has not applied yet, in sequence (commit) order, its own ones from memory and other
processes' decoded; the store's follower thread does the same when another process's commit notifies it.
"""
from __future__ import annotations

import logging
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, Callable

from palimpsest_memory.runtime import changelog
from palimpsest_memory.runtime.dispatch import Context, Frame
from palimpsest_memory.runtime.errors import StorageError
from palimpsest_memory.runtime.events import Subscription
from palimpsest_memory.runtime.mirror import Change, Mirror, mirrors_of

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest")
MAX_DELIVERIES = 10_000  # events one call may cause, subscribers' own events included (a loop is a pack bug)


class Followers:
    """The mirrors of every pack (and the runtime's own) and the subscribers of every declared event."""

    def __init__(self, runtime: "Runtime") -> None:
        self._rt = runtime
        self.seq = 0  # sequence number of the last committed change
        self.mirrors: dict[str, list[tuple[str, Mirror]]] = {}
        self.subscribers: dict[str, list[Subscription]] = {}
        self._reload_pending = False  # shared store: a mirror failed inside a transaction; reload all after it
        # namespaces whose per-namespace mirrors are loaded, least recently used first → the sequence number they
        # were loaded at (they take only changes after it); their estimated sizes; the budget in bytes (0: none)
        self.held: OrderedDict[str, int] = OrderedDict()
        self.sizes: dict[str, int] = {}
        self.budget = 0
        self.loads = self.evictions = 0  # counters, for `pal info` and the benchmark
        self._loading: set[str] = set()

    @property
    def reload_pending(self) -> bool:
        """A mirror failed inside a transaction: the next catch-up outside one loads every mirror again."""
        return self._reload_pending

    def add_mirrors(self, owner: str, state: Any) -> None:
        self.mirrors[owner] = mirrors_of(state)

    def add_subscription(self, sub: Subscription) -> None:
        self.subscribers.setdefault(sub.event, []).append(sub)

    # -- loading and closing ------------------------------------------------------------------------------------
    def _per_ns(self) -> list[tuple[str, Mirror]]:
        return [(owner, m) for owner, ms in self.mirrors.items() for _, m in ms if m.per_namespace]

    def load_all(self) -> None:
        """Build every process-wide mirror and reload every namespace held, all from one snapshot read together
        with the change log's head: the mirrors then hold exactly the changes up to it."""
        with self._rt.store.snapshot() as head:
            frame = Frame(read_only=True, began=True)
            for owner, mirror in self._everything():
                self.load(owner, mirror, frame)
        self.seq = head
        self.held.update(dict.fromkeys(self.held, head))
        self._reload_pending = False
        release_freed_memory()

    def _everything(self) -> list[tuple[str, Mirror]]:
        return [(owner, m) for owner, ms in self.mirrors.items() for _, m in ms]

    def load(self, owner: str, mirror: Mirror, frame: Frame | None = None) -> None:
        """(Re)build one mirror from committed data (a per-namespace one: every namespace held), in a read-only
        transaction of its own (or ``frame``'s)."""
        if not mirror.per_namespace:
            self._load_one(owner, mirror, self._rt.default_namespace, frame)
            return
        for ns in list(self.held):
            mirror.evict(ns)
            self._load_one(owner, mirror, ns, frame)

    def _load_one(self, owner: str, mirror: Mirror, ns: str, frame: Frame | None) -> None:
        own = frame is None
        frame = Frame(read_only=True) if own else frame
        ctx = Context(self._rt, owner, f"{owner}.<load>", ns, frame, 0, read_only=True)
        try:
            mirror.load(ctx, ns) if mirror.per_namespace else mirror.load(ctx)
        finally:
            if own and frame.began:
                self._rt.store.rollback_quietly()

    # -- namespaces held (ADR 0016: per-namespace mirrors, on demand, under a budget) -----------------------------
    def ensure(self, namespace: str, frame: Frame | None = None) -> None:
        """Make ``namespace`` held (loading its per-namespace mirrors if it is not) and the most recently used.

        Outside a transaction (``frame`` None or not begun) the load reads committed data in one snapshot
        together with the log's head: the namespace then starts at that sequence number and takes only later
        changes. Inside a transaction (a nested call into a namespace not held) it reads through that
        transaction, which has not written the namespace yet; it first takes the namespace's lock (shared, unless
        the call holds it already), so no writer of the namespace is between its commit and the head read."""
        if namespace in self.held:
            self.held.move_to_end(namespace)
            return
        if namespace in self._loading or not self._per_ns():
            return
        store = self._rt.store
        self._loading.add(namespace)
        try:
            if frame is not None and frame.began:
                if namespace not in frame.locked:
                    store.lock_shared("ns", namespace)
                head = store.head()
                for owner, mirror in self._per_ns():
                    self._load_one(owner, mirror, namespace, frame)
            else:
                with store.snapshot() as head:
                    snap = Frame(read_only=True, began=True)
                    for owner, mirror in self._per_ns():
                        self._load_one(owner, mirror, namespace, snap)
        except BaseException:
            for _, mirror in self._per_ns():
                mirror.evict(namespace)
            raise
        finally:
            self._loading.discard(namespace)
        self.held[namespace] = head
        self.sizes[namespace] = self.size_of(namespace)
        self.loads += 1

    def size_of(self, namespace: str) -> int:
        return sum(int(m.size_bytes(namespace)) for _, m in self._per_ns())

    def trim(self, used: str | None = None) -> None:
        """Re-measure ``used`` and evict the least recently used namespaces while the held ones' summed size is
        over the budget (never the most recent one: a call's own namespace stays, however large)."""
        if self.budget <= 0:
            return  # no budget, nothing to weigh: measuring a large namespace after every call cost ~20 ms at 100k
        if used is not None and used in self.held:
            self.sizes[used] = self.size_of(used)
        evicted = False
        while len(self.held) > 1 and sum(self.sizes.get(ns, 0) for ns in self.held) > self.budget:
            self.evict(next(iter(self.held)))
            evicted = True
        if evicted:
            release_freed_memory()

    def evict(self, namespace: str) -> None:
        """Write what the namespace keeps only in memory (each mirror's ``release``), then drop it."""
        if namespace not in self.held:
            return
        for owner, mirror in self._per_ns():
            if releases(mirror):
                self.run_own(owner, f"{owner}.<release {namespace}>", namespace, None,
                             lambda ctx, m=mirror: m.release(ctx, namespace))
        for _, mirror in self._per_ns():
            mirror.evict(namespace)
        self.held.pop(namespace, None)
        self.sizes.pop(namespace, None)
        self.evictions += 1

    def close_all(self) -> None:
        """Each mirror's ``close`` (per-namespace mirrors: ``release`` of every namespace held) in a write
        transaction of its own; a failure is logged and closes the rest."""
        for owner, mirrors in reversed(list(self.mirrors.items())):
            for name, mirror in mirrors:
                if mirror.per_namespace:
                    for ns in list(self.held) if releases(mirror) else ():
                        self.run_own(owner, f"{owner}.<release {name} {ns}>", ns, None,
                                     lambda ctx, m=mirror, n=ns: m.release(ctx, n))
                else:
                    self.run_own(owner, f"{owner}.<close {name}>", self._rt.default_namespace, None,
                                 lambda ctx, m=mirror: m.close(ctx))

    # -- after commit -------------------------------------------------------------------------------------------
    def committed(self, frame: Frame) -> None:
        """Feed a finished frame's changes to the mirrors, then deliver its events (and their consequences)."""
        self._after_commit(frame)
        if frame.events:
            self._deliver(frame.events)

    def _after_commit(self, frame: Frame) -> None:
        if frame.seqs and frame.seqs[0] == self.seq + 1 and not frame.reload and not self._reload_pending:
            # nobody committed between the last change applied and ours (numbers are drawn under the commit
            # lock, so ours are contiguous): apply ours from memory, no need to read the log back
            changes = [Change(seq, *c) for seq, c in zip(frame.seqs, frame.changes)]
            self.seq = frame.seqs[-1]
            if self._feed(changes, set()):
                self.load_all()
        elif frame.seqs or frame.reload or self._reload_pending:
            self.catch_up(own=frame)
        # a call that logged nothing has nothing to apply: other processes' commits come through the listener

    # -- following a shared store ------------------------------------------------------------------------------
    def catch_up(self, *, own: Frame | None = None, in_transaction: bool = False, frame: Frame | None = None) -> int:
        """Apply every logged change after the last one applied, in sequence order; ``own``'s from memory.

        Returns how many were applied. Outside a transaction, a process that fell behind the pruned part of the
        log (or whose mirror failed to apply, or met a ``_reload``) loads every mirror again instead; inside one
        (``frame``: a write transaction that just took its locks) it loads again at once the namespaces whose
        write lock ``frame`` holds (:meth:`_reload_locked`) and everything once the transaction has ended."""
        store = self._rt.store
        if store is None:
            return 0
        if self._reload_pending and not in_transaction:
            self.load_all()
        mine = {seq: change for seq, change in zip(own.seqs, own.changes)} if own is not None else {}
        horizon, rows = store.changes_after(self.seq)
        if horizon > self.seq:
            if in_transaction:
                self._reload_pending = True
                self._reload_locked(frame)
                return 0
            self.load_all()
            return 0
        changes: list[Change] = []
        reload = False
        for seq, pack, ns, kind, data, origin in rows:
            if kind == changelog.RELOAD:
                reload = True
            elif seq in mine:
                changes.append(Change(seq, *mine[seq]))
            elif pack in self.mirrors and (ns in self.held or not all(m.per_namespace
                                                                        for _, m in self.mirrors[pack])):
                try:
                    changes.append(Change(seq, pack, ns, kind, store.decode(data), followed=True))
                except Exception:  # noqa: BLE001 - data this process cannot read: rebuild from the tables
                    log.exception("change %d of %s (%s) cannot be decoded; reloading the mirrors", seq, pack, kind)
                    reload = True
        if rows:
            self.seq = rows[-1][0]
        failed = self._feed(changes, set())
        if reload or failed:
            if in_transaction:
                self._reload_pending = True
                self._reload_locked(frame)
            else:
                self.load_all()
        return len(changes)

    def idle(self) -> bool:
        """A chunk of each mirror's deferred work (``Mirror.idle``); True while some remains."""
        more = False
        for _, mirror in self._everything():
            try:
                more = mirror.idle() or more
            except Exception:  # noqa: BLE001 - deferred work is an optimisation: the mirror stays as it is
                log.exception("deferred work of a mirror failed")
        return more

    def _reload_locked(self, frame: Frame | None) -> None:
        """Inside a write transaction that met a change it cannot apply (a ``_reload``: an import; a pruned log):
        load again, through the transaction, the held namespaces whose write lock it holds, so the call starts from
        their newest committed state (issue 41: a follower's ``memory.remember`` right after another process's
        import ran on the namespace's mirrors as they were before it, and linked none of the imported entities its
        note named). Nobody else can be writing them, so their tables and the log's head agree; the other
        namespaces and the process-wide mirrors load once the transaction has ended (``_reload_pending``)."""
        if frame is None or not frame.began:
            return
        locked = [ns for ns in self.held if ns in frame.locked]
        if not locked:
            return
        head = self._rt.store.head()
        for ns in locked:
            for owner, mirror in self._per_ns():
                mirror.evict(ns)
                self._load_one(owner, mirror, ns, frame)
            self.held[ns] = head

    def _feed(self, changes: list[Change], skip: set[str]) -> list[tuple[str, Mirror]]:
        """Give each pack's mirrors its changes (in order); returns the mirrors that failed (to be reloaded)."""
        by_owner: dict[str, list[Change]] = {}
        for change in changes:
            by_owner.setdefault(change.pack, []).append(change)
        failed = []
        for owner, mine in by_owner.items():
            if owner in skip:
                continue
            for name, mirror in self.mirrors.get(owner, ()):
                feed = mine
                if mirror.per_namespace:  # only namespaces held, and only what their load did not include
                    feed = [c for c in mine if c.namespace in self.held and c.seq > self.held[c.namespace]]
                    if not feed:
                        continue
                try:
                    mirror.apply(feed)
                except Exception:  # noqa: BLE001 - the data is committed: rebuild the mirror from it
                    log.exception("mirror %s.%s failed to apply changes %d-%d; reloading it", owner, name,
                                  mine[0].seq, mine[-1].seq)
                    failed.append((owner, mirror))
        return failed

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
                                     lambda ctx, s=sub, p=payload: s.handler(p, ctx), follow_events=False,
                                     namespace_lock=sub.namespace_lock)
                if frame is not None:
                    queue.extend(frame.events)

    def run_own(self, pack: str, label: str, namespace: str, actor: str | None,
                body: Callable[[Context], None], *, follow_events: bool = True,
                namespace_lock: bool = True) -> Frame | None:
        """Run ``body(ctx)`` for ``pack`` in a write transaction of its own, commit it and feed its changes
        (on a shared store under the namespace's write lock, unless ``namespace_lock`` is False).

        Returns the finished frame, or None when ``body`` failed (logged, rolled back): a subscriber's or a
        closing mirror's failure never fails anything else."""
        rt = self._rt
        frame = Frame(read_only=False)
        with rt._lock:
            try:
                if namespace_lock:
                    rt.lock_namespace(frame, namespace)
                body(Context(rt, pack, label, namespace, frame, 0, actor, read_only=False))
                rt.commit(frame)
            except Exception as exc:  # noqa: BLE001
                if frame.began and rt.store is not None:
                    rt.store.rollback_quietly()
                if isinstance(exc, (OSError, StorageError)):  # the machine's, not the code's (a full disk at a
                    # close's snapshot write, issue 46): one line, no traceback printed after a command that succeeded
                    log.warning("%s could not finish: %s (nothing committed is lost: what it would have written "
                                "is derived, and made again when needed)", label, exc)
                else:
                    log.exception("%s failed", label)
                return None
            self._after_commit(frame)
        if follow_events and frame.events:
            self._deliver(frame.events)
        return frame


def releases(mirror: Mirror) -> bool:
    """Whether a per-namespace mirror keeps something only in memory (overrides ``release``)."""
    return type(mirror).release is not Mirror.release


def release_freed_memory() -> None:
    """Hand back to the OS what building the mirrors allocated and freed again (fetched rows, temporary
    arrays): glibc's malloc keeps it otherwise, and a process that opened a large store would stay that big."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to do
        pass

"""The mirror seam: in-memory state derived from the store, fed only with committed changes (ADR 0015).

A pack declares its per-runtime state as a class (``Pack(state=MemoryState)``); every attribute of that state
that is a :class:`Mirror` is driven by the runtime:

- ``load(ctx)`` when the runtime opens the store (and again whenever the mirror may have drifted): make the
  mirror equal to what the store holds now, read through ``ctx`` (read-only, committed data only);
- ``apply(changes)`` after each commit that recorded changes of the mirror's pack, in commit order. A handler
  records what it changed with ``ctx.record_change(kind, data)``; a rolled-back call feeds nothing;
- ``close(ctx)`` when the runtime closes, the store still open (``ctx.call`` may write, e.g. a buffer flush).

The change record names its pack, namespace, kind and a sequence number given at commit, so the same records
could later arrive from another process's commits (a shared store) without the mirrors changing shape.

A mirror whose data is kept per namespace says so (``per_namespace = True``): the runtime then loads a namespace
at its first use (``load(ctx, namespace)``), feeds it only the changes of namespaces it holds, committed after
that namespace's load, writes what it keeps only in memory (``release(ctx, namespace)``) and drops it
(``evict(namespace)``) when the held namespaces' summed ``size_bytes`` exceed ``runtime.mirror_budget_mb``
(least recently used first). A mirror that holds something not per namespace (embedding models, tunables, a
buffer of pending serves) keeps ``per_namespace = False`` and is loaded once, at open (ADR 0016).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from palimpsest_memory.runtime.dispatch import Context


@dataclass(frozen=True, slots=True)
class Change:
    """One committed change, as a mirror receives it.

    ``seq`` grows with every committed change of this runtime (commit order); ``data`` is whatever the
    recording handler passed, owned by the mirror from now on (recorders must not mutate it after commit).
    """

    seq: int
    pack: str
    namespace: str
    kind: str
    data: Any = None
    followed: bool = False  # committed by another process (read from the change log), not by this one


class Mirror:
    """Base class of an in-memory mirror of part of a pack's tables. Override what the mirror needs."""

    per_namespace = False  # True: the runtime loads, follows and evicts this mirror one namespace at a time

    def load(self, ctx: "Context", namespace: str | None = None) -> None:
        """Rebuild from the store's committed state. A per-namespace mirror gets the namespace to (re)build
        (``ctx.namespace`` is that namespace too) and must leave the others it holds as they are."""

    def idle(self) -> bool:
        """Work the mirror deferred while following other processes (e.g. an index's graph inserts), done a chunk
        at a time when the runtime's follower is idle; returns whether some remains (then it is called again)."""
        return False

    def apply(self, changes: Sequence[Change]) -> None:
        """Take committed changes of this pack, in commit order; ignore kinds this mirror does not hold."""

    def close(self, ctx: "Context") -> None:
        """The runtime is closing and the store is still open: write what is kept only in memory."""

    def release(self, ctx: "Context", namespace: str) -> None:
        """Per-namespace mirrors: the namespace is about to be dropped (evicted, or the runtime closes), the store
        still open: write what is kept only in memory for it (runs in a write transaction in that namespace)."""

    def evict(self, namespace: str) -> None:
        """Per-namespace mirrors: forget everything held for ``namespace`` (the next use loads it again)."""

    def size_bytes(self, namespace: str) -> int:
        """Per-namespace mirrors: about how many bytes ``namespace`` holds (the budget compares their sum)."""
        return 0

    def digest(self) -> Any:
        """A comparable summary of what the mirror holds: a mirror kept up to date by ``apply`` and one just
        built by ``load`` over the same store must give equal digests (the consistency tests compare them)."""
        raise NotImplementedError(f"{type(self).__name__} does not describe its content")


class NoState:
    """The state of a pack that declares none."""


def mirrors_of(state: Any) -> list[tuple[str, Mirror]]:
    """``(attribute, mirror)`` of a state object, in declaration order (dataclass fields first)."""
    names = [f.name for f in dataclasses.fields(state)] if dataclasses.is_dataclass(state) else []
    names += [n for n in vars(state) if n not in names] if hasattr(state, "__dict__") else []
    return [(n, getattr(state, n)) for n in names if isinstance(getattr(state, n, None), Mirror)]

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


class Mirror:
    """Base class of an in-memory mirror of part of a pack's tables. Override what the mirror needs."""

    def load(self, ctx: "Context") -> None:
        """Rebuild from the store's committed state (a mirror may also just forget and rebuild lazily)."""

    def apply(self, changes: Sequence[Change]) -> None:
        """Take committed changes of this pack, in commit order; ignore kinds this mirror does not hold."""

    def close(self, ctx: "Context") -> None:
        """The runtime is closing and the store is still open: write what is kept only in memory."""

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

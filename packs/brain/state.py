"""The brain's per-runtime state (``Pack(state=BrainState)``): the serves not yet written, and the bindings.

Both are :class:`~palimpsest_memory.runtime.mirror.Mirror` s, fed only with committed changes (``ctx.record_change``):

- ``serves`` — each recall's served notes and components, kept in memory until ``serve_flush_every`` are
  pending or the runtime closes (``close`` calls ``brain.flush_serves``). Change kinds: ``serve``
  ``(recall_id, Serve)`` kept; ``flushed`` ``[recall_id, ...]`` written or dropped.
- ``bindings`` — the ``brain.bindings`` table (namespace, actor → profile), so that the profile a recall was
  served with is known without SQL on every recall. Change kind ``binding`` ``(actor, profile | None)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional, Sequence

from palimpsest_memory.runtime.mirror import Change, Mirror

NAMESPACE_ACTOR = "*"  # the binding of the namespace itself
COLUMNS = ("relevance", "effective_salience", "recency")  # the brain.serves list columns of the score components
WEIGHTS = ("relevance", "salience", "temporal")  # the score weights a serve records, in its *_weight columns


@dataclass(frozen=True)
class Serve:
    """What feedback on a recall needs, and no more (issue 16.13): no query text, no scores."""

    namespace: str
    actor: Optional[str]  # who the recall was made for
    profile: str  # the profile whose weights ranked it
    served_at: datetime
    weights: tuple[float, float, float]  # the score weights the recall ranked with, in WEIGHTS order
    note_ids: list[int]
    features: dict[str, list[float]]  # COLUMNS -> one value per served note, in rank order


class PendingServes(Mirror):
    """recall_id → :class:`Serve`, for the serves of this runtime not yet written (insertion-ordered)."""

    def __init__(self) -> None:
        self.pending: dict[str, Serve] = {}

    def load(self, ctx: Any) -> None:
        """Nothing to read: these serves are exactly the ones the store does not hold yet, so a reload (after a
        caught nested failure) keeps them rather than losing them."""

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            if change.kind == "serve":
                recall_id, serve = change.data
                self.pending[recall_id] = serve
            elif change.kind == "flushed":
                for recall_id in change.data:
                    self.pending.pop(recall_id, None)

    def close(self, ctx: Any) -> None:
        if self.pending:
            ctx.call("brain.flush_serves", {})

    def digest(self) -> Any:
        """The pending serves are by definition not in the store, so a fresh load (which starts empty) has
        nothing to agree with them on: the digest covers no content."""
        return ()


class Bindings(Mirror):
    """``(namespace, actor) → profile`` of ``brain.bindings``; actor ``*`` is the namespace's own binding."""

    def __init__(self) -> None:
        self.profiles: dict[tuple[str, str], str] = {}

    def load(self, ctx: Any) -> None:
        rows = ctx.db.query("SELECT namespace, actor, profile FROM brain.bindings")
        self.profiles = {(ns, actor): profile for ns, actor, profile in rows}

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            if change.kind == "binding":
                actor, profile = change.data
                if profile is None:
                    self.profiles.pop((change.namespace, actor), None)
                else:
                    self.profiles[(change.namespace, actor)] = profile

    def serving(self, namespace: str, actor: Optional[str], default: str) -> str:
        """The profile whose weights recall ranks with for ``actor``: its binding, else the namespace's, else
        ``default`` (``store.resolve`` without a named profile, from committed bindings)."""
        if actor is not None and (namespace, actor) in self.profiles:
            return self.profiles[(namespace, actor)]
        return self.profiles.get((namespace, NAMESPACE_ACTOR), default)

    def digest(self) -> Any:
        return sorted(self.profiles.items())


@dataclass
class BrainState:
    serves: PendingServes = field(default_factory=PendingServes)
    bindings: Bindings = field(default_factory=Bindings)

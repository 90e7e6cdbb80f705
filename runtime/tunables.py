"""The tunables: per-namespace (and per-actor) numbers a pack declares (``Pack(tunables=)``) and another pack sets
through the runtime (the brain sets the memory score weights). Kept in a runtime-owned table and mirrored in memory,
so every call reads its weights without a query.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from palimpsest_memory.runtime import storage
from palimpsest_memory.runtime.dispatch import NAMESPACE_LEVEL, Context, check_actor
from palimpsest_memory.runtime.errors import InvalidParams, ReadOnlyViolation
from palimpsest_memory.runtime.mirror import Change, Mirror

if TYPE_CHECKING:
    from palimpsest_memory.runtime.registry import Catalog

RUNTIME_OWNER = "_runtime"  # the owner name of the runtime's own mirror (not a pack name: packs cannot start with _)


class Tunables(Mirror):
    """The tunables table, in memory: every call reads its pack's weights from here."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str, str, str], float] = {}

    def load(self, ctx: Context) -> None:
        rows = ctx.db.query(f"SELECT namespace, actor, pack, name, value FROM {storage.META_SCHEMA}.tunables")
        self.values.clear()
        self.values.update({(ns, a, p, n): v for ns, a, p, n, v in rows})

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            key, value = change.data
            if value is None:
                self.values.pop(key, None)
            else:
                self.values[key] = value

    def digest(self) -> Any:
        return sorted(self.values.items())


def write(catalog: "Catalog", ctx: Context, target: str, value: float | None, actor: str | None, now: Any) -> None:
    """Write (or, for ``value=None``, delete) one tunable row of ``ctx.namespace`` and ``actor`` ('*' if None); the
    change reaches every process's :class:`Tunables` through the change log."""
    pack, sep, name = target.partition("::")
    declared = catalog.packs[pack].tunables if pack in catalog.packs else {}
    if not sep or name not in declared:
        known = sorted(f"{p.name}::{n}" for p in catalog.packs.values() for n in p.tunables)
        raise InvalidParams(f"no tunable named {target!r}", verb=ctx.verb, details={"known": known})
    level = NAMESPACE_LEVEL if actor is None else check_actor(actor, ctx.verb)
    low, high = declared[name]
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise InvalidParams(f"tunable {target} must lie in [{low}, {high}], got {value}", verb=ctx.verb)
    if ctx.read_only:
        raise ReadOnlyViolation(f"{ctx.verb} is read-only and cannot set tunables", verb=ctx.verb)
    key = (ctx.namespace, level, pack, name)
    changes = ctx._frame.changes
    if value is None:
        ctx.db.execute(f"DELETE FROM {storage.META_SCHEMA}.tunables WHERE namespace = ? AND actor = ? AND "
                       "pack = ? AND name = ?", list(key))
        changes.append((RUNTIME_OWNER, ctx.namespace, "tunable", (key, None)))
        return
    ctx.db.execute(
        f"INSERT INTO {storage.META_SCHEMA}.tunables VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, actor, "
        "pack, name) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, "
        "updated_at = excluded.updated_at",
        [*key, float(value), ctx.verb, now],
    )
    changes.append((RUNTIME_OWNER, ctx.namespace, "tunable", (key, float(value))))

"""Hooks the kg pack offers to other packs."""
from __future__ import annotations

from typing import Any

from palimpsest_memory.runtime import hookspec


@hookspec
def kg_missing_nodes(ctx: Any, prefix: str, ids: list[str]) -> list[str] | None:
    """Which of ``ids`` (node ids ``<prefix><id>``, the part after the prefix) do not exist in ``ctx.namespace``; None
    for a prefix the implementing pack does not own.

    kg owns ``e:`` and ``f:``; the memory pack owns ``m:`` (its notes). kg.link / link_many ask before they write,
    so an edge never dangles from a node of another namespace or of none. ``ctx`` is the kg call's context: the
    implementation reads its own pack's tables through ``ctx.db``, inside the same transaction (so a note
    remembered earlier in the transaction exists). A prefix nobody owns is not checked.
    """

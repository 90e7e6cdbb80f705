"""The memory pack owns the kg's ``m:<note id>`` nodes: kg.link asks it which notes exist (``kg_missing_nodes``),
so no edge points at another namespace's note or at none."""
from __future__ import annotations

from typing import Any

from palimpsest_memory.runtime import hookimpl

NOTE_PREFIX = "m:"


@hookimpl
def kg_missing_nodes(ctx: Any, prefix: str, ids: list[str]) -> list[str] | None:
    if prefix != NOTE_PREFIX:
        return None
    numeric = sorted({int(i) for i in ids if i.isdigit() and len(i) <= 18})
    found = {str(r[0]) for r in ctx.db.query(
        "SELECT id FROM memory.notes WHERE namespace = ? AND id IN (SELECT unnest(?::BIGINT[]))",
        [ctx.namespace, numeric])} if numeric else set()
    return [i for i in ids if i not in found]

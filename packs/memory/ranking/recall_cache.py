"""What recall derives from a namespace's index and keeps between recalls (issue 18: the fixed cost of a recall).

What a recall used to recompute every time, though it changes only when the index does:

- the **filter mask** over the index's slots (namespace, alive, not superseded, and the call's filters): one per
  distinct filter set, the last few kept;
- a scope's **BM25 statistics** (``bm25_scope.Collection``) for recalls with that scope, the last few kept;
- each note's **own information** ``I`` (``BM25Index.own_information``, the information prior of ADR 0008):
  kept per slot as it is first asked for, stamped with the index version it was computed at, so a recall
  computes it only for the pooled notes no earlier recall pooled since the last write.

All are valid while ``MemoryIndex.version`` holds: every write to the index (``add``, ``forget``, the
``set_*`` edits, new vectors, a re-inferred episode) bumps it, and the index changes only through the mirror seam
(ADR 0015: ``mirrors/index.py``: ``take`` applies each committed change), so a cached value never outlives the state it
was derived from. ``I`` depends on every note (``idf`` reads the document count and each term's document
frequency), so any write forgets all of it; a recall right after a write computes its pooled notes' ``I`` as
before, and only the notes later recalls pool again are read from the cache. The numbers are the same either
way: ``own_information`` sums each note's terms in term order whichever notes it is asked for together.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from palimpsest_memory.packs.memory.engine.bm25_scope import Collection
from palimpsest_memory.packs.memory.engine.index import Allowed, MemoryIndex

MASKS = 8  # distinct filter sets kept per index (a session's recalls mostly share one or two)


def _valid(index: MemoryIndex) -> dict[str, Any]:
    """The index's masks, emptied when the index changed since they were derived."""
    d: dict[str, Any] = index.derived.setdefault("masks", {})
    if d.get("version") != index.version or d.get("bm25") is not index.bm25:
        d.clear()
        d.update(version=index.version, bm25=index.bm25)
    return d


def filter_key(namespace: str, filters: Any) -> tuple:
    """A hashable key for a namespace and a ``RecallFilters`` (every field: they all select)."""
    return (namespace, *((k, tuple(v) if isinstance(v, list) else v) for k, v in filters.__dict__.items()))


def allowed(index: MemoryIndex, namespace: str, filters: Any) -> Allowed:
    """The recall mask of ``namespace`` and ``filters`` over the index's slots (``.mask``, read-only) and the
    legs' view of it, computed once per filter set and index version."""
    d = _valid(index)
    masks: dict[tuple, Allowed] = d.setdefault("by_filter", {})
    key = filter_key(namespace, filters)
    a = masks.get(key)
    if a is None:
        m = index.mask(namespace, filters)
        m.flags.writeable = False
        if len(masks) >= MASKS:
            masks.pop(next(iter(masks)))
        a = masks[key] = index.allowed(m)
    return a


def collection(index: MemoryIndex, namespace: str, scope: str | None) -> Collection | None:
    """The BM25 statistics of ``scope``'s notes (``bm25_scope.py``: its counts are kept as notes are written, its
    terms' ``df`` counted as queries ask), one per index version, the last few kept; None without a scope or when
    the scope holds every note of the index (its own statistics are then the same)."""
    if scope is None:
        return None
    d = _valid(index)
    kept: dict[str, Collection | None] = d.setdefault("collections", {})
    if scope not in kept:
        ns, code = index.namespaces.get(namespace, create=False), index.scopes.get(scope, create=False)
        if len(kept) >= MASKS:
            kept.pop(next(iter(kept)))
        kept[scope] = index.bm25.collection(int(index.scope_group(ns, code)))
    return kept[scope]


def information(index: MemoryIndex, ids: np.ndarray) -> np.ndarray:
    """``index.bm25.own_information(ids)``, each note's value kept per slot until the index changes.

    The values live in a column by slot with, beside each, the index version it was computed at (a value from an
    older version is not read): a write costs nothing here, however large the index (no column to clear), and a
    recall after it computes its notes' values again."""
    ids = np.asarray(ids, dtype=np.int64)
    slots = index.slots(ids)
    keep = index.derived.get("information")  # outside the per-version values: it survives a write, stamped
    if keep is None or keep[0].size < index.slot_id.size or keep[2] is not index.bm25:
        size = index.slot_id.size
        values, stamps = np.zeros(size, dtype=np.float64), np.full(size, -1, dtype=np.int64)
        if keep is not None and keep[2] is index.bm25:
            values[: keep[0].size], stamps[: keep[1].size] = keep[0], keep[1]
        keep = index.derived["information"] = (values, stamps, index.bm25)
    values, stamps, _ = keep
    out = values[slots]
    miss = (stamps[slots] != index.version) | (slots == 0)  # slot 0 holds no note: never kept
    if miss.any():
        got = index.bm25.own_information(ids[miss])
        out[miss] = got
        known = slots[miss] > 0
        values[slots[miss][known]] = got[known]
        stamps[slots[miss][known]] = index.version
    return out

"""Shared helpers for the brain tests (imported by module name: tests use --import-mode=importlib)."""
from __future__ import annotations

from datetime import datetime, timedelta
from store_support import HASHING, Clock, snapshot  # noqa: E402,F401

NOW = datetime(2026, 3, 2, 12, 0, 0)
QUERY = "Orion Postgres migration"
DEFAULT_WEIGHTS = {"relevance": 0.70, "salience": 0.20, "temporal": 0.10}


def remember(rt, content: str, **kw) -> int:
    return rt.call("memory.remember", {"content": content, **kw}).note.id


def pair(rt, namespace: str | None = None) -> tuple[int, int]:
    """``relevant`` matches the query best but is old and unimportant; ``fresh`` is a weak match, recent, salient."""
    ns = {"namespace": namespace} if namespace else {}
    relevant = remember(rt, "Orion Postgres migration: the Orion Postgres migration runbook", salience=0.05,
                        occurred_at=(NOW - timedelta(days=300)).isoformat(), **ns)
    fresh = remember(rt, "Postgres was mentioned in passing", salience=0.95,
                     occurred_at=(NOW - timedelta(hours=1)).isoformat(), **ns)
    return relevant, fresh


def recall(rt, query: str = QUERY, actor: str | None = None, **kw):
    return rt.call("memory.recall", {"query": query, "now": NOW.isoformat(), **kw}, actor=actor)


def order(rt, **kw) -> list[int]:
    return [h.note.id for h in recall(rt, **kw).results]


def weights_used(rt, **kw) -> dict[str, float]:
    return recall(rt, include_breakdown=True, **kw).results[0].breakdown.weights


def means(state) -> dict[str, float]:
    return {c: p.mean for c, p in state.posteriors.items()}

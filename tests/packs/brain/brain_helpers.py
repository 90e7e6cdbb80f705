"""Shared helpers for the brain tests (imported by module name: tests use --import-mode=importlib)."""
from __future__ import annotations

from datetime import datetime, timedelta

NOW = datetime(2026, 3, 2, 12, 0, 0)
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
QUERY = "Orion Postgres migration"
DEFAULT_WEIGHTS = {"relevance": 0.70, "salience": 0.20, "temporal": 0.10}


class Clock:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


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


def recall(rt, query: str = QUERY, **kw):
    return rt.call("memory.recall", {"query": query, "now": NOW.isoformat(), **kw})


def order(rt, **kw) -> list[int]:
    return [h.note.id for h in recall(rt, **kw).results]


def weights_used(rt, **kw) -> dict[str, float]:
    return recall(rt, include_breakdown=True, **kw).results[0].breakdown.weights


def snapshot(rt) -> dict[str, list]:
    """Every row of every table of every schema: what "writes nothing" is checked against."""
    tables = rt._con.execute("SELECT schema_name, table_name FROM duckdb_tables() ORDER BY 1, 2").fetchall()
    return {f"{s}.{t}": sorted(map(repr, rt._con.execute(f'SELECT * FROM "{s}"."{t}"').fetchall()))
            for s, t in tables}


def means(state) -> dict[str, float]:
    return {c: p.mean for c, p in state.posteriors.items()}

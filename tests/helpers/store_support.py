"""What the pack tests share: a fast test configuration, a settable clock, and a whole-store snapshot."""
from __future__ import annotations

from datetime import datetime
from typing import Any

T0 = datetime(2026, 3, 2, 10, 0, 0)  # where the memory tests' clock starts
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}  # the deterministic test embedder: fast, no model load
# For tests about the legs alone: notes remembered without a thread are not linked into inferred episodes, so
# no neighbour joins the pool through context smoothing (ADR 0008).
NO_EPISODES = {"episode_gap_minutes": 0.0}
HASHING_NO_EPISODES = {"packs": {"memory": {"embedder": "hashing", "context": NO_EPISODES}}}


class Clock:
    """A settable clock for a runtime (``Runtime.open(..., clock=Clock(t))``; move it with ``clock.now = …``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def snapshot(rt: Any) -> dict[str, list]:
    """Every row of every table of every schema: what "writes nothing" is checked against."""
    tables = rt.store.con.execute("SELECT schema_name, table_name FROM duckdb_tables() ORDER BY 1, 2").fetchall()
    return {f"{s}.{t}": sorted(map(repr, rt.store.con.execute(f'SELECT * FROM "{s}"."{t}"').fetchall()))
            for s, t in tables}

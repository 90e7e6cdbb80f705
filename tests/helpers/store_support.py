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


CHANGE_LOG = {"_palimpsest.changes", "_palimpsest.change_horizon"}


def snapshot(rt: Any) -> dict[str, list]:
    """Every row of every table of the store's schemas (the loaded packs' and the runtime's), on either backend:
    what "writes nothing" is checked against. Read under the runtime's lock (a follower thread shares the
    connection on PostgreSQL). Not the change log (PostgreSQL): it is how committed changes reach other processes,
    written in the same transaction as the tables it describes, so a call that wrote no table can leave a row
    there only when it committed mirror-only state (a recall's serve record, ADR 0016); its rows are checked by
    the shared-store and killed-writer tests."""
    schemas = sorted(rt.catalog.packs) + ["_palimpsest"]
    with rt._lock:
        con = rt.store.con
        tables = con.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = "
                             "'BASE TABLE' AND table_schema IN (SELECT unnest(?::VARCHAR[])) ORDER BY 1, 2",
                             [schemas]).fetchall()
        return {f"{s}.{t}": sorted(map(repr, con.execute(f'SELECT * FROM "{s}"."{t}"').fetchall()))
                for s, t in tables if f"{s}.{t}" not in CHANGE_LOG}

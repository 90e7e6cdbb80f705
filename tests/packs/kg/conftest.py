from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from palimpsest_memory.packs.kg import pack as kg_pack_module


class Clock:
    """A controllable transaction-time clock: each tick() moves it one day."""

    def __init__(self) -> None:
        self.now = datetime(2024, 1, 1)

    def __call__(self) -> datetime:
        return self.now

    def tick(self, days: int = 1) -> datetime:
        self.now += timedelta(days=days)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def kg(make_pal_runtime, clock):
    return make_pal_runtime(kg_pack_module, clock=clock)


def counts(rt) -> dict[str, int]:
    con = rt.store.con
    return {t: con.execute(f"SELECT count(*) FROM kg.{t}").fetchone()[0]
            for t in ("entities", "entity_keys", "facts", "fact_sources", "edges", "predicates", "centrality")}

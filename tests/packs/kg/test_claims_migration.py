"""Migration 003 (ADR 0006, issue 15): facts stored before claims existed become one claim each."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb

SQL = Path(__file__).resolve().parents[3] / "packs" / "kg" / "sql"


def test_every_current_non_empty_fact_becomes_one_claim_of_its_own_interval():
    con = duckdb.connect()
    con.execute("CREATE SCHEMA kg")
    for name in ("001_init.sql", "002_drop_entity_revisions.sql"):
        con.execute((SQL / name).read_text())
    t, y = datetime(2024, 1, 1), lambda n: datetime(n, 1, 1)
    rows = [  # version, fact, object, from, to, source, retracted_at
        (1, 1, "Meta", y(2020), None, None, t),              # closed version: not a claim
        (2, 1, "Meta", y(2020), y(2023), "successor", None),  # an end inferred from a successor: open claim
        (3, 2, "Google", y(2023), y(2025), "explicit", None),  # its own end
        (4, 3, "Amazon", y(2020), y(2020), "successor", None),  # empty: held nowhere, no claim
    ]
    for vid, fid, obj, vf, vt, src, retracted in rows:
        con.execute("INSERT INTO kg.facts VALUES (?, ?, 'ns', 1, 'Alice', 'works_at', NULL, ?, ?, ?, ?, ?, NULL, "
                    "false, 0.9, 0.9, 1, NULL, ?, ?, ?, NULL)", [vid, fid, obj, obj, vf, vt, src, t, t, retracted])
    con.execute((SQL / "003_claims.sql").read_text())
    got = con.execute("SELECT object_value, valid_from, valid_to, confidence, retracted_at FROM kg.claims "
                      "ORDER BY object_value").fetchall()
    assert got == [("Google", y(2023), y(2025), 0.9, None), ("Meta", y(2020), None, 0.9, None)]
    assert con.execute("SELECT nextval('kg.claim_seq')").fetchone()[0] == 3  # new claims come after them

"""Crash safety (issue 9): SIGKILL a bulk ingest at random moments, reopen the file, and check it.

A child process (crash_child.py) opens a store file and loops ``kg.assert_facts`` / ``memory.remember_many``
batches, printing an acknowledgement after each call returned. The parent kills it (while it opens the store,
right after it is ready, or a random moment after its k-th acknowledgement; half the runs with a 64 KB WAL
checkpoint threshold so kills also land in checkpoints), reopens the file and checks: it opens; the migrations
recorded are the shipped ones and the tables are a fresh store's; every acknowledged note and fact is there,
verbatim; no half-written call (a batch is all there or not at all; no vector without its note or note without
its vector, no fact without its entities, no edge with a missing end, …); the indexes rebuilt on open agree
with the tables, and recalling an acknowledged note's exact content finds it. Each chain of runs reuses its
file, resuming after the last acknowledged batch, so stores recovered from a crash are crashed again and a
batch that committed without its acknowledgement is replayed (its keys must make it a no-op).
The long version is ``bench/crash.py``.
"""
import os
import sys

import pytest

from rel_support import crash_campaign

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

CHAINS, RUNS = 2, 10  # 20 kills


def test_sigkill_during_bulk_ingest_loses_nothing_acknowledged_and_half_writes_nothing(tmp_path):
    seed = int(os.environ.get("PALIMPSEST_CRASH_SEED", "20260309"))
    records = crash_campaign(tmp_path, chains=CHAINS, runs=RUNS, seed=seed, workers=2)
    broken = [r for r in records if r.problems]
    assert not broken, "\n".join(f"chain {r.chain} run {r.run} ({r.mode}, +{r.delay}s, from batch {r.start_batch}): "
                                 f"{r.problems}" for r in broken)
    assert len(records) == CHAINS * RUNS
    # the harness really killed ingests in flight: most runs acknowledged writes before dying
    assert sum(r.acked_batches > 0 for r in records) >= CHAINS * RUNS // 2


def test_the_checks_catch_a_half_written_store(tmp_path):
    """The verifier is not vacuous: damage a sound store the way a torn write would, and it says so."""
    import random

    from rel_support import Acked, HASHING, ISOLATED_ENV, crash_batch, fresh_schema_shape, verify_store
    from palimpsest_memory.runtime import Runtime

    db, shape = tmp_path / "s.duckdb", fresh_schema_shape()
    acked = Acked()
    with Runtime.open(db, config=HASHING, env=ISOLATED_ENV) as rt:
        for b in range(4):
            verb, ns, params = crash_batch("c9", b)
            res = rt.call(verb, params, namespace=ns)
            msg = {"batch": b, "ids": getattr(res, "ids", None),
                   "fact_ids": [o.fact_id for o in res.outcomes] if hasattr(res, "outcomes") else None}
            acked.add("c9", msg)
    assert verify_store(db, "c9", acked, random.Random(0), shape) == []
    damage = {
        "DELETE FROM memory.vectors WHERE note_id = (SELECT min(note_id) FROM memory.vectors)": "without its hashing",
        "DELETE FROM memory.notes WHERE id = (SELECT max(id) FROM memory.notes)": "acknowledged note",
        "DELETE FROM kg.entities WHERE id = (SELECT min(subject_id) FROM kg.facts)": "without its subject entity",
        "DELETE FROM _palimpsest.migrations WHERE pack = 'brain'": "migration",
    }
    for sql, expected in damage.items():
        copy = tmp_path / f"damaged{len(expected)}.duckdb"
        copy.write_bytes(db.read_bytes())
        import duckdb

        con = duckdb.connect(str(copy))
        con.execute(sql)
        con.close()
        problems = verify_store(copy, "c9", acked, random.Random(0), shape)
        assert any(expected in p for p in problems), (sql, problems)

"""A store written before every pack table was keyed by namespace (issue 41 item 8) upgrades on open.

The old layout is built by applying only the migrations the packs had before (memory up to 006, kg up to 004, brain
up to 003): each pack's ``migrations`` folder is pointed at a copy holding only those files. Its rows are written
in SQL in the old layout (today's code writes the new one: vectors with a namespace, for one), then the store is
opened with every migration, and what was there is recalled, listed and written again.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from palimpsest_memory.packs.brain.core import pack as brain_pack
from palimpsest_memory.packs.kg.core import pack as kg_pack
from palimpsest_memory.packs.memory.core import pack as memory_pack
from palimpsest_memory.packs.memory.engine.embedders import get_embedder
from palimpsest_memory.packs.memory.engine.index_writes import index_text

pytestmark = pytest.mark.both_backends

OLD = {memory_pack: 6, kg_pack: 4, brain_pack: 3}  # the schema versions before 007/005/004_namespace_keys
CONFIG = {"packs": {"memory": {"embedder": "hashing", "cjk_embedder": ""}}}
T0 = datetime(2026, 1, 5, 9, 0, 0)
NOTES = [(1, "default", "Alice adopted a grey cat named Miso in March"),
         (2, "team:b", "The quarterly budget review is on Friday"),
         (3, "default", "Carol moved to Lisbon last year"),
         (4, "default", "Bob prefers tea over coffee")]  # 4 is forgotten: no row, a tombstone


def _old_migrations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for pack, newest in OLD.items():
        folder = tmp_path / f"sql_{pack.name}"
        folder.mkdir()
        for f in sorted(pack.migrations.iterdir()):
            if f.suffix == ".sql" and int(f.name[:3]) <= newest:
                shutil.copy(f, folder / f.name)
        monkeypatch.setattr(pack, "migrations", folder)


def _write_old_rows(con) -> None:  # type: ignore[no-untyped-def]
    embedder = get_embedder("hashing")
    for nid, ns, text in NOTES[:3]:
        con.execute("INSERT INTO memory.notes (id, namespace, content, memory_type, kind, kind_source, scope, thread, "
                    "tags, salience, decay_factor, occurred_at, created_at, source_id, key, properties) "
                    "VALUES (?, ?, ?, 'episodic', NULL, 'caller', NULL, NULL, ?, 0.5, 0.02, ?, ?, NULL, NULL, ?)",
                    [nid, ns, text, [], T0, T0, json.dumps({})])
        vec = embedder.embed([index_text(text, T0)])[0]
        # the old layout: (note_id, model, dim, vec), no namespace
        con.execute("INSERT INTO memory.vectors VALUES (?, ?, ?, ?)",
                    [nid, "hashing", int(vec.shape[0]), vec.tobytes()])
    con.execute("INSERT INTO memory.vectors VALUES (?, ?, ?, ?)", [99, "hashing", 1, b"\0\0\0\0"])  # its note is gone
    for seq, used in (("memory.note_ids", 4), ("kg.entity_seq", 1)):  # as the old code would have
        for _ in range(used):
            con.execute(f"SELECT nextval('{seq}')")
    con.execute("INSERT INTO memory.centrality VALUES (1, 'default', 1.0, ?)", [T0])
    con.execute("INSERT INTO memory.note_audit VALUES (7, 'default', 3, 'salience', '0.3', '0.5', NULL, ?)", [T0])
    for _ in range(2):  # the same note tombstoned twice (ids repeated in one call): one is kept
        con.execute("INSERT INTO memory.tombstones VALUES ('default', 4, ?, 'test', NULL)", [T0])
    con.execute("INSERT INTO kg.entities VALUES (1, 'default', 'Alice', 'person', ?, ?)", [T0, T0])
    for _ in range(2):  # the same source grounding the same fact twice at one instant: both rows kept
        con.execute("INSERT INTO kg.fact_sources VALUES ('default', 1, 'm:1', 0.8, ?)", [T0])
    for _ in range(2):  # a namespace forgotten twice at one instant: both kept
        con.execute("INSERT INTO kg.tombstones VALUES ('team:b', 'namespace', ?, 'test', NULL)", [T0])
    con.execute("INSERT INTO brain.events (seq, namespace, profile, kind, payload, created_at) "
                "VALUES (5, 'default', 'default', 'init', ?, ?)", [json.dumps({"prior": {}}), T0])


def test_a_store_of_the_old_layout_upgrades_and_recalls(make_pal_runtime, pal_backend, pal_store, tmp_path,
                                                        monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = pal_store() if pal_backend == "postgres" else str(tmp_path / "old.duckdb")
    with monkeypatch.context() as m:
        _old_migrations(tmp_path, m)
        old = make_pal_runtime(config=CONFIG, path=path)
        assert old.schema_versions() == {"memory": 6, "kg": 4, "brain": 3}
        old.store.con.execute("BEGIN TRANSACTION")
        _write_old_rows(old.store.con)
        old.store.con.execute("COMMIT")
        old.close()
    rt = make_pal_runtime(config=CONFIG, path=path)
    assert rt.schema_versions() == {"memory": 8, "kg": 5, "brain": 4}

    def q(sql: str) -> list:  # type: ignore[type-arg]
        return [tuple(r) for r in rt.store.con.execute(sql).fetchall()]

    assert q("SELECT namespace, note_id, model FROM memory.vectors ORDER BY note_id") == [
        ("default", 1, "hashing"), ("team:b", 2, "hashing"), ("default", 3, "hashing")]
    assert q("SELECT namespace, note_id FROM memory.tombstones") == [("default", 4)]
    assert q("SELECT namespace, seq, note_id FROM memory.note_audit") == [("default", 7, 3)]
    assert q("SELECT namespace, note_id FROM memory.centrality") == [("default", 1)]
    assert q("SELECT namespace, id FROM kg.entities") == [("default", 1)]
    assert q("SELECT seq, source_id FROM kg.fact_sources ORDER BY seq") == [(1, "m:1"), (2, "m:1")]
    assert q("SELECT seq, ref FROM kg.tombstones ORDER BY seq") == [(1, "namespace"), (2, "namespace")]
    assert q("SELECT namespace, seq FROM brain.events") == [("default", 5)]

    assert [h.note.id for h in rt.call("memory.recall", {"query": "grey cat Miso"}).results][:1] == [1]
    assert [h.note.id for h in rt.call("memory.recall", {"query": "budget review"}, namespace="team:b").results] == [2]
    new = rt.call("memory.remember", {"content": "Dana has a grey cat as well"}).note.id
    assert new == 5  # ids go on from the old sequence
    assert q(f"SELECT namespace FROM memory.vectors WHERE note_id = {new}") == [("default",)]
    assert {h.note.id for h in rt.call("memory.recall", {"query": "grey cat"}).results} >= {1, new}
    rt.call("kg.assert_fact", {"subject": "Alice", "predicate": "owns", "object": "Miso", "source_id": "m:1"})
    assert q("SELECT max(seq) FROM kg.fact_sources") == [(3,)]
    rt.call("memory.forget", {"ids": [3], "reason": "test"})
    assert q("SELECT namespace, note_id FROM memory.tombstones ORDER BY note_id") == [("default", 3), ("default", 4)]

"""Export / import of a namespace (issue 17, item 4; ADR 0018): a varied store (the LoCoMo mini fixture, facts
with history and sources, note edges, beliefs, updates, a forget, feedback, a bound profile) exported and imported
into a fresh store under another namespace answers every read verb as before; bad files are typed errors naming
the line and write nothing; ids collide with a Conflict before anything is written."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest_memory.runtime import errors, exportfile
from palimpsest_memory.runtime.testing import open_test_runtime
from store_support import snapshot

ROOT = Path(__file__).resolve().parents[3]
MINI = ROOT / "tests" / "fixtures" / "locomo" / "locomo-mini.json"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
QUERIES = ["when did she go to the museum", "adoption agency", "painting a sunrise", "support group", "Paris"]


def open_rt(path: Path):  # type: ignore[no-untyped-def]
    return open_test_runtime(config=HASHING, discover=True, path=str(path))


def build(rt) -> None:  # type: ignore[no-untyped-def]
    rt.call("memory.import_file", {"path": str(MINI), "format": "locomo"}, internal=True)
    a = rt.call("memory.remember", {"content": "Ann moved to Paris in 2020", "tags": ["move"], "scope": "ann",
                                    "kind": "milestone"}).note.id
    b = rt.call("memory.remember", {"content": "Ann moved to Lisbon in 2023", "scope": "ann"}).note.id
    rt.call("memory.link", {"source_id": b, "target_id": a, "relation": "supports"})
    rt.call("kg.define_predicate", {"name": "lives_in", "cardinality": "one"})
    rt.call("kg.assert_fact", {"subject": "Ann", "predicate": "lives_in", "object": "Paris",
                               "valid_from": "2020-01-01", "source_id": f"m:{a}"})
    rt.call("kg.assert_fact", {"subject": "Ann", "predicate": "lives_in", "object": "Lisbon",
                               "valid_from": "2023-01-01", "source_id": f"m:{b}"})
    wrong = rt.call("kg.assert_fact", {"subject": "Ann", "predicate": "lives_in", "object": "Rome",
                                       "valid_from": "2021-06-01"}).fact.fact_id
    rt.call("kg.retract_fact", {"fact_id": wrong})
    rt.call("kg.upsert_entity", {"name": "Ann", "kind": "person", "aliases": ["Annie"]})
    rt.call("memory.upsert_belief", {"fact_key": "ann.city", "content": "Ann lives in Paris"})
    rt.call("memory.upsert_belief", {"fact_key": "ann.city", "content": "Ann lives in Lisbon"})
    rt.call("memory.update", {"id": a, "salience": 0.9, "tags": ["move", "paris"]})
    rt.call("memory.update", {"id": b, "content": "Ann moved to Lisbon in early 2023"})
    rt.call("memory.archive", {"ids": [1]})
    rt.call("memory.forget", {"ids": [2], "reason": "test"})
    rt.call("brain.profile", {"name": "tuned"})
    for q in QUERIES:
        served = rt.call("memory.recall", {"query": q})
        if served.results:
            rt.call("brain.feedback", {"recall_id": served.recall_id, "note_id": served.results[0].note.id,
                                       "signal": "useful"})


class Score(float):
    """A recall score that equals another within ``TOLERANCE``: scores decay with the clock, so the same ranking
    asked a moment later scores a little lower (rounding both to 6 places failed when the two straddled a
    rounding boundary: 0.9141505 ± a microsecond's decay)."""

    TOLERANCE = 1e-6

    def __eq__(self, other: object) -> bool:
        return isinstance(other, float) and abs(float(self) - float(other)) <= self.TOLERANCE

    __hash__ = float.__hash__


def answers(rt, ns: str) -> dict:  # type: ignore[no-untyped-def]
    """What every read verb says about the namespace (ids are preserved, so they compare as they are)."""
    call = lambda verb, p: rt.call(verb, p, namespace=ns).model_dump(mode="json")  # noqa: E731
    out = {f"recall {q}": [(h["note"]["id"], h["score"]) for h in call("memory.recall", {
        "query": q, "limit": 10})["results"]] for q in QUERIES}
    out["list"] = call("memory.list", {"include_archived": True, "include_superseded": True, "limit": 1000})
    out["count"] = call("memory.count", {})
    out["history"] = call("memory.history", {"id": 3})
    out["edges"] = call("memory.edges", {"memory_id": 3, "direction": "both"})
    out["beliefs"] = call("memory.belief_history", {"fact_key": "ann.city"})
    out["tombstones"] = call("memory.tombstones", {})
    out["facts"] = call("kg.facts", {"include_superseded": True})
    out["timeline"] = call("kg.fact_history", {"subject": "Annie", "predicate": "lives_in",
                                               "include_versions": True})
    out["known_at"] = call("kg.facts", {"subject": "Ann", "known_at": "2000-01-01"})
    out["entities"] = call("kg.entities", {})
    out["predicates"] = call("kg.predicates", {})
    out["resolve"] = call("kg.resolve", {"subject": "Ann", "predicate": "lives_in"})
    out["brain"] = call("brain.state", {})
    out = json.loads(json.dumps(out).replace(f'"{ns}"', '"<namespace>"'))  # the namespace itself is renamed
    for q in QUERIES:
        out[f"recall {q}"] = [(i, Score(s)) for i, s in out[f"recall {q}"]]
    return out


def test_a_namespace_round_trips_through_export_and_import(tmp_path) -> None:
    src = open_rt(tmp_path / "src.duckdb")
    try:
        build(src)
        before = answers(src, "default")
        out = io.StringIO()
        n = exportfile.export_namespace(src, out, "default")
    finally:
        src.close()
    text = out.getvalue()
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0]["format"] == "palimpsest-export" and lines[0]["version"] == 1 and lines[-1] == {
        "end": True, "records": n}
    types = {(r["pack"], r["type"]) for r in lines[1:-1]}
    assert {("memory", "note"), ("memory", "vector"), ("memory", "audit"), ("memory", "tombstone"),
            ("memory", "belief_version"), ("kg", "fact"), ("kg", "claim"), ("kg", "edge"), ("kg", "predicate"),
            ("kg", "entity_key"), ("brain", "event"), ("brain", "posterior"), ("brain", "serve")} <= types
    file = tmp_path / "export.jsonl"
    file.write_text(text)
    dst = open_rt(tmp_path / "dst.duckdb")
    try:
        exportfile.import_file(dst, file, "moved")
        after = answers(dst, "moved")
        for key in before:
            assert after[key] == before[key], key
        assert dst.call("memory.count", {}, namespace="default").count == 0
        new = dst.call("memory.remember", {"content": "after the import"}, namespace="moved").note.id
        assert new > max(n["id"] for n in before["list"]["notes"])  # the sequences moved past the imported ids
        with pytest.raises(errors.Conflict, match="empty"):  # a second import into the same namespace
            exportfile.import_file(dst, file, "moved")
        before_dup = snapshot(dst)
        with pytest.raises(errors.Conflict, match="already used"):  # same ids, another namespace: refused whole
            exportfile.import_file(dst, file, "again")
        assert snapshot(dst) == before_dup
    finally:
        dst.close()
    reopened = open_rt(tmp_path / "dst.duckdb")  # the mirrors rebuilt from the imported rows answer alike
    try:
        assert answers(reopened, "moved")["recall painting a sunrise"] == before["recall painting a sunrise"]
    finally:
        reopened.close()


@pytest.mark.parametrize("mangle, message", [
    (lambda ls: ls[:-1], "truncated"),
    (lambda ls: [ls[0], "{not json", *ls[1:]], ":2: not JSON"),
    (lambda ls: [json.dumps({"format": "palimpsest-export", "version": 99})] + ls[1:], "version 99"),
    (lambda ls: ls[:1] + [json.dumps({**json.loads(ls[1]), "type": "nonsense"})] + ls[2:], "nonsense"),
    (lambda ls: ls[:1] + [json.dumps({**json.loads(ls[1]), "data": {"id": "x"}})] + ls[2:], ":2: .*id must be"),
    (lambda ls: ls[:2] + [json.dumps({"pack": "nopack", "type": "x", "data": {}})] + ls[2:], ":3:"),
])
def test_a_bad_file_is_a_typed_error_naming_the_line_and_writes_nothing(tmp_path, mangle, message) -> None:
    rt = open_rt(tmp_path / "s.duckdb")
    try:
        rt.call("memory.remember", {"content": "one note"})
        out = io.StringIO()
        exportfile.export_namespace(rt, out)
        lines = out.getvalue().splitlines()
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(mangle(lines)) + "\n")
        before = snapshot(rt)
        with pytest.raises(errors.InvalidParams, match=message):
            exportfile.import_file(rt, bad, "target")
        assert snapshot(rt) == before
    finally:
        rt.close()


def test_pal_export_import_and_backup_restore_from_the_shell(tmp_path) -> None:
    pal = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]
    env_db = ["--db", str(tmp_path / "a.duckdb")]
    run = lambda *args: subprocess.run([*pal, *args], capture_output=True, text=True, cwd=ROOT,  # noqa: E731
                                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                            "PALIMPSEST__packs__memory__embedder": "hashing",
                                            "HOME": str(tmp_path)})
    assert run(*env_db, "memory", "remember", "the blue heron nests by the lake").returncode == 0
    r = run(*env_db, "export", str(tmp_path / "x.jsonl"))
    assert r.returncode == 0, r.stderr
    r = run("--db", str(tmp_path / "b.duckdb"), "--namespace", "copy", "import", "palimpsest", str(tmp_path / "x.jsonl"))
    assert r.returncode == 0, r.stderr
    r = run("--db", str(tmp_path / "b.duckdb"), "--namespace", "copy", "--json", "memory", "recall", "heron")
    assert "blue heron" in r.stdout, r.stdout + r.stderr
    r = run(*env_db, "backup", str(tmp_path / "bk.duckdb"))
    assert r.returncode == 0 and (tmp_path / "bk.duckdb").exists(), r.stderr
    r = run("--db", str(tmp_path / "c.duckdb"), "restore", str(tmp_path / "bk.duckdb"))
    assert r.returncode == 0, r.stderr
    r = run("--db", str(tmp_path / "c.duckdb"), "--json", "memory", "recall", "heron")
    assert "blue heron" in r.stdout, r.stdout + r.stderr
    r = run("--db", str(tmp_path / "c.duckdb"), "restore", str(tmp_path / "bk.duckdb"))
    assert r.returncode == 4 and "--force" in r.stderr + r.stdout

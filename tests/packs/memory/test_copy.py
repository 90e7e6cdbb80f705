"""`pal copy SRC DST` (issue 14 item 5; ADR 0018): the varied store of the export/import round trip (plus a second
namespace) copied DuckDB → PostgreSQL → DuckDB answers every read verb as the source does — recall, list/count,
history, edges, beliefs, tombstones, kg facts/timeline/known-at, entities, predicates, brain state — in both
namespaces; a non-empty destination is refused before anything is written."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.storecopy import copy_store, store_namespaces
from palimpsest_memory.runtime.testing import open_test_runtime
from store_support import snapshot

ROOT = Path(__file__).resolve().parents[3]


def _round_trip_module():  # type: ignore[no-untyped-def]
    """The export/import round-trip test's builder and verb-by-verb answers (tests run with --import-mode=importlib,
    so the sibling module is loaded by path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("pal_export_import_test", Path(__file__).with_name(
        "test_export_import.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


_rt_mod = _round_trip_module()
HASHING, answers, build, Score = _rt_mod.HASHING, _rt_mod.answers, _rt_mod.build, _rt_mod.Score


def open_rt(target: str):  # type: ignore[no-untyped-def]
    return open_test_runtime(config=HASHING, discover=True, path=target)


def build_two_namespaces(rt) -> None:  # type: ignore[no-untyped-def]
    build(rt)
    other = "team:b"
    a = rt.call("memory.remember", {"content": "the other team keeps bees on the roof"}, namespace=other).note.id
    rt.call("kg.assert_fact", {"subject": "Bea", "predicate": "keeps", "object": "bees", "source_id": f"m:{a}"},
            namespace=other)
    rt.call("memory.forget", {"ids": [a], "reason": "copy test"}, namespace=other)
    rt.call("memory.remember", {"content": "bees swarm in May"}, namespace=other)


def other_answers(rt) -> dict:  # type: ignore[no-untyped-def]
    call = lambda verb, p: rt.call(verb, p, namespace="team:b").model_dump(mode="json")  # noqa: E731
    return {"recall": call("memory.recall", {"query": "bees"}), "list": call("memory.list", {"limit": 100}),
            "tombstones": call("memory.tombstones", {}), "facts": call("kg.facts", {"include_superseded": True}),
            "kg_tombstones": rt.store.con.execute("SELECT ref, reason FROM kg.tombstones WHERE namespace = 'team:b' "
                                             "ORDER BY ref").fetchall()}


def strip_ids(d: dict) -> dict:  # recall ids are per serve; scores decay with the clock (a tolerance, as answers())
    d = json.loads(json.dumps(d))
    d["recall"].pop("recall_id", None)
    for hit in d["recall"]["results"]:
        hit["score"] = Score(hit["score"])
    return d


def drop(server, url: str) -> None:  # type: ignore[no-untyped-def]
    """Drop the test database; one retry: the shared test server sometimes drops the DROP's own connection
    (seen after the shell test's subprocesses; the PostgreSQL test flake is being looked at separately)."""
    import psycopg

    try:
        server.drop(url)
    except psycopg.OperationalError:
        server.drop(url)


def test_a_store_copies_duckdb_to_postgres_and_back_verb_by_verb(tmp_path, pal_postgres) -> None:
    src = open_rt(str(tmp_path / "src.duckdb"))
    url = pal_postgres.fresh()
    try:
        build_two_namespaces(src)
        before, before_other = answers(src, "default"), strip_ids(other_answers(src))
        assert store_namespaces(src) == ["default", "team:b"]
        pg = open_rt(url)
        try:
            report = copy_store(src, pg)
            assert set(report.namespaces) == {"default", "team:b"} and report.records > 100
            assert report.namespaces["default"]["memory"]["tombstone"] == 1
            after = answers(pg, "default")
            for key in before:
                assert after[key] == before[key], key
            assert strip_ids(other_answers(pg)) == before_other
        finally:
            pg.close()
        pg = open_rt(url)  # a fresh process on the PostgreSQL copy (mirrors loaded from its rows) answers alike
        back = open_rt(str(tmp_path / "back.duckdb"))
        try:
            copy_store(pg, back)
            again = answers(back, "default")
            for key in before:
                assert again[key] == before[key], key
            assert strip_ids(other_answers(back)) == before_other
            new = back.call("memory.remember", {"content": "written after the copy"}).note.id
            assert new > max(n["id"] for n in before["list"]["notes"])  # sequences moved past the copied ids
            held = snapshot(back)
            with pytest.raises(errors.Conflict, match="not empty"):  # into a store that holds data: refused
                copy_store(pg, back)
            assert snapshot(back) == held
        finally:
            pg.close()
            back.close()
    finally:
        src.close()
        drop(pal_postgres, url)


def test_pal_copy_from_the_shell(tmp_path, pal_postgres) -> None:
    url = pal_postgres.fresh()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "PALIMPSEST__packs__memory__embedder": "hashing",
           "HOME": str(tmp_path), "PALIMPSEST_CONFIG_DISABLED": "1"}
    run = lambda *args: subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args],  # noqa: E731
                                       capture_output=True, text=True, cwd=ROOT, env=env)
    a, b = str(tmp_path / "a.duckdb"), str(tmp_path / "b.duckdb")
    try:
        assert run("--db", a, "memory", "remember", "the blue heron nests by the lake").returncode == 0
        assert run("--db", a, "--namespace", "ns2", "memory", "remember", "a grey wagtail").returncode == 0
        r = run("--json", "copy", a, url)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert set(out["namespaces"]) == {"default", "ns2"} and "@" not in out["destination"]
        r = run("copy", url, b)
        assert r.returncode == 0 and "2 namespaces" in r.stdout, r.stderr
        r = run("--db", b, "--namespace", "ns2", "--json", "memory", "recall", "wagtail")
        assert "grey wagtail" in r.stdout, r.stdout + r.stderr
        r = run("copy", a, url)  # the destination holds data now
        assert r.returncode != 0 and "not empty" in r.stderr + r.stdout
        r = run("copy", a, a)
        assert r.returncode != 0 and "same store" in r.stderr + r.stdout
        r = run("copy", str(tmp_path / "nothing.duckdb"), str(tmp_path / "c.duckdb"))
        assert r.returncode != 0 and not (tmp_path / "c.duckdb").exists() and not (tmp_path / "nothing.duckdb").exists()
    finally:
        drop(pal_postgres, url)

"""One store seam (ADR 0031): no backend branch and no backend SQL outside runtime/storage/.

Before the seam, ``rt.shared`` was tested 13 times in engine.py and aftercommit.py, PostgreSQL's advisory locks and
change-log SQL sat in both, compact.py swapped the runtime's connection, and the adapters took "the database" for a
file path. This test reads every module of the runtime (storage/ excepted) and of the packs and fails on any of
the marks such code leaves. The test plugin (runtime/testing.py) names the backends it parametrises tests over: it
may compare a backend's name, and nothing else."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STORAGE = ROOT / "runtime" / "storage"
TEST_PLUGIN = ROOT / "runtime" / "testing.py"

MARKS = {
    "imports a database driver": re.compile(r"^\s*(?:import|from)\s+(?:duckdb|psycopg)\b", re.M),
    "imports a backend's own module": re.compile(
        r"storage(?:\.|\s+import\s+)(?:postgres|duck|pg_store|duck_store|pg_follow|pg_dialect|pg_result|pg_testing)\b"),
    "branches on the dialect": re.compile(r"\.dialect\b|\bdialect_of\b"),
    "branches on a shared store": re.compile(r"\.shared\b|\bis_shared\b"),
    "compares a backend's name": re.compile(r"""[=!]=\s*["'](?:postgres|postgresql|duckdb)["']"""),
    "runs backend-specific SQL": re.compile(
        r"pg_advisory|pg_notify|\bLISTEN\b|\bVACUUM\b|\bCHECKPOINT\b|duckdb_(?:databases|tables|columns|"
        r"constraints|settings)\(|current_database\(\)"),
    "reaches into the runtime's private store": re.compile(r"\b(?:rt|runtime|_rt)\._con\b"),
}


def product_modules() -> list[Path]:
    files = sorted((ROOT / "runtime").rglob("*.py")) + sorted((ROOT / "packs").rglob("*.py"))
    return [f for f in files if STORAGE not in f.parents]


def marks_in(text: str, *, test_plugin: bool = False) -> list[str]:
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return [what for what, pattern in MARKS.items()
            if pattern.search(code) and not (test_plugin and what == "compares a backend's name")]


def test_no_backend_code_outside_the_store_seam() -> None:
    found = {str(f.relative_to(ROOT)): m for f in product_modules()
             if (m := marks_in(f.read_text(encoding="utf-8"), test_plugin=f == TEST_PLUGIN))}
    assert found == {}


@pytest.mark.parametrize("line, mark", [
    ("import duckdb", "imports a database driver"),
    ("from palimpsest_memory.runtime.storage import postgres", "imports a backend's own module"),
    ("if ctx.db.dialect != 'duckdb':", "branches on the dialect"),
    ("if self.shared and spec.writes:", "branches on a shared store"),
    ("if backend == \"postgres\":", "compares a backend's name"),
    ("con.execute('SELECT pg_advisory_xact_lock(?)', [k])", "runs backend-specific SQL"),
    ("rt._con.execute('CHECKPOINT')", "reaches into the runtime's private store"),
])
def test_each_mark_is_caught(line: str, mark: str) -> None:
    """The check can fail: each mark of the old code is found in a line of the old code."""
    assert mark in marks_in(f"def f():\n    {line}\n")


def test_the_storage_package_is_where_the_backends_live() -> None:
    """The seam is real: the backend code the check keeps out of the rest is in storage/ (so a rename that made
    the check vacuous would fail here)."""
    text = "\n".join(f.read_text(encoding="utf-8") for f in STORAGE.glob("*.py"))
    for pattern in ("import duckdb", "pg_advisory_xact_lock", "VACUUM (FULL)", "CHECKPOINT", "LISTEN"):
        assert pattern in text, pattern

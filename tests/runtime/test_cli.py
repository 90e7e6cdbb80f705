"""The `pal` CLI, run as a user runs it, over a real third-party pack installed from tests/fixtures.

The example pack is built and installed with pip into a temporary target directory that is put on PYTHONPATH,
so it is found through its entry point exactly like any installed pack.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "tests" / "fixtures" / "example_pack"


@pytest.fixture(scope="module")
def installed_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "example_pack"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run(  # built from a copy, so the build leaves nothing behind in the repository
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--no-build-isolation", "--target", str(target), str(source)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert list(target.glob("palimpsest_example_pack-*.dist-info")), "pip did not install the example pack"
    return target


def pal(site: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    # the checkout under test beside the installed pack: the venv may hold another checkout's palimpsest_memory
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(db),
               PALIMPSEST_PACKS="example", COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], capture_output=True, text=True,
                          env=env, cwd=str(db.parent))


def test_installed_pack_is_discovered_through_its_entry_point(installed_example: Path, tmp_path: Path) -> None:
    out = pal(installed_example, tmp_path / "p.duckdb", "--json", "packs")
    assert out.returncode == 0, out.stderr
    packs = {p["pack"]: p for p in json.loads(out.stdout)}
    assert packs["example"]["status"] == "loaded" and packs["example"]["version"] == "0.1.0"


def test_verbs_hide_subhandlers_and_all_marks_them(installed_example: Path, tmp_path: Path) -> None:
    public = json.loads(pal(installed_example, tmp_path / "p.duckdb", "--json", "verbs").stdout)
    assert {v["verb"] for v in public} == {"example.note", "example.notes"}
    everything = json.loads(pal(installed_example, tmp_path / "p.duckdb", "--json", "verbs", "--all").stdout)
    marked = {v["verb"]: v["visibility"] for v in everything}
    assert marked["example.shout"] == "subhandler" and marked["example.note"] == "public"
    table = pal(installed_example, tmp_path / "p.duckdb", "verbs", "--all").stdout
    assert "subhandler" in table and "Write a note down." in table


def test_describe_prints_the_json_schemas(installed_example: Path, tmp_path: Path) -> None:
    out = json.loads(pal(installed_example, tmp_path / "p.duckdb", "describe", "example.note").stdout)
    assert out["act"] == "commissive"
    assert out["params"]["properties"]["text"]["type"] == "string"
    assert out["params"]["additionalProperties"] is False


def test_generated_command_call_and_persistence(installed_example: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    made = pal(installed_example, db, "--json", "example", "note", "remember the milk", "--loud")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["text"] == "REMEMBER THE MILK!"
    assert pal(installed_example, db, "call", "example.note", "--params", '{"text": "second"}').returncode == 0
    assert pal(installed_example, db, "call", "example.note", "-p", "text=third").returncode == 0
    listed = json.loads(pal(installed_example, db, "--json", "example", "notes", "--limit", "2").stdout)
    assert [n["text"] for n in listed["notes"]] == ["third", "second"]
    readable = pal(installed_example, db, "example", "notes").stdout
    assert "REMEMBER THE MILK!" in readable


def test_invalid_params_exit_2_with_json_error_and_nothing_written(installed_example: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    bad = pal(installed_example, db, "--json", "call", "example.note", "--params", '{"text": "", "zz": 1}')
    assert bad.returncode == 2
    body = json.loads(bad.stdout)
    assert body["ok"] is False and body["error"]["code"] == "invalid_params"
    assert {tuple(e["loc"]) for e in body["error"]["details"]["errors"]} == {("text",), ("zz",)}
    bad_limit = pal(installed_example, db, "example", "notes", "--limit", "0")
    assert bad_limit.returncode == 2 and "limit" in bad_limit.stderr
    assert json.loads(pal(installed_example, db, "--json", "example", "notes").stdout)["notes"] == []


def test_subhandler_needs_internal_and_unknown_verb_exit_code(installed_example: Path, tmp_path: Path) -> None:
    db = tmp_path / "p.duckdb"
    refused = pal(installed_example, db, "--json", "call", "example.shout", "-p", "text=hi")
    assert refused.returncode == 4 and json.loads(refused.stdout)["error"]["code"] == "forbidden"
    allowed = pal(installed_example, db, "--json", "call", "example.shout", "-p", "text=hi", "--internal")
    assert json.loads(allowed.stdout)["text"] == "HI!"
    missing = pal(installed_example, db, "--json", "call", "example.nope")
    assert missing.returncode == 3 and json.loads(missing.stdout)["error"]["code"] == "verb_not_found"

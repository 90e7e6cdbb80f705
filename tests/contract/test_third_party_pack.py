"""Installing a third-party pack never breaks the project's own tests; its checks run only when asked
(`pytest --pal-pack NAME`, `pal check-pack NAME`) (issue 20, item 5).

A deliberately sloppy pack (tests/fixtures/sloppy_pack: an undocumented verb no test calls, a params field without
a description, sql/*.sql not shipped as package data) is built and installed with pip into a temporary target that
is put on PYTHONPATH, so it is discovered through its entry point exactly like a pack installed into the venv.
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
SLOPPY = ROOT / "tests" / "fixtures" / "sloppy_pack"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "sloppy_pack"
    shutil.copytree(SLOPPY, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--no-build-isolation", "--target", str(target), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert not list(target.rglob("001_scribbles.sql")), "the fixture must NOT ship its sql (that is the point)"
    return target


def run(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]), PALIMPSEST_CONFIG_DISABLED="1", COLUMNS="200")
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=600)


def test_the_contract_tests_ignore_an_installed_pack_unless_asked(site: Path) -> None:
    quiet = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/contract/test_catalog.py"]
    plain = run(site, *quiet)
    assert plain.returncode == 0, plain.stdout[-3000:]
    asked = run(site, *quiet, "--pal-pack", "sloppy")
    assert asked.returncode == 1, asked.stdout[-3000:]
    assert "sloppy.scribble" in asked.stdout  # the undocumented, untested verb is reported


def test_pal_check_pack_names_each_mistake(site: Path) -> None:
    proc = run(site, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", "check-pack", "sloppy")
    assert proc.returncode == 1, proc.stderr
    rows = {r["check"]: r for r in json.loads(proc.stdout)}
    assert rows["loads"]["ok"]
    verb = rows["verb sloppy.scribble"]
    assert not verb["ok"] and "docstring" in verb["detail"] and "text" in verb["detail"]
    assert not rows["migrations installed"]["ok"] and "package data" in rows["migrations installed"]["detail"]
    good = run(site, "-m", "palimpsest_memory.runtime.adapters.cli", "check-pack", "kg")
    assert good.returncode == 0 and "FAIL" not in good.stdout, good.stdout
    unknown = run(site, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", "check-pack", "nope")
    assert unknown.returncode != 0 and "sloppy" in json.loads(unknown.stdout)["error"]["message"]

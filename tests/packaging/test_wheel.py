"""The built wheel works installed beside PyPI's ``runtime`` distribution, outside the repository (ADR 0023).

PyPI's ``runtime`` ships a top-level ``runtime.py``; before ADR 0023 our wheel shipped a top-level ``runtime``
package too, so one of them silently won. Here the wheel is built from this checkout, installed into a fresh venv
together with PyPI's ``runtime``, and ``pal`` is run from a temporary folder (so the checkout is on no path):
``--version``, ``packs``, ``verbs``, a remember and a recall.

The fresh venv takes palimpsest's *dependencies* (numpy, duckdb, ...) from the venv running the tests, through a
path line in a ``.pth`` file (that does not process the running venv's own ``.pth`` files, so the editable checkout
is not on the path); the wheel itself, its entry points, its ``pal`` script and PyPI's ``runtime`` are installed
into the fresh venv for real. Needs PyPI (to build with hatchling and fetch ``runtime``): skipped, saying so, when
it cannot be reached.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=540)


def _skip_if_offline(proc: subprocess.CompletedProcess[str], what: str) -> None:
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if any(s in text for s in ("Could not find a version", "No matching distribution", "NewConnectionError",
                                   "Temporary failure in name resolution", "Network is unreachable")):
            pytest.skip(f"PyPI not reachable ({what}): {text.strip().splitlines()[-1][:200]}")
        raise AssertionError(f"{what} failed:\n{text[-3000:]}")


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    built = _pip("wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT), cwd=base)
    _skip_if_offline(built, "building the wheel")
    (wheel,) = dist.glob("palimpsest_memory-*.whl")

    env_dir = base / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _skip_if_offline(_pip("--python", str(py), "install", "-q", "runtime", cwd=base), "installing PyPI's runtime")
    installed = _pip("--python", str(py), "install", "-q", "--no-deps", str(wheel), cwd=base)
    assert installed.returncode == 0, installed.stderr
    work = base / "work"
    work.mkdir()
    return {"wheel": wheel, "python": py, "pal": env_dir / "bin" / "pal", "site": site, "work": work}


def _run(fresh: dict[str, Path], *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST") and k != "PYTHONPATH"}
    env.update(PALIMPSEST_DB=str(fresh["work"] / "m.duckdb"), PALIMPSEST_CONFIG_DISABLED="1", COLUMNS="100")
    return subprocess.run(list(argv), cwd=fresh["work"], env=env, capture_output=True, text=True, timeout=300)


def test_wheel_holds_one_top_level_package_with_its_data(fresh: dict[str, Path]) -> None:
    names = zipfile.ZipFile(fresh["wheel"]).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert tops == {"palimpsest_memory"}, tops
    for needed in ("palimpsest_memory/__init__.py", "palimpsest_memory/runtime/default.toml",
                   "palimpsest_memory/runtime/adapters/web/static/app.js",
                   "palimpsest_memory/packs/memory/sql/001_notes.sql",
                   # a pack's defaults and its web pages (ADR 0035)
                   "palimpsest_memory/packs/memory/defaults.toml", "palimpsest_memory/packs/memory/web/recall.js",
                   # the memory pack's wings (ADR 0043)
                   "palimpsest_memory/packs/memory/engine/__init__.py",
                   "palimpsest_memory/packs/memory/engine/index.py",
                   "palimpsest_memory/packs/memory/ranking/adjusters.py"):
        assert needed in names, needed
    assert not any(n.startswith(("palimpsest_memory/palimpsest_memory", "palimpsest_memory/tests")) for n in names)


def test_both_runtimes_import_side_by_side(fresh: dict[str, Path]) -> None:
    # PyPI's runtime 0.1.4 is Python 2 code: it cannot run here, so ask where ``import runtime`` resolves
    code = ("import json, importlib.util, palimpsest_memory.runtime as ours; "
            "print(json.dumps([importlib.util.find_spec('runtime').origin, ours.__file__, ours.__version__]))")
    out = _run(fresh, str(fresh["python"]), "-c", code)
    assert out.returncode == 0, out.stderr
    theirs, ours, version = json.loads(out.stdout)
    assert Path(theirs) == fresh["site"] / "runtime.py"  # PyPI's module, untouched
    assert Path(ours).is_relative_to(fresh["site"]) and not Path(ours).is_relative_to(ROOT)
    assert version == fresh["wheel"].name.split("-")[1]


def test_pal_verbs_remember_and_recall_from_the_wheel(fresh: dict[str, Path]) -> None:
    pal = str(fresh["pal"])
    version = _run(fresh, pal, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"palimpsest-memory {fresh['wheel'].name.split('-')[1]}"
    packs = _run(fresh, pal, "--json", "packs")
    assert packs.returncode == 0, packs.stderr
    assert {p["pack"] for p in json.loads(packs.stdout) if p["status"] == "loaded"} >= {"kg", "memory", "brain"}
    verbs = _run(fresh, pal, "--json", "verbs")
    assert verbs.returncode == 0, verbs.stderr
    assert {"memory.remember", "memory.recall", "kg.link"} <= {v["verb"] for v in json.loads(verbs.stdout)}
    stored = _run(fresh, pal, "memory", "remember", "The harbour office moved to pier 4 in March")
    assert stored.returncode == 0, stored.stderr
    recall = _run(fresh, pal, "--json", "memory", "recall", "where is the harbour office")
    assert recall.returncode == 0, recall.stderr
    assert json.loads(recall.stdout)["results"][0]["note"]["content"] == "The harbour office moved to pier 4 in March"

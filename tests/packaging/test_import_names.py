"""Every import names palimpsest_memory.runtime / palimpsest_memory.packs, never a bare top-level ``runtime`` or
``packs`` (ADR 0023). A checkout has the repository root on the path, so a bare ``import runtime`` would still work
here and break only in the wheel, beside PyPI's ``runtime``: this scan catches it first."""
from __future__ import annotations

import ast
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BARE = {"runtime", "packs"}


def _sources() -> list[Path]:
    return sorted(p for d in ("runtime", "packs", "tests", "bench", "demo") for p in (ROOT / d).rglob("*.py"))


def _bare_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in BARE]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in BARE:
                found.append(node.module)
    return found


def test_no_source_imports_a_bare_runtime_or_packs() -> None:
    bad = {str(p.relative_to(ROOT)): names for p in _sources() if (names := _bare_imports(p))}
    assert bad == {}


def test_the_scan_sees_a_bare_import(tmp_path: Path) -> None:
    src = tmp_path / "x.py"
    src.write_text("import os\nfrom runtime.errors import NotFound\nimport packs.kg.pack as k\nfrom . import y\n")
    assert _bare_imports(src) == ["runtime.errors", "packs.kg.pack"]


def test_entry_points_and_script_name_the_owned_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    targets = [project["scripts"]["pal"], *project["entry-points"]["palimpsest.packs"].values(),
               *project["entry-points"]["pytest11"].values()]
    assert all(t.startswith("palimpsest_memory.") for t in targets), targets
    assert project["name"] == "palimpsest-memory"


def test_version_is_the_distribution_metadata() -> None:
    from palimpsest_memory.runtime import DISTRIBUTION, __version__

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    try:
        installed = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{DISTRIBUTION} is not installed in this venv (only on PYTHONPATH): no metadata to compare")
    assert __version__ == installed == pyproject

"""The house rules as import-linter contracts: they pass here, and they really catch a violation."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")


def run_lint(config: Path, cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([str(LINT), str(config), "--no-cache"], capture_output=True, text=True,
                          cwd=cwd, env=env)


def test_project_keeps_every_contract() -> None:
    out = run_lint(ROOT / "pyproject.toml", ROOT, ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "broken" in out.stdout and " 0 broken" in out.stdout


def _toy_tree(tmp: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _write_our_contracts(tmp: Path) -> Path:
    """Reuse the project's own contracts verbatim, so the test checks the real rules."""
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    lines = ["[importlinter]", "root_packages =", "    palimpsest_memory", "include_external_packages = True"]
    for i, contract in enumerate(ours["contracts"]):
        lines.append(f"\n[importlinter:contract:{i}]")
        for key, value in contract.items():
            if isinstance(value, list):
                lines.append(f"{key} =")
                lines.extend(f"    {v}" for v in value)
            else:
                lines.append(f"{key} = {value}")
    cfg = tmp / ".importlinter"
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


PKG = "palimpsest_memory"
BASE = {f"{PKG}/{rel}": "" for rel in (
    "__init__.py", "runtime/__init__.py", "runtime/adapters/__init__.py", "packs/__init__.py",
    "packs/alpha/__init__.py", "packs/beta/__init__.py",
    *(f"runtime/{m}.py" for m in ("engine", "opening", "tunables", "loader", "storage", "dispatch", "registry",
                                   "config")),
    # the memory pack's top modules and wings, which its contracts name (ADR 0043)
    *(p.relative_to(ROOT).as_posix() for p in (ROOT / "packs" / "memory").glob("*.py")),
    *(p.relative_to(ROOT).as_posix() for p in (ROOT / "packs" / "memory").glob("*/__init__.py")))}


def test_a_pack_importing_another_pack_is_caught(tmp_path: Path) -> None:
    _toy_tree(tmp_path, BASE | {f"{PKG}/packs/alpha/verbs.py": "from palimpsest_memory.packs.beta import helper  # forbidden\n",
                                f"{PKG}/packs/beta/helper.py": "X = 1\n"})
    out = run_lint(_write_our_contracts(tmp_path), tmp_path, tmp_path)
    assert out.returncode != 0
    assert "Packs never import each other BROKEN" in out.stdout
    assert f"{PKG}.packs.alpha.verbs -> {PKG}.packs.beta" in out.stdout


def test_runtime_importing_a_pack_is_caught(tmp_path: Path) -> None:
    _toy_tree(tmp_path, BASE | {f"{PKG}/runtime/engine.py": "import palimpsest_memory.packs.alpha\n"})
    out = run_lint(_write_our_contracts(tmp_path), tmp_path, tmp_path)
    assert out.returncode != 0 and "The runtime never imports packs BROKEN" in out.stdout


def test_the_memory_engine_importing_a_verb_module_is_caught(tmp_path: Path) -> None:
    _toy_tree(tmp_path, BASE | {f"{PKG}/packs/memory/engine/index.py": "from palimpsest_memory.packs.memory import recall\n"})
    out = run_lint(_write_our_contracts(tmp_path), tmp_path, tmp_path)
    assert out.returncode != 0
    text = " ".join(out.stdout.split())  # the report wraps long lines
    assert "The memory engine imports nothing from the memory pack's verbs" in text
    assert f"{PKG}.packs.memory.engine.index -> {PKG}.packs.memory.recall" in text


def test_the_memory_engine_importing_the_ranking_is_caught(tmp_path: Path) -> None:
    _toy_tree(tmp_path, BASE | {f"{PKG}/packs/memory/engine/index.py": "import palimpsest_memory.packs.memory.ranking\n"})
    out = run_lint(_write_our_contracts(tmp_path), tmp_path, tmp_path)
    assert out.returncode != 0 and "The memory pack's layers: ranking above engine BROKEN" in out.stdout

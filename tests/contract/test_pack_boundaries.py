"""The house's inner rules, read from the source (issue 13; ADR 0015):

- no pack reads or writes another pack's tables (SQL naming another pack's schema);
- no import circles inside a pack (one pack shape: core.py ← verb modules ← pack.py);
- no pack wraps the dispatch hook or uses the retired after-commit paths: packs cooperate through verbs,
  tunables and declared events, and follow the store through mirrors;
- every verb's params model derives from the runtime's one params base.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from palimpsest_memory.runtime.engine import load_catalog
from palimpsest_memory.runtime.params import Params

ROOT = Path(__file__).resolve().parents[2]
PACKS = sorted(p.name for p in (ROOT / "packs").iterdir() if (p / "pack.py").exists())
SQL_TABLE = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+\"?([a-z_][a-z0-9_]*)\"?\.\"?[a-z_]", re.IGNORECASE)


def sources(pack: str, suffixes: tuple[str, ...] = (".py", ".sql")) -> list[Path]:
    return sorted(p for p in (ROOT / "packs" / pack).rglob("*") if p.suffix in suffixes)


@pytest.mark.parametrize("pack", PACKS)
def test_no_pack_touches_another_packs_tables(pack: str) -> None:
    others = set(PACKS) - {pack}
    found = []
    for path in sources(pack):
        for m in SQL_TABLE.finditer(path.read_text()):
            if m.group(1) in others:
                found.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not found, f"pack {pack} reads or writes another pack's tables: {found}"


def _imports(path: Path, package: str) -> set[str]:
    tree = ast.parse(path.read_text())
    here = _module(path, package).rsplit(".", 1)[0]  # the package (or wing) the file is in, for relative imports
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = here.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(x for x in (base, node.module) if x)
            if module == package or module.startswith(package + "."):
                out.add(module)  # from packs.x.wing import a, b -> the wing and, if they are modules, a and b
                out |= {f"{module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith(package + ".")}
    return out


def _module(path: Path, package: str) -> str:
    """The dotted module name of a pack's source file (packs/memory/engine/index.py -> <package>.engine.index)."""
    pack_dir = ROOT / "packs" / package.rsplit(".", 1)[-1]
    return ".".join([package, *path.relative_to(pack_dir).with_suffix("").parts])


@pytest.mark.parametrize("pack", PACKS)
def test_no_import_circles_inside_a_pack(pack: str) -> None:
    package = f"palimpsest_memory.packs.{pack}"
    graph = {_module(p, package): _imports(p, package) for p in sources(pack, (".py",)) if p.stem != "__init__"}
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(mod: str, path: list[str]) -> list[str] | None:
        state[mod] = 1
        for dep in sorted(graph.get(mod, ())):
            if state.get(dep) == 1:
                return path + [mod, dep]
            if dep in graph and state.get(dep) is None:
                cycle = visit(dep, path + [mod])
                if cycle:
                    return cycle
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if state.get(mod) is None:
            cycle = visit(mod, [])
            assert cycle is None, f"import circle in pack {pack}: {' -> '.join(cycle)}"


RETIRED = re.compile(r"\b(palimpsest_dispatch|palimpsest_close|on_commit|\.defer\(|on_open|SimpleNamespace|"
                     r"txid_current)\b")


@pytest.mark.parametrize("pack", PACKS)
def test_packs_use_no_dispatch_wrapper_and_no_retired_after_commit_path(pack: str) -> None:
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in sources(pack, (".py",))
             for i, line in enumerate(p.read_text().splitlines(), 1) if RETIRED.search(line)]
    assert not found, found


def test_every_verb_params_model_derives_from_the_runtime_params_base() -> None:
    from palimpsest_memory.runtime.testing import ISOLATED_ENV

    catalog, _ = load_catalog(env=ISOLATED_ENV)
    for spec in catalog.verbs(include_subhandlers=True):
        if spec.pack in PACKS:
            assert issubclass(spec.params_model, Params), f"{spec.full_name}: {spec.params_model.__name__}"

"""Parts, not halves (issue 43, item 2): in the memory pack no class reads another object's underscore attributes.

A class split into "halves" in separate files (mixins that read the attributes another file's ``__init__`` sets up)
keeps one object's private state spread over modules. The memory pack's indexes are composed instead — the BM25
index has its postings, its restored rows and its scope groups; the vector index has its rows and its graph; the
memory index has its slots, its columns, its note rows and its writes; each part has its own methods — and this AST
scan holds that, in every module of the pack (subfolders included):

- ``x._name`` with ``x`` anything but ``self`` or ``cls`` is a reach into another object's privates;
- ``self._name`` inside a class must be something that class (or a base class of the same module) defines: a
  method, a class attribute, or an attribute it assigns through ``self`` — a mixin reading its host's ``self._x``
  is caught here.

Dunder names are Python's and are not checked.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "packs" / "memory"

# (file, accessed expression): reaches still to be removed, each for the reason given
ALLOWED: set[tuple[str, str]] = set()


def _own_names(cls: ast.ClassDef) -> set[str]:
    names: set[str] = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            names.update(t.id for t in item.targets if isinstance(t, ast.Name))
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for n in ast.walk(cls):
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name) \
                and n.value.id == "self":
            names.add(n.attr)
    return names


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def reaches(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every reach into another object's privates in ``source`` (see the module docstring)."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    for cls in classes.values():
        names = _own_names(cls)
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in classes:
                names |= _own_names(classes[base.id])
        for n in ast.walk(cls):
            if isinstance(n, ast.Attribute) and _private(n.attr) and isinstance(n.value, ast.Name) \
                    and n.value.id in ("self", "cls") and n.attr not in names:
                found.append((n.lineno, ast.unparse(n)))
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _private(n.attr) and not (
                isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
            found.append((n.lineno, ast.unparse(n)))
    return sorted(found)


def test_no_memory_module_reads_another_objects_private_attributes() -> None:
    bad = [f"  {p.relative_to(ROOT).as_posix()}:{line} {expr}" for p in sorted(FOLDER.rglob("*.py"))
           for line, expr in reaches(p.read_text(encoding="utf-8"))
           if (p.relative_to(ROOT).as_posix(), expr) not in ALLOWED]
    assert not bad, "reads another object's underscore attributes (give the part a method or an argument):\n" + \
        "\n".join(bad)


def test_the_scan_finds_a_mixin_and_a_reach() -> None:
    source = ("class Half:\n    def size(self):\n        return self._n\n\n\n"
              "class Whole(Half):\n    def __init__(self):\n        self._n = 0\n\n\n"
              "class Part:\n    def __init__(self, rows):\n        self._rows = rows\n\n"
              "    def count(self):\n        return self._rows._n + len(self._rows)\n")
    assert reaches(source) == [(3, "self._n"), (16, "self._rows._n")]


def test_the_allowlist_names_only_reaches_that_exist() -> None:
    found = {(p.relative_to(ROOT).as_posix(), expr) for p in FOLDER.rglob("*.py")
             for _, expr in reaches(p.read_text(encoding="utf-8"))}
    assert ALLOWED <= found, f"no longer found (drop them from ALLOWED): {sorted(ALLOWED - found)}"

"""No dead or bench-only code in the product (issue 43, item 4): every function, class and method defined in
``runtime/`` or ``packs/`` is referenced somewhere else in the product's code.

An AST scan, since vulture is not a dependency: a name counts as referenced when it occurs in ``runtime/`` or
``packs/`` as a name, an attribute, an import or an identifier inside a string (``__all__``, the runtime's lazy
``_WHERE`` table, entry points written as ``module:name``), docstrings excepted. A definition with a decorator is
registered by it (``@pack.verb``, ``@hookimpl``, ``@app.command``, ``@property``...) and is not checked. Dunder
names are Python's. Code only tests or ``bench/`` call belongs there, not in the product.
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("runtime", "packs")

# (file, name): called from outside the product's code, each for the reason given
ALLOWED = {
    # the pytest plugin (entry point pytest11): pytest calls its hooks, test suites its fixtures' helpers
    ("runtime/testing.py", "pytest_addoption"), ("runtime/testing.py", "pytest_configure"),
    ("runtime/testing.py", "backends"),
    # the Runtime's API for host apps and tools that look inside a store (tests and bench/ do)
    ("runtime/engine.py", "pack_state"), ("runtime/engine.py", "held_namespaces"),
    # the exact scan the HNSW graph's recall is measured against (tests, bench/speed.py); a method of the index
    ("packs/memory/engine/vectors.py", "search_exact"),
    # io.RawIOBase's protocol: the io machinery asks it
    ("packs/memory/engine/snapshot_io.py", "seekable"),
}


def product_files() -> list[Path]:
    return sorted(p for d in PRODUCT for p in (ROOT / d).rglob("*.py"))


def unreferenced(files: list[Path]) -> list[tuple[str, str, int]]:
    defined: list[tuple[str, str, int]] = []
    seen: Counter[str] = Counter()
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(ROOT).as_posix()
        for node in tree.body:
            for item in [node, *(node.body if isinstance(node, ast.ClassDef) else [])]:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and not item.decorator_list and not item.name.startswith("__"):
                    defined.append((rel, item.name, item.lineno))
        docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                seen[n.id] += 1
            elif isinstance(n, ast.Attribute):
                seen[n.attr] += 1
            elif isinstance(n, ast.alias):
                seen[(n.asname or n.name).rsplit(".", 1)[-1]] += 1
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
                seen.update(re.findall(r"[A-Za-z_]\w*", n.value))
    return [(rel, name, line) for rel, name, line in defined if not seen[name] and (rel, name) not in ALLOWED]


def test_every_product_definition_is_used_by_the_product() -> None:
    dead = unreferenced(product_files())
    assert not dead, "referenced nowhere in runtime/ or packs/ (delete it, or move it to bench/ or the tests):\n" + \
        "\n".join(f"  {rel}:{line} {name}" for rel, name, line in dead)


def test_the_scan_finds_an_unused_function(tmp_path: Path) -> None:
    used = tmp_path / "a.py"
    used.write_text('"""mentions helper in a docstring only"""\ndef helper():\n    return 1\n\n\n'
                    'def caller():\n    return helper()\n\n\ndef orphan():\n    """orphan"""\n')
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        assert [(name) for _, name, _ in unreferenced([used])] == ["caller", "orphan"]
    finally:
        ROOT = old


def test_the_allowlist_names_only_definitions_that_exist() -> None:
    for rel, name in ALLOWED:
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert re.search(rf"^\s*def {name}\b|^\s*class {name}\b", text, re.M), f"{rel} no longer defines {name}"

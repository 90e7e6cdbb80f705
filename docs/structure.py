"""Draw the house from its imports: `python docs/structure.py` writes docs/structure.md (a Mermaid graph).

Issue 43 asked for a structure drawing that shows the wings with their arrows. Tools that resolve imports by
file path see none in this checkout (`palimpsest_memory/runtime` and `/packs` are symbolic links, ADR 0023), so the
drawing is made from the import graph itself, as import-linter sees it (grimp, its own dependency): every module
is put in its room (the runtime's core, its adapters and storage; each pack; the memory pack's wings, ADR 0043),
and an arrow is drawn from a room to each room it imports from, labelled with the number of module-level imports
(type-checking-only imports count too: they are what a reader follows).
"""
from __future__ import annotations

import sys
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WINGS = ("engine", "ranking", "models", "importers", "mirrors")
PACK_SHAPE = ("core", "settings", "state", "pack", "hookspecs", "views", "commands", "nodes", "__init__")


def room(module: str) -> str | None:
    parts = module.split(".")[1:]
    if not parts:
        return None
    if parts[0] == "runtime":
        return f"runtime/{parts[1]}" if len(parts) > 1 and parts[1] in ("adapters", "storage") else "runtime"
    if parts[0] != "packs" or len(parts) < 2:
        return None
    if parts[1] != "memory":
        return f"packs/{parts[1]}"
    if len(parts) > 2 and parts[2] in WINGS:
        return f"memory/{parts[2]}"
    return "memory/pack" if len(parts) < 3 or parts[2] in PACK_SHAPE else "memory/verbs"


def arrows() -> Counter[tuple[str, str]]:
    import grimp

    graph = grimp.build_graph("palimpsest_memory", include_external_packages=False)
    out: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        src = room(module)
        for imported in graph.find_modules_directly_imported_by(module):
            dst = room(imported)
            if src and dst and src != dst:
                out[(src, dst)] += 1
    return out


def mermaid(edges: Counter[tuple[str, str]]) -> str:
    ident = {name: name.replace("/", "_") for pair in edges for name in pair}
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'  {ident[n]}["{n}"]' for n in sorted(ident)]
    lines += [f"  {ident[a]} -->|{k}| {ident[b]}" for (a, b), k in sorted(edges.items())]
    return "\n".join(lines + ["```"])


def main() -> int:
    edges = arrows()
    text = "\n".join([
        "# The house, drawn from its imports",
        "",
        f"Made by `python docs/structure.py` on {date.today().isoformat()}. An arrow goes from a room to a room it "
        "imports from; its number counts the module-level imports. The memory pack's wings are ADR 0043's; "
        "`memory/pack` is its shape (core, settings, state, hooks), `memory/verbs` the verb modules. The contracts "
        "that keep these arrows pointing one way are in pyproject.toml (`lint-imports`).",
        "",
        mermaid(edges),
        "",
        "| from | to | imports |",
        "|---|---|---:|",
        *[f"| {a} | {b} | {k} |" for (a, b), k in sorted(edges.items())],
        "",
    ])
    (ROOT / "docs" / "structure.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

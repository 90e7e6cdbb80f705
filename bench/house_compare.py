"""Issue 13 (the house): this tree against an older checkout, one after the other on the same machine.

Usage: python bench/house_compare.py --base DIR [--sizes 10000,100000] [--out bench/results/house.md]

DIR is a checkout of the commit to compare with (e.g. ``git worktree add --detach /tmp/base 675a480``). For each
tree, in this order: the dispatches and Python function calls of one ``memory.recall`` (2,000 notes, hashing
embedder, 50 recalls under cProfile), ``bench/memory_perf.py`` (recall latency side by side with plain BM25 and
exact dense in the same process) and ``bench/locomo.py --embedder wordllama --compare wordllama --speed 0`` (the LoCoMo tables, which
must be identical). Each tree runs in its own interpreter with its own code first on ``sys.path``.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import textwrap
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COUNT = textwrap.dedent('''
    import cProfile, pstats, sys
    sys.path.insert(0, sys.argv[1])
    import palimpsest_memory.runtime.engine as eng
    from palimpsest_memory.runtime.testing import open_test_runtime
    rt = open_test_runtime(config={"packs": {"memory": {"embedder": "hashing"}}})
    rt.call("memory.remember_many", {"notes": [{"content": f"note {i} about coffee and tea in Berlin {i % 7}"}
                                               for i in range(2000)]})
    rt.call("memory.recall", {"query": "coffee in Berlin"})
    made = [0]
    original = eng.CallInfo
    def counted(*a, **k):
        made[0] += 1
        return original(*a, **k)
    eng.CallInfo = counted
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(50):
        rt.call("memory.recall", {"query": "coffee in Berlin"})
    profile.disable()
    rt.close()
    print(made[0] / 50, pstats.Stats(profile).total_calls // 50)
''')


def run(tree: Path, args: list[str]) -> str:
    proc = subprocess.run([sys.executable, *args], cwd=tree, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "PALIMPSEST_CONFIG_DISABLED": "1"})
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return proc.stdout


def table_rows(md: str, first: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith(first)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", required=True, type=Path)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "house.md"))
    args = ap.parse_args()
    trees = {"base": args.base.resolve(), "this tree": ROOT}
    rev = {k: subprocess.run(["git", "-C", str(t), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() for k, t in trees.items()}
    work = Path(tempfile.mkdtemp())
    counts, perf, locomo = {}, {}, {}
    for name, tree in trees.items():
        script = work / "count.py"
        script.write_text(COUNT)
        counts[name] = run(tree, [str(script), str(tree)]).split()
        out = work / f"perf-{rev[name]}.md"
        run(tree, ["bench/memory_perf.py", "--sizes", args.sizes, "--out", str(out)])
        perf[name] = out.read_text()
        out = work / f"locomo-{rev[name]}.md"
        run(tree, ["bench/locomo.py", "--embedder", "wordllama", "--compare", "wordllama", "--speed", "0",
                   "--out", str(out)])
        locomo[name] = out.read_text()
    load = os.getloadavg()
    same = table_rows(locomo["base"], "|") == table_rows(locomo["this tree"], "|")
    product = {k: table_rows(v, "| **new default**, one shared store") for k, v in locomo.items()}
    lines = [
        "# The house (issue 13): before and after, same machine, one after the other",
        "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `python bench/house_compare.py --base DIR --sizes "
        f"{args.sizes}` on {platform.machine()}, Python {platform.python_version()}, 2 shared cores; load average "
        f"after the run {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}. Base = `{rev['base']}`, this tree = "
        f"`{rev['this tree']}`.",
        "",
        "## One recall's plumbing (2,000 notes, hashing embedder, 50 recalls)",
        "",
        "| tree | dispatches per recall | Python function calls per recall |",
        "|---|---|---|",
    ]
    lines += [f"| {k} (`{rev[k]}`) | {float(c[0]):.0f} | {int(c[1]):,} |" for k, c in counts.items()]
    lines += ["", "## Recall speed (`bench/memory_perf.py`; medians over 200 LoCoMo questions)", "",
              "| tree | notes | ingest notes/s (median batch / overall) | recall p50/p95 incl. embedding | "
              "recall p50/p95 excl. embedding | scoped p50/p95 | plain BM25 p50/p95 | plain dense p50/p95 | "
              "query embedding ms | peak RSS MB |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for name, md in perf.items():
        for row in table_rows(md, "| 1"):
            if re.match(r"\| [\d,]+ \| [\d,]+ /", row):
                lines.append(f"| {name} {row}")
    lines += ["", "## LoCoMo (`bench/locomo.py --embedder wordllama --compare wordllama --speed 0`)", "",
              f"Every table identical between the trees: **{'yes' if same else 'NO'}**. The product's rows "
              "(the default through `memory.recall`, one shared store, with and without `thread`):", ""]
    for name, rows in product.items():
        lines += [f"- {name}: `{r}`" for r in rows]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

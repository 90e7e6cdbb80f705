"""A small mutation pass (issue 46, item 8): do the tests of the read-only guard, the importers, forget and the
follower reach what they claim? Each planted bug below is applied, one at a time, to a copy of the tree (the real
files are never edited), the tests that should notice it run against the copy, and the bug counts as killed when
they fail. A survivor is a test that does not reach the path it names — as in 48f305c, where the import's "all or
nothing" test was refused at validation before it reached the writes (per-batch commits passed it) and the guard's
tests never tried a write hidden in another spelling.

Usage: python bench/mutation.py [--only NAME,...] [--out bench/results/mutation.md] [--keep]

The unmutated copy runs every test set first: a set that fails unmutated makes its mutants meaningless, and the
run stops. Tests run on DuckDB (PALIMPSEST_TEST_BACKENDS=duckdb) except where a mutant is about following another
process, which only a PostgreSQL store has. Each mutant's tests run with ``-x`` (the first failure kills it).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from report import cpu_model  # noqa: E402

GUARD = ["tests/runtime/test_sql_sandbox.py", "tests/runtime/test_dispatch.py"]
PAL_IMPORT = ["tests/packs/memory/test_import_whole.py", "tests/packs/memory/test_export_import.py"]
CHAT_IMPORT = ["tests/packs/memory/test_import_atomic.py"]
FORGET = ["tests/packs/memory/test_forget.py"]
FOLLOW = ["tests/runtime/test_mirror_seam.py"]
FOLLOW_PG = ["tests/runtime/test_postgres_shared.py"]


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str  # in the tree
    old: str  # replaced exactly once
    new: str
    tests: tuple[str, ...]
    backends: str = "duckdb"
    also: tuple[tuple[str, str], ...] = ()  # further (old, new) edits of the same file, each exactly once

    def edits(self) -> list[tuple[str, str]]:
        return [(self.old, self.new), *self.also]


MUTANTS = [
    # -- the read-only guard (runtime/storage/base.py) ------------------------------------------------------------
    Mutant("guard: read-only calls may run any statement", "runtime/storage/base.py",
           "if self.read_only and any(k not in READ_ONLY_STATEMENTS for k in kinds):",
           "if False and self.read_only and any(k not in READ_ONLY_STATEMENTS for k in kinds):", tuple(GUARD)),
    Mutant("guard: sequence calls inside a SELECT pass", "runtime/storage/base.py",
           "if name in WRITING_FUNCTIONS:", "if name in ():", tuple(GUARD)),
    Mutant("guard: any table function passes", "runtime/storage/base.py",
           "elif table and name not in READING_TABLE_FUNCTIONS", "elif False and name not in READING_TABLE_FUNCTIONS",
           tuple(GUARD)),
    Mutant("guard: only the outer SELECT's functions are looked at", "runtime/storage/base.py",
           "            for key, value in node.items():\n                walk(value,",
           "            for key, value in ([] if node.get('type') == 'SUBQUERY' else node.items()):\n"
           "                walk(value,", tuple(GUARD)),
    Mutant("guard: verbs may control transactions", "runtime/storage/base.py",
           'if "TRANSACTION" in kinds:', 'if "TRANSACTION" in () and kinds:', tuple(GUARD)),
    # -- the importers ------------------------------------------------------------------------------------------
    Mutant("pal import palimpsest: each batch its own transaction", "runtime/exportfile.py",
           "return rt.call_all(write, namespace=ns, internal=True)",
           "return write(lambda verb, params: rt.call(verb, params, namespace=ns, internal=True))",
           tuple(PAL_IMPORT)),
    Mutant("pal import palimpsest: no check pass before the writes", "runtime/exportfile.py",
           "        check_file(path, packs, keys)\n", "", tuple(PAL_IMPORT)),
    Mutant("pal import palimpsest: repeated keys not looked for", "runtime/exportfile.py",
           "    if twice:", "    if False:", tuple(PAL_IMPORT)),
    Mutant("pal import palimpsest: a failed batch is skipped, the rest kept", "runtime/exportfile.py",
           "                res = call(f\"{pack}.import_records\", {\"records\": batch})\n",
           "                try:\n                    res = call(f\"{pack}.import_records\", {\"records\": batch})\n"
           "                except Exception:\n                    continue\n", tuple(PAL_IMPORT)),
    Mutant("chat import: no validation pass", "packs/memory/import_verbs.py",
           "        validate(ctx.settings, items(), plan)\n",
           "        for item in items():\n            plan.setdefault(item.scope, ConversationPlan()).notes += 1\n"
           "            if item.speaker is not None:\n"
           "                plan[item.scope].speakers.setdefault(item.speaker)\n", tuple(CHAT_IMPORT)),
    Mutant("chat import: a batch that fails is dropped, the rest kept", "packs/memory/import_verbs.py",
           "        got, fresh = store_notes(ctx, batch)\n",
           "        try:\n            got, fresh = store_notes(ctx, batch)\n"
           "        except errors.PalimpsestError:\n            got, fresh = [], []\n", tuple(CHAT_IMPORT),
           also=(("    if len(ids) != expected:\n", "    if False:\n"),)),  # (that check alone caught it)
    # -- forget ---------------------------------------------------------------------------------------------------
    Mutant("forget: vectors kept", "packs/memory/forget.py",
           '    ctx.db.execute(f"DELETE FROM memory.vectors WHERE namespace = ? AND note_id IN {chosen}", [ns, ids])\n',
           "", tuple(FORGET)),
    Mutant("forget: audit trail kept", "packs/memory/forget.py",
           '    ctx.db.execute(f"DELETE FROM memory.note_audit WHERE namespace = ? AND note_id IN {chosen}", [ns, ids])\n',
           "", tuple(FORGET)),
    Mutant("forget: the store file is not rewritten", "runtime/compact.py",  # (forget and kg.forget both ask)
           "    took = rt.store.erase_bytes(sorted(rt.catalog.packs))", "    took = 0.0", tuple(FORGET)),
    Mutant("forget: index snapshot kept", "packs/memory/forget.py",
           "    snapshot.drop(ctx)  #", "    pass  #", tuple(FORGET)),
    Mutant("forget: belief text kept", "packs/memory/forget.py",
           "UPDATE memory.belief_versions SET content = ''", "UPDATE memory.belief_versions SET content = content",
           tuple(FORGET)),
    # -- the follower (runtime/aftercommit.py) ----------------------------------------------------------------------
    Mutant("follower: a call's own changes never reach the mirrors", "runtime/aftercommit.py",
           "            if self._feed(changes, set()):\n", "            if self._feed([], set()):\n", tuple(FOLLOW)),
    Mutant("follower: changes applied newest first", "runtime/aftercommit.py",
           "            by_owner.setdefault(change.pack, []).append(change)",
           "            by_owner.setdefault(change.pack, []).insert(0, change)", tuple(FOLLOW + FOLLOW_PG), "postgres"),
    Mutant("follower: a mirror that failed is not reloaded", "runtime/aftercommit.py",
           "                    failed.append((owner, mirror))", "                    pass", tuple(FOLLOW)),
    Mutant("follower: other processes' changes dropped", "runtime/aftercommit.py",
           "            elif pack in self.mirrors and (ns in self.held",
           "            elif False and pack in self.mirrors and (ns in self.held", tuple(FOLLOW_PG), "postgres"),
    Mutant("follower: the log's position not advanced", "runtime/aftercommit.py",
           "        if rows:\n            self.seq = rows[-1][0]\n", "", tuple(FOLLOW_PG), "postgres"),
]


def copy_tree(dest: Path) -> None:
    """The working tree as it is (uncommitted changes included), without git's data, caches or environments."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in (".git", "__pycache__", ".venv", ".pytest_cache", ".mypy_cache",
                                          "results", "node_modules") or n.endswith(".duckdb")}
    shutil.copytree(ROOT, dest, symlinks=True, ignore=ignore, dirs_exist_ok=True)


def run_tests(tree: Path, tests: tuple[str, ...], backends: str, first_failure: bool) -> tuple[int, float, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PALIMPSEST_TEST_BACKENDS": backends,
           "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *(["-x"] if first_failure else []),
           *tests]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    return proc.returncode, time.perf_counter() - t, tail


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated parts of mutant names to run (default: all)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "mutation.md"))
    ap.add_argument("--keep", action="store_true", help="keep the copy of the tree (its path is printed)")
    args = ap.parse_args()
    wanted = [w.strip() for w in args.only.split(",") if w.strip()]
    mutants = [m for m in MUTANTS if not wanted or any(w in m.name for w in wanted)]
    tree = Path(tempfile.mkdtemp(prefix="pal-mutation-"))
    started, load_before = datetime.now(), load()
    try:
        copy_tree(tree)
        sets = sorted({(m.tests, m.backends) for m in mutants})
        for tests, backends in sets:  # unmutated, every set must pass
            rc, secs, tail = run_tests(tree, tests, backends, first_failure=False)
            print(f"baseline {' '.join(tests)} [{backends}]: exit {rc} in {secs:.0f} s ({tail})", flush=True)
            if rc != 0:
                print("the unmutated tests fail: no mutant can be judged", file=sys.stderr)
                return 2
        rows = []
        for m in mutants:
            target = tree / m.path
            original = target.read_text(encoding="utf-8")
            stale = [old for old, _ in m.edits() if original.count(old) != 1]
            if stale:
                rows.append((m, "stale", 0.0, f"the text to mutate is not there once: {stale[0][:60]!r}"))
                print(f"STALE    {m.name}", flush=True)
                continue
            mutated = original
            for old, new in m.edits():
                mutated = mutated.replace(old, new)
            target.write_text(mutated, encoding="utf-8")
            try:
                rc, secs, tail = run_tests(tree, m.tests, m.backends, first_failure=True)
            finally:
                target.write_text(original, encoding="utf-8")
            verdict = "killed" if rc == 1 else "survived" if rc == 0 else f"error (exit {rc})"
            rows.append((m, verdict, secs, tail))
            print(f"{verdict.upper():8} {m.name} ({secs:.0f} s: {tail})", flush=True)
    finally:
        if args.keep:
            print(f"the copy stays at {tree}")
        else:
            shutil.rmtree(tree, ignore_errors=True)
    write_report(Path(args.out), rows, started, load_before)
    return 0 if all(v == "killed" for _, v, _, _ in rows) else 1


def write_report(out: Path, rows: list, started: datetime, load_before: str) -> None:
    killed = sum(v == "killed" for _, v, _, _ in rows)
    lines = [
        "# Mutation pass: do the tests reach what they claim?", "",
        f"Run {started:%Y-%m-%d %H:%M} by `python bench/mutation.py` on {cpu_model()}, load {load_before} at the "
        f"start, {load()} at the end. Each planted bug is applied alone to a copy of the tree; killed = the tests "
        "named failed (`pytest -x`), survived = they passed with the bug in.", "",
        f"**{killed} of {len(rows)} killed**"
        + (f"; survived: {', '.join(m.name for m, v, _, _ in rows if v != 'killed')}." if killed < len(rows) else "."),
        "", "| planted bug | file | tests | backend | result | seconds |", "|---|---|---|---|---|---|",
    ]
    for m, verdict, secs, _tail in rows:
        tests = ", ".join(Path(t).name for t in m.tests)
        lines.append(f"| {m.name} | `{m.path}` | {tests} | {m.backends} | {verdict} | {secs:.0f} |")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    raise SystemExit(main())

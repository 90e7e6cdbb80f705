"""The long fuzz run (issue 9): every public verb, many examples, per-verb outcome counts.

    python bench/fuzz.py [--examples 300] [--seed 1] [--verbs memory.recall,kg.link]

Same strategies and oracle as tests/reliability/test_fuzz.py (``rel_support``), on a seeded in-memory store;
prints a markdown table (calls, accepted, rejections by error code, failures explained by a pinned known issue)
and every unexplained failure with Hypothesis's minimal example. Exit status 1 if any verb failed.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from rel_support import HASHING, ISOLATED_ENV, FuzzOracle, default_hints, params_strategy, seed_store  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--verbs", default="", help="comma-separated subset (default: the whole catalog)")
    args = ap.parse_args()
    logging.getLogger("palimpsest").setLevel(logging.CRITICAL)
    from palimpsest_memory.runtime import Runtime

    rt = Runtime.open(":memory:", config=HASHING, env=ISOLATED_ENV, clock=lambda: datetime(2026, 3, 9, 12))
    seeded = seed_store(rt)
    hints = default_hints(seeded["ids"], seeded["recall_ids"])
    verbs = [v.full_name for v in rt.verbs()]
    if args.verbs:
        verbs = [v for v in verbs if v in set(args.verbs.split(","))]
    print(f"fuzz: {len(verbs)} verbs x {args.examples} examples, seed {args.seed}\n")
    print("| verb | calls | accepted | rejected (by code) | explained known issues | result | s |")
    print("|---|---|---|---|---|---|---|")
    failures, total, t_all = [], 0, time.perf_counter()
    for verb in verbs:
        spec = rt.catalog.resolve(verb, caller_pack=None, internal=False)
        oracle = FuzzOracle(rt)

        @seed(args.seed)
        @settings(max_examples=args.examples, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(params_strategy(spec, hints))
        def run(case):
            oracle.call(verb, case[1])

        t = time.perf_counter()
        try:
            run()
            result = "ok"
        except BaseException as exc:  # noqa: BLE001 - report and go on with the next verb
            result = "FAIL"
            failures.append((verb, f"{type(exc).__name__}: {exc}"))
        st = oracle.stats
        total += st.calls
        rej = ", ".join(f"{k} {v}" for k, v in sorted(st.rejected.items()))
        expl = ", ".join(f"{k.split('::')[-1]} {v}" for k, v in sorted(st.explained.items())) or "-"
        print(f"| {verb} | {st.calls} | {st.ok} | {rej} | {expl} | {result} | {time.perf_counter() - t:.1f} |",
              flush=True)
    print(f"\n{total} calls in {time.perf_counter() - t_all:.0f} s; {len(failures)} verb(s) failed")
    for verb, msg in failures:
        print(f"\n### {verb}\n```\n{msg[:4000]}\n```")
    rt.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

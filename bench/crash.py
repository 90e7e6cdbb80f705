"""The long crash-safety run (issue 9): many SIGKILLs of a bulk ingest, each followed by a full check.

    python bench/crash.py [--chains 4] [--runs 15] [--seed 1] [--spawn] [--max-delay 0.25]

Same harness as tests/reliability/test_crash.py (``rel_support.crash_campaign``): each chain is one store file,
killed and reopened ``--runs`` times (while opening, when ready, or a random moment after its k-th acknowledged
batch; half the runs with a 64 KB checkpoint threshold). ``--spawn`` starts a fresh interpreter per run instead
of forking a pre-imported one. Prints one line per run and a summary; exit status 1 on any finding.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reliability"))

from rel_support import crash_campaign  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--runs", type=int, default=15, help="kills per chain")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-delay", type=float, default=0.25)
    ap.add_argument("--spawn", action="store_true", help="a fresh interpreter per run (slower)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pal-crash-") as tmp:
        records = crash_campaign(Path(tmp), chains=args.chains, runs=args.runs, seed=args.seed, workers=args.workers,
                                 max_delay=args.max_delay, fork=not args.spawn,
                                 log=lambda r: print(f"{r.chain} run {r.run:3d} {r.mode:5s} +{r.delay:.3f}s "
                                                     f"from batch {r.start_batch:4d}: {r.acked_batches:3d} acked, "
                                                     f"checkpoint {r.checkpoint or '-':5s} "
                                                     f"{'OK' if not r.problems else r.problems}", flush=True))
    bad = [r for r in records if r.problems]
    modes = Counter(r.mode for r in records)
    acked = sum(r.acked_batches for r in records)
    print(f"\n{len(records)} kills ({', '.join(f'{m} {n}' for m, n in sorted(modes.items()))}), {acked} batches "
          f"acknowledged before a kill (all re-checked after every later kill of their chain), {sum(r.checkpoint is not None for r in records)} with a 64 KB "
          f"checkpoint threshold; {len(bad)} run(s) with findings; {time.perf_counter() - t0:.0f} s "
          f"({'spawn' if args.spawn else 'fork'})")
    for r in bad:
        print(f"FINDING chain {r.chain} run {r.run}: {r.problems}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

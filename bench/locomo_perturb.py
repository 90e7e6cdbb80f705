"""Perturbed copies of a LoCoMo file for the episode runs (issue 44): turns with their own times, or no times at all.

LoCoMo gives one time per session and every turn of it shares that time; sessions are days to weeks apart, so any
gap rule rebuilds the sessions exactly. Real chat logs have pauses of seconds to hours inside one conversation and
conversations hours apart. The recipe below (published with the results, a fixed seed) makes such a copy:

- **inside a session**, the gap before each turn after the first is drawn from a power law truncated to
  [10 s, 3 h]: density ∝ g^-(1+a) with shape ``a = 0.5`` (a heavy tail: median 38 s, 90th percentile 10 min, 99th
  1.7 h; 4.5 % of the gaps exceed 30 minutes, so the fixed 30-minute rule cuts a 21-turn session about once);
  inverse CDF ``g = lo / (1 - u·(1 - (lo/hi)^a))^(1/a)``, ``u ~ U[0, 1)``;
- **between sessions**, the gap from a session's last turn to the next session's first is log-uniform on
  [1 h, 7 days] (``g = lo·(hi/lo)^u``): as many gaps of 1-2 hours as of 2-4 days; 21 % of them are under 3 h,
  so a time rule alone cannot tell every session boundary from a long pause inside a session;
- the first session starts at its LoCoMo date; each turn gets ``"timestamp"`` (ISO 8601, whole seconds) and each
  ``session_N_date_time`` becomes its first turn's time in LoCoMo's format;
- draws, with ``numpy.random.default_rng(seed)``: conversations in file order, sessions in number order, for each
  session first its gap from the previous session (none for the first), then one gap per turn after the first.

``no_times`` makes the copy with no time at all: every ``session_N_date_time`` and ``timestamp`` removed.
``python bench/locomo_perturb.py --seed 44 --out DIR`` writes both copies of the dev file (read-only data stays
in ../shared/data; the copies are derived, CC BY-NC 4.0 as the source).
"""
from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import re
from pathlib import Path

import numpy as np

TURN_GAP = (10.0, 3 * 3600.0, 0.5)  # seconds: lower, upper bound, power-law shape a
SESSION_GAP = (3600.0, 7 * 86400.0)  # seconds, log-uniform
SEED = 44  # the number: chosen before any run, never changed to suit a result


def turn_gap(u: np.ndarray, lo: float = TURN_GAP[0], hi: float = TURN_GAP[1], a: float = TURN_GAP[2]) -> np.ndarray:
    """The truncated power law's inverse CDF at ``u`` in [0, 1)."""
    return lo / (1.0 - u * (1.0 - (lo / hi) ** a)) ** (1.0 / a)


def session_gap(u: np.ndarray, lo: float = SESSION_GAP[0], hi: float = SESSION_GAP[1]) -> np.ndarray:
    return lo * (hi / lo) ** u


def _sessions(conv: dict) -> list[int]:
    return sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and isinstance(conv[k], list))


def _locomo_date(t: dt.datetime) -> str:
    """LoCoMo's ``"1:56 pm on 8 May, 2023"``."""
    return f"{t.hour % 12 or 12}:{t.minute:02d} {'am' if t.hour < 12 else 'pm'} on {t.day} {t:%B}, {t.year}"


def perturb(data: list[dict], seed: int = SEED) -> list[dict]:
    """A copy of a LoCoMo file with a time per turn drawn by the recipe above."""
    from locomo import parse_session_date
    rng = np.random.default_rng(seed)
    out = copy.deepcopy(data)
    for sample in out:
        conv = sample["conversation"]
        clock: dt.datetime | None = None
        for n in _sessions(conv):
            turns = conv[f"session_{n}"]
            if clock is None:
                clock = parse_session_date(conv.get(f"session_{n}_date_time", "")) or dt.datetime(2023, 1, 1, 9)
            else:
                clock += dt.timedelta(seconds=round(float(session_gap(rng.random()))))
            gaps = turn_gap(rng.random(max(len(turns) - 1, 0)))
            conv[f"session_{n}_date_time"] = _locomo_date(clock)
            for j, t in enumerate(turns):
                if j:
                    clock += dt.timedelta(seconds=round(float(gaps[j - 1])))
                t["timestamp"] = clock.isoformat()
        for k in [k for k in conv if re.fullmatch(r"session_\d+_date_time", k)]:
            if not isinstance(conv.get(k[: -len("_date_time")]), list):
                del conv[k]  # a date for a session the file does not hold
    return out


def no_times(data: list[dict]) -> list[dict]:
    """A copy of a LoCoMo file without any time."""
    out = copy.deepcopy(data)
    for sample in out:
        conv = sample["conversation"]
        for k in [k for k in conv if re.fullmatch(r"session_\d+_date_time", k)]:
            del conv[k]
        for n in _sessions(conv):
            for t in conv[f"session_{n}"]:
                t.pop("timestamp", None)
    return out


def main(argv=None) -> int:
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from locomo import DEFAULT_FILE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=str(DEFAULT_FILE))
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--out", required=True, help="directory for <name>-timed-s<seed>.json and <name>-untimed.json")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.file).read_text())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = Path(args.file).stem
    (out / f"{stem}-timed-s{args.seed}.json").write_text(json.dumps(perturb(data, args.seed)))
    (out / f"{stem}-untimed.json").write_text(json.dumps(no_times(data)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

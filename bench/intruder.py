"""The intruder (issue 46, item 9): a second process tries to open a store every 2 ms while its holder runs every
maintenance operation, and every write the holder acknowledged is looked for afterwards.

    python bench/intruder.py [--rounds 3] [--writes 40] [--out bench/results/reliability.md]

One round: ``pal serve`` holds a DuckDB file; a client remembers notes through it without pause (each
acknowledged id recorded); meanwhile ``memory.backup`` (F1), ``memory.forget`` with its file rewrite (F2), ``pal
restore --force`` of a backup onto the served file (F3: must be refused) and finally the server's close (SIGTERM)
run, while the intruder opens the file read-write every 2 ms (DuckDB's own open, as a ``pal --db`` command would).
An intrusion is an open that succeeded while the server's store held the file (until its close let go of it,
which the server records), or a restore that replaced the served file.
After the server has exited the store is opened and every acknowledged note that was not forgotten must be there.
An attempt is DuckDB's own open plus a 2 ms pause; a refused open itself takes milliseconds (~10 ms under load
here), so the counts per phase say how often the intruder really tried during each operation.
Prints a summary and (with ``--out``) adds it to the report; exit status 1 on any intrusion or lost write.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")},
       "PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST__packs__memory__embedder": "hashing", "PYTHONPATH": str(ROOT)}
CLI = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]
# `pal serve` itself, with one line of instrumentation: the moment its store let go of the file (DuckStore.close
# returned) is written to <db>.let-go. An open after that moment, while the process is still exiting, is the store
# being free again, not an intrusion; one before it is.
SERVE = [sys.executable, "-c", """
import sys, time
from palimpsest_memory.runtime.storage import duck_store
real = duck_store.DuckStore.close
def close(self):
    real(self)
    if not self.in_memory:
        open(self.location + ".let-go", "w").write(repr(time.time()))
duck_store.DuckStore.close = close
from palimpsest_memory.runtime.adapters.cli import main
sys.argv = ["pal", *sys.argv[1:]]
raise SystemExit(main())
"""]


def intrude(path: str, stop: "mp.synchronize.Event", out: "mp.Queue") -> None:
    """Open ``path`` read-write every 2 ms until ``stop``; report (times of the attempts, of the opens that succeeded)."""
    import duckdb

    attempts, wins = [], []
    while not stop.is_set():
        attempts.append(time.time())
        try:
            con = duckdb.connect(path)
        except duckdb.Error:
            pass
        else:
            wins.append(time.time())
            con.close()
        time.sleep(0.002)
    out.put((attempts, wins))


def wait_for_server(db: Path, proc: subprocess.Popen, limit: float = 120.0) -> str:
    info = Path(f"{db}.server.json")
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited before serving: {proc.stderr.read() if proc.stderr else ''}")
        try:
            return json.loads(info.read_text())["url"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.05)
    raise SystemExit("the server did not announce itself")


def one_round(tmp: Path, n: int, writes: int) -> dict:
    from palimpsest_memory.runtime import errors
    from palimpsest_memory.runtime.adapters.remote import RemoteClient

    db = tmp / f"round{n}.duckdb"
    server = subprocess.Popen([*SERVE, "--db", str(db), "serve", "--port", "0"], env=ENV, cwd=ROOT,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = wait_for_server(db, server)
    client = RemoteClient(url)
    acked: list[int] = []
    failed: list[str] = []
    writing = threading.Event()
    writing.set()

    def writer() -> None:
        i = 0
        while writing.is_set():
            try:
                acked.append(int(client.call("memory.remember", {"content": f"acked note {n}.{i}"})["note"]["id"]))
            except errors.PalimpsestError as exc:  # an error answer is not an acknowledgement
                failed.append(exc.code)
            i += 1

    stop, queue = mp.Event(), mp.Queue()
    spy = mp.Process(target=intrude, args=(str(db), stop, queue))
    spy.start()
    thread = threading.Thread(target=writer)
    thread.start()
    ops: dict[str, int] = {"backup": 0, "forget": 0, "restore refused": 0, "restore replaced": 0}
    forgotten: set[int] = set()
    backup = None
    phases: list[tuple[str, float, float]] = []  # (what ran, from, to): where each successful open fell

    def timed(what: str, body: Any) -> Any:
        start = time.time()
        try:
            return body()
        finally:
            phases.append((what, start, time.time()))

    while len(acked) < writes:
        time.sleep(0.01)
    for k in range(3):
        made = timed("backup", lambda: client.call("memory.backup", {"name": f"b{n}-{k}.duckdb"})["path"])
        backup = backup or made
        ops["backup"] += 1
        victim = acked[len(acked) // 2 + k]
        timed("forget", lambda: client.call("memory.forget", {"ids": [victim], "reason": "intruder bench"}))
        forgotten.add(victim)
        ops["forget"] += 1
        proc = timed("restore", lambda: subprocess.run([*CLI, "--db", str(db), "restore", "--force", str(backup)],
                                                       env=ENV, cwd=ROOT, capture_output=True, text=True))
        ops["restore refused" if proc.returncode != 0 else "restore replaced"] += 1
        time.sleep(0.2)
    writing.clear()
    thread.join()
    server.send_signal(signal.SIGTERM)  # close of a running pal serve, the intruder still trying
    timed("close", server.wait)
    exited = float(Path(f"{db}.let-go").read_text())  # the store let go of the file: free from here on
    time.sleep(0.05)
    stop.set()
    attempts, wins = queue.get()
    spy.join()
    from palimpsest_memory.runtime import Runtime

    with Runtime.open(db, env={"PALIMPSEST_CONFIG_DISABLED": "1",
                               "PALIMPSEST__packs__memory__embedder": "hashing"}) as rt:
        stored = {n.id for n in rt.call("memory.list", {"limit": 1000, "include_archived": True}).notes}
    lost = sorted(set(acked) - forgotten - stored)
    def phase(t: float) -> str:
        return next((p for p, a, b in phases if a <= t <= b), "serving")

    where: dict[str, int] = {}
    for w in wins:
        if w < exited:
            where[phase(w)] = where.get(phase(w), 0) + 1
    tried: dict[str, int] = {}
    for a in attempts:
        if a < exited:
            tried[phase(a)] = tried.get(phase(a), 0) + 1
    return {"attempts": len(attempts), "attempts_by_phase": tried,
            "ms_by_phase": {p: round(sum(b - a for q, a, b in phases if q == p) * 1000) for p, _, _ in phases},
            "intrusions": sum(w < exited for w in wins) + ops["restore replaced"],
            "intrusions_by_phase": where,
            "opens_after_release": sum(w >= exited for w in wins), "acked": len(acked), "lost": lost,
            "forgotten_still_there": sorted(forgotten & stored), "error_answers": len(failed), **ops}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--writes", type=int, default=40, help="acknowledged notes before the maintenance starts")
    ap.add_argument("--out", default="", help="a markdown report to add the summary to (e.g. "
                                              "bench/results/reliability.md)")
    args = ap.parse_args()
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory(prefix="pal-intruder-") as tmp:
        for n in range(args.rounds):
            r = one_round(Path(tmp), n, args.writes)
            results.append(r)
            print(json.dumps(r), flush=True)
    total = {k: sum(r[k] if isinstance(r[k], int) else len(r[k]) for r in results)
             for k in ("attempts", "intrusions", "opens_after_release", "acked", "lost", "forgotten_still_there",
                       "backup", "forget", "restore refused", "restore replaced", "error_answers")}
    by_phase: dict[str, list[int]] = {}
    for r in results:
        for p, k in r["attempts_by_phase"].items():
            by_phase.setdefault(p, [0, 0])[0] += k
        for p, ms in r["ms_by_phase"].items():
            by_phase.setdefault(p, [0, 0])[1] += ms
    tried = ", ".join(f"{k} during {p}" + (f" ({ms} ms in all)" if p != "serving" else " calls")
                      for p, (k, ms) in sorted(by_phase.items()))
    line = (f"{args.rounds} rounds, {total['attempts']} opens tried ({tried}) during {total['backup']} backups, "
            f"{total['forget']} forgets with their rewrite, {total['restore refused'] + total['restore replaced']} "
            f"`restore --force` onto the served file ({total['restore refused']} refused) and {args.rounds} closes: "
            f"**{total['intrusions']} intrusions, {total['lost']} of {total['acked']} acknowledged writes lost**, "
            f"{total['forgotten_still_there']} forgotten notes still there, {total['error_answers']} error answers; "
            f"{total['opens_after_release']} opens after the server's store had let go of the file at its close (free "
            f"again, as expected); "
            f"{time.perf_counter() - t0:.0f} s, load {load0:.1f}")
    print(line)
    if args.out:
        out = Path(args.out)
        text = out.read_text(encoding="utf-8") if out.exists() else ""
        entry = (f"\n## The intruder (issue 46, item 9), {datetime.now():%Y-%m-%d}\n\n`python bench/intruder.py "
                 f"--rounds {args.rounds} --writes {args.writes}`: {line}.\n")
        out.write_text(text.rstrip("\n") + "\n" + entry, encoding="utf-8")
    return 1 if total["intrusions"] or total["lost"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

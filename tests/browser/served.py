"""A real `pal serve` process over a store of either backend, for the browser tests of the pages people tidy their
memory in (issue 42, item 3): the store is filled in this process first (a DuckDB file is then closed, since the
server holds it), and the server is found through what it announces in the store, as any client finds it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import processes  # tests/helpers

from palimpsest_memory.runtime import Runtime, storage

ROOT = Path(__file__).resolve().parents[2]
HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}  # no model download; the same in both processes
STARTUP_LIMIT = 90.0  # a server that has not announced itself by then has failed to start (not a speed check)
SCOPES = ("orion", "vega")
KINDS = ("decision", "problem", "preference", None)
NOTES = 32  # more than one page of the notes list (25)
T0 = datetime(2026, 3, 1, 9, 0)
BIG = 500  # nodes in the big namespace's neighbourhood (the hub and its 499 neighbours; conftest.build_store)
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"  # outside the repo (its licence)


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    return {**env, **HASHING, "PALIMPSEST_CONFIG_DISABLED": "1", "PYTHONPATH": str(ROOT)}


def open_store(target: str) -> Runtime:
    return Runtime.open(target, env={**HASHING, "PALIMPSEST_CONFIG_DISABLED": "1"})


def fill(target: str) -> dict[str, Any]:
    """Notes over two scopes, four kinds, tags and 32 days; recalls made for two actors with feedback. Returns the
    ids and recall ids the tests look for."""
    with open_store(target) as rt:
        ids = []
        for i in range(NOTES):
            note = {"content": f"Note {i:02d} of {SCOPES[i % 2]}: step {i} of the plan, decided on day {i}",
                    "scope": SCOPES[i % 2], "tags": ["plan"] + (["urgent"] if i % 4 == 0 else []),
                    "occurred_at": (T0 + timedelta(days=i)).isoformat()}
            if KINDS[i % 4]:
                note["kind"] = KINDS[i % 4]
            ids.append(rt.call("memory.remember", note).note.id)
        recalls = {}
        for actor, query in (("ada", "step 3 of the plan"), ("bo", "decided on day 7")):
            served = rt.call("memory.recall", {"query": query, "limit": 3}, actor=actor)
            recalls[actor] = served.recall_id
            rt.call("brain.feedback", {"recall_id": served.recall_id, "note_id": served.results[0].note.id,
                                       "signal": "useful"}, actor=actor)
    return {"ids": ids, "recalls": recalls}


class PalServe:
    """``pal --db TARGET serve --port 0`` as a child process, stopped with SIGTERM."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.proc = subprocess.Popen([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", target,
                                      "serve", "--port", "0"], cwd=ROOT, env=child_env(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + STARTUP_LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"pal serve exited with {self.proc.returncode}: {self.proc.stderr.read()}")
            mine = [s for s in storage.live_servers(target) if s.get("pid") == self.proc.pid and s["kind"] == "http"]
            if mine:
                self.url = str(mine[0]["url"]).rstrip("/")
                return
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"pal serve did not announce itself within {STARTUP_LIMIT} s")

    def call(self, verb: str, params: dict[str, Any] | None = None, namespace: str | None = None) -> Any:
        from palimpsest_memory.runtime.adapters.remote import RemoteClient

        return RemoteClient(self.url).call(verb, params or {}, namespace=namespace)

    def acts(self) -> dict[str, str]:
        """verb -> speech act, from the server's catalog (``GET /v1/verbs``)."""
        with urllib.request.urlopen(f"{self.url}/v1/verbs", timeout=60) as res:
            return {v["verb"]: v["act"] for v in json.loads(res.read())["result"]["verbs"]}

    def stop(self) -> str:
        return processes.stop(self.proc)

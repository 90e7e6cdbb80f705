"""Two processes remembering the same text at once on one PostgreSQL store (issue 42 item 4, ADR 0039): they end
with one note seen twice, whatever the interleaving, because a writing call holds its namespace's advisory lock
from before its lookup until its commit. A third process that only follows the store sees the count and recalls
the note once."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest_memory.runtime.testing import POSTGRES_MISSING, open_test_runtime, postgres_available
from store_support import HASHING

pytestmark = pytest.mark.skipif(not postgres_available(), reason=POSTGRES_MISSING)
ROOT = Path(__file__).resolve().parents[3]
WORKER = ROOT / "tests" / "helpers" / "pg_worker.py"


def spawn(url: str, text: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PALIMPSEST_CONFIG_DISABLED": "1"}
    return subprocess.Popen([sys.executable, str(WORKER), "remember_on_go", url, text], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.parametrize("texts", [("We ship on Tuesday", "we ship on tuesday "),
                                   ("Ｔｈｅ cache is cold", "the CACHE is  cold", "The cache is cold")])
def test_processes_racing_end_with_one_note(pal_postgres, texts) -> None:  # type: ignore[no-untyped-def]
    url = pal_postgres.fresh()
    follower = open_test_runtime(config=HASHING, discover=True, path=url)  # creates the schema first
    try:
        follower.call("memory.count", {})
        workers = [spawn(url, t) for t in texts]
        try:
            for w in workers:
                line = w.stdout.readline()
                assert line.strip() == "ready", (line, w.stderr.read() if w.poll() is not None else "")
            for w in workers:  # both start their call at once
                w.stdin.write("go\n")
                w.stdin.flush()
            acks = [w.stdout.readline().split() for w in workers]
            for w in workers:
                assert w.wait() == 0, w.stderr.read()
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
        assert all(a and a[0] == "ack" for a in acks), acks
        ids = {int(a[1]) for a in acks}
        assert len(ids) == 1, acks
        assert sorted(int(a[2]) for a in acks) == [0] + [1] * (len(texts) - 1)  # one created, the others seen
        nid = ids.pop()
        assert follower.call("memory.count", {}).count == 1
        assert follower.call("memory.get", {"ids": [nid]}).notes[0].seen.count == len(texts)
        hits = follower.call("memory.recall", {"query": texts[0], "scope": "race"}).results
        assert [h.note.id for h in hits] == [nid]
    finally:
        follower.close()

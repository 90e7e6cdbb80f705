"""Several agents on one memory with nothing to run by hand (issue 42, item 1; ADR 0037): three `pal mcp` over
stdio started on one store, in any order, share it; any one can quit (or be stopped, or be killed) and the others
go on writing, with every acknowledged write in the store exactly once.

On main before this, the second `pal mcp` on a DuckDB file exited at start ("database is locked") and its client
saw only "Connection closed". On PostgreSQL every `pal mcp` opens the store itself, and nothing is shared."""
from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
pytest.importorskip("fastapi", reason="the 'mcp' extra is not installed (FastAPI serves the shared endpoint)")

from conftest import child_env, run_cli  # noqa: E402
from rawmcp import HASHING, RawMcp  # noqa: E402

from palimpsest_memory.runtime import Runtime, storage  # noqa: E402

pytestmark = pytest.mark.both_backends  # `target` is a store of each backend (the test plugin parametrises it)


@pytest.fixture
def target(pal_target: str) -> str:
    """A new store of the test's backend (both run: the test plugin parametrises ``pal_backend``)."""
    return pal_target


class Agent:
    """One agent app's `pal mcp` over stdio, initialised; ``remember`` returns the note id it was told."""

    def __init__(self, target: str) -> None:
        self.mcp = RawMcp(target)
        self.next_id = 10
        assert self.mcp.initialize()["result"]["serverInfo"]["name"] == "palimpsest"

    def remember(self, text: str) -> int:
        self.next_id += 1
        answer = self.mcp.call(self.next_id, "memory_remember", {"content": text})
        assert "error" not in answer, answer
        body = json.loads(answer["result"]["content"][0]["text"])
        assert answer["result"].get("isError") is not True and body["ok"] is True, body
        return int(body["result"]["note"]["id"])

    def quit(self) -> str:
        err = self.mcp.close()
        assert self.mcp.proc.returncode == 0, err
        return err


def stored_contents(target: str) -> list[str]:
    with Runtime.open(target, env={"PALIMPSEST_CONFIG_DISABLED": "1"},
                      config={"packs": {"memory": {"embedder": "hashing"}}}) as rt:
        notes = rt.call("memory.list", {"limit": 500}).notes
    return sorted(n.content for n in notes)


def holder_of(target: str) -> dict | None:
    found = storage.live_servers(target)
    return found[0] if found else None


def test_three_agents_share_one_store_and_any_one_can_quit(target: str) -> None:
    file = storage.is_store_file(target)
    acked: list[str] = []
    a = Agent(target)
    acked.append("a: Orion moved to Postgres in March")
    a.remember(acked[-1])
    b, c = Agent(target), Agent(target)  # started while `a` holds the store: they forward to it (a file)
    if file:
        info = holder_of(target)
        assert info is not None and info["pid"] == a.mcp.proc.pid and info["kind"] == "mcp-stdio"
        assert info["api"].startswith("http://127.0.0.1:") and len(info["token"]) >= 32
        mode = stat.S_IMODE(os.stat(target + ".server.json").st_mode)
        assert mode == 0o600, oct(mode)  # it carries the endpoint's token: the owner's only, as the store is
    for agent, name in ((b, "b"), (c, "c")):
        acked.append(f"{name}: the invoices need strict transactions")
        agent.remember(acked[-1])
    a.quit()  # the holder goes: b or c takes the file over at its next call
    for i in range(6):
        for agent, name in ((b, "b"), (c, "c")):
            acked.append(f"{name} after a left, note {i}")
            agent.remember(acked[-1])
    if file:
        info = holder_of(target)
        assert info is not None and info["pid"] in (b.mcp.proc.pid, c.mcp.proc.pid)
    b.quit()
    acked.append("c alone: the release is on Friday")
    c.remember(acked[-1])
    c.quit()
    assert holder_of(target) is None  # the last one out unannounced itself
    assert stored_contents(target) == sorted(acked)  # each acknowledged write exactly once


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_a_holder_stopped_or_killed_is_taken_over(tmp_path: Path, how: signal.Signals) -> None:
    target = str(tmp_path / "agents.duckdb")
    acked: list[str] = []
    a = Agent(target)
    acked.append("a: first")
    a.remember(acked[-1])
    b = Agent(target)
    acked.append("b: forwarded")
    b.remember(acked[-1])
    a.mcp.proc.send_signal(how)
    a.mcp.close()
    acked.append("b: after the holder went")
    b.remember(acked[-1])
    info = holder_of(target)
    assert info is not None and info["pid"] == b.mcp.proc.pid
    b.quit()
    assert stored_contents(target) == sorted(acked)


def test_the_cli_on_a_shared_file_says_who_holds_it(tmp_path: Path) -> None:
    target = str(tmp_path / "agents.duckdb")
    a = Agent(target)
    try:
        proc = run_cli("--db", target, "memory", "count", env=child_env(**HASHING))
        assert proc.returncode == 6, proc.stderr
        assert f"process {a.mcp.proc.pid}" in proc.stderr and "pal serve" in proc.stderr, proc.stderr
        assert "shares the memory" in proc.stderr, proc.stderr
    finally:
        a.quit()


def test_a_wrong_token_is_refused_by_the_shared_endpoint(tmp_path: Path) -> None:
    """The endpoint is for this user's own processes: without the token from the owner-only file, nothing."""
    from palimpsest_memory.runtime import errors
    from palimpsest_memory.runtime.adapters.remote import RemoteClient

    target = str(tmp_path / "agents.duckdb")
    a = Agent(target)
    try:
        info = holder_of(target)
        assert info is not None
        with pytest.raises(errors.PalimpsestError) as refused:
            RemoteClient(info["api"], token="not-the-token").call("memory.count", {})
        assert refused.value.code == "forbidden" and refused.value.details["reason"] == "unauthorized"
        assert RemoteClient(info["api"], token=info["token"]).call("memory.count", {})["count"] == 0
    finally:
        a.quit()

"""Every adapter as a real process on both backends (issue 41, item 6): `pal info`, `pal serve` (API and web
view), `pal mcp` over stdio forwarding to the server it discovers, `pal mcp --http`, `pal --server` for the data
commands, and `pal copy` between a file and a database. Each starts on a DuckDB file and on the test's PostgreSQL.

On main before the store seam every server crashed at start on a postgresql:// URL (the server-info file was put
"beside the database file"), and `pal info` printed `backend: duckdb` for a PostgreSQL store."""
from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
from mcp import Client, StdioServerParameters  # noqa: E402

import processes  # noqa: E402 (tests/helpers)
from conftest import REPO, STARTUP_LIMIT, child_env, run_cli  # noqa: E402
from test_adapters_mcp import call_ok, run  # noqa: E402

from palimpsest_memory.runtime import storage  # noqa: E402
from palimpsest_memory.runtime.adapters.remote import RemoteClient  # noqa: E402

pytestmark = pytest.mark.both_backends  # `target` is a store of each backend (the test plugin parametrises it)

HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}
PAL = [sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli"]


@pytest.fixture
def target(pal_target: str) -> str:
    """A new store of the test's backend (both run: the test plugin parametrises ``pal_backend``)."""
    return pal_target


class Served:
    """``pal --db TARGET ARGS`` as a server process; its URL is the one it announced through the store."""

    def __init__(self, target: str, *args: str, kind: str = "http") -> None:
        self.target = target
        self.proc = subprocess.Popen([*PAL, "--db", target, *args], cwd=REPO, env=child_env(**HASHING),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + STARTUP_LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"`pal {' '.join(args)}` exited with {self.proc.returncode}:\n"
                                     f"{self.proc.stderr.read()}")
            mine = [s for s in storage.live_servers(target) if s.get("pid") == self.proc.pid and s["kind"] == kind]
            if mine:
                self.url = str(mine[0]["url"])
                return
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"`pal {' '.join(args)}` did not announce itself within {STARTUP_LIMIT} s")

    def stop(self) -> str:
        return processes.stop(self.proc)


def pal(target: str, *args: str, server: str | None = None) -> subprocess.CompletedProcess:
    line = (["--server", server] if server else ["--db", target]) + list(args)
    return run_cli(*line, env=child_env(**HASHING))


def pal_json(target: str, *args: str, server: str | None = None) -> Any:
    proc = pal(target, "--json", *args, server=server)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def backend_of(target: str) -> str:
    return "duckdb" if storage.is_store_file(target) else "postgres"


def test_pal_info_names_the_store_as_it_is(target: str, tmp_path: Path) -> None:
    pal_json(target, "memory", "remember", "Orion runs on Postgres")
    info = pal_json(target, "info")
    assert info["backend"] == backend_of(target)
    assert info["database"] == storage.describe_store(target)  # an absolute path, or the URL without credentials
    assert "@" not in info["database"] and "password" not in info["database"]
    assert isinstance(info["size_bytes"], int) and info["size_bytes"] > 0
    assert info["server"].startswith("DuckDB" if backend_of(target) == "duckdb" else "PostgreSQL")
    assert [n["namespace"] for n in info["namespaces"]] == ["default"]


def test_pal_info_expands_the_home_folder(tmp_path: Path) -> None:
    """The default store lies under ~: `pal info` printed `<cwd>/~/.local/...` and no size."""
    env = child_env(**HASHING, HOME=str(tmp_path))
    proc = run_cli("--db", "~/pal/store.duckdb", "--json", "info", env=env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["database"] == str(tmp_path / "pal" / "store.duckdb") and info["size_bytes"] > 0


def test_pal_serve_answers_the_api_and_the_web_view_and_announces_itself(target: str) -> None:
    server = Served(target, "serve", "--port", "0")
    try:
        client = RemoteClient(server.url)
        client.call("memory.remember", {"content": "the team chose Postgres for Orion", "scope": "orion"})
        found = client.call("memory.recall", {"query": "Postgres Orion"})
        assert found["results"][0]["note"]["content"] == "the team chose Postgres for Orion"
        with urllib.request.urlopen(server.url + "/", timeout=30) as page:
            assert page.status == 200 and "text/html" in page.headers["Content-Type"]
        announced = storage.live_servers(target)
        assert [s["url"] for s in announced if s["pid"] == server.proc.pid] == [server.url]
        # a CLI call without --server goes to the same memory (PostgreSQL: many processes; a file: refused with
        # the server's URL, since the server holds it)
        direct = pal(target, "--json", "memory", "count")
        if backend_of(target) == "postgres":
            assert direct.returncode == 0 and json.loads(direct.stdout)["count"] == 1, direct.stderr
        else:
            assert direct.returncode == 6 and server.url in direct.stdout + direct.stderr, direct.stderr
    finally:
        err = server.stop()
    assert server.proc.returncode == 0, err
    assert [s for s in storage.live_servers(target) if s["pid"] == server.proc.pid] == []  # unannounced on exit


def test_pal_mcp_forwards_to_the_server_it_discovers(target: str) -> None:
    server = Served(target, "serve", "--port", "0")
    try:
        params = StdioServerParameters(command=sys.executable, args=PAL[1:] + ["--db", target, "mcp"],
                                       env=child_env(**HASHING), cwd=str(REPO))

        async def scenario() -> None:
            async with Client(params) as client:
                await call_ok(client, "memory_remember", {"content": "Orion moved to Postgres in March"})

        run(scenario)
        found = RemoteClient(server.url).call("memory.recall", {"query": "Orion Postgres"})
        assert found["results"][0]["note"]["content"] == "Orion moved to Postgres in March"
        if backend_of(target) == "postgres":
            # forwarded, not written by an agent-side runtime: forwarded calls carry an idempotency key, which the
            # server stored with the write
            import psycopg

            with psycopg.connect(target) as con:
                keyed = con.execute("SELECT count(*) FROM _palimpsest.idempotency WHERE verb = "
                                    "'memory.remember'").fetchone()[0]
            assert keyed == 1
    finally:
        server.stop()


def test_pal_mcp_over_http_serves_both_backends(target: str) -> None:
    server = Served(target, "mcp", "--http", "--port", "0", kind="mcp-http")
    try:
        async def scenario() -> None:
            async with Client(server.url) as client:
                await call_ok(client, "memory_remember", {"content": "Ada prefers tea"})
                found = await call_ok(client, "memory_recall", {"query": "tea"})
                assert found["results"][0]["text"] == "Ada prefers tea"  # compact over MCP (ADR 0033)

        run(scenario)
    finally:
        err = server.stop()
    assert server.proc.returncode == 0, err


def test_pal_server_carries_the_data_commands(target: str, tmp_path: Path) -> None:
    server = Served(target, "serve", "--port", "0")
    try:
        chat = tmp_path / "chat.jsonl"
        chat.write_text("\n".join(json.dumps({"speaker": s, "text": t}) for s, t in
                                  [("ana", "we ship Orion on Friday"), ("ben", "the database is Postgres")]) + "\n")
        assert pal_json(target, "-n", "work", "import", "jsonl", str(chat), server=server.url)
        assert pal_json(target, "-n", "work", "memory", "count", server=server.url)["count"] == 2
        out = tmp_path / "work.jsonl"
        pal_json(target, "export", str(out), "-n", "work", server=server.url)  # a global option after the command
        kinds = [json.loads(line).get("type") for line in out.read_text().splitlines()]
        assert kinds.count("note") == 2
        info = pal_json(target, "info", server=server.url)
        assert info["database"].startswith("held by the server")
        backup = pal(target, "backup", str(tmp_path / "copy.duckdb"), server=server.url)
        if backend_of(target) == "duckdb":
            assert backup.returncode == 0 and (tmp_path / "copy.duckdb").stat().st_size > 0, backup.stderr
        else:  # a database has no file to copy: the error says what does the job
            assert backup.returncode == 2 and "pal copy" in backup.stderr, backup.stderr
            assert not (tmp_path / "copy.duckdb").exists()
    finally:
        server.stop()


@pytest.mark.parametrize("backend", ["postgres"])
def test_pal_copy_between_a_file_and_a_database_and_back(tmp_path: Path, pal_postgres: Any, backend: str) -> None:
    first, back = tmp_path / "first.duckdb", tmp_path / "back.duckdb"
    for text in ("Orion runs on Postgres", "Ada prefers tea", "the launch is on Friday"):
        pal_json(str(first), "memory", "remember", text)
    url = pal_postgres.fresh()
    try:
        assert pal_json(str(first), "copy", str(first), url)["records"] > 0
        assert pal_json(url, "memory", "count")["count"] == 3
        pal_json(url, "copy", url, str(back))
        texts = sorted(n["content"] for n in pal_json(str(back), "memory", "list")["notes"])
        assert texts == sorted(["Orion runs on Postgres", "Ada prefers tea", "the launch is on Friday"])
    finally:
        pal_postgres.drop(url)

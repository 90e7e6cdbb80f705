"""A new verb in a newly installed pack appears in the CLI, MCP and HTTP with no adapter edit.

The pack (``zeta`` from fake_packs) is installed the way any third-party pack is, through a ``palimpsest.packs``
entry point in a dist-info directory on the path, and reached through the real ``pal`` commands.
"""
from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, ServerProcess, child_env, run_cli


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    dist = site / "palimpsest_zeta_test-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: palimpsest-zeta-test\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[palimpsest.packs]\nzeta = fake_packs:zeta\n")
    return site


def zeta_env(site: Path, **extra: str) -> dict[str, str]:
    env = child_env(PALIMPSEST_PACKS="zeta", COLUMNS="200", **extra)
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


def test_cli_lists_and_runs_the_new_verb(site, tmp_path):
    env = zeta_env(site)
    proc = run_cli("--json", "verbs", env=env)
    assert proc.returncode == 0, proc.stderr
    assert {v["verb"] for v in json.loads(proc.stdout)} == {"zeta.ping", "zeta.explode", "zeta.whoami"}  # no sub-handler
    proc = run_cli("zeta", "ping", "--help", env=env)
    assert proc.returncode == 0 and "--times" in proc.stdout and "Echo a message" in proc.stdout, proc.stderr
    proc = run_cli("--db", str(tmp_path / "pal.db"), "--json", "zeta", "ping", "hello", "--times", "2", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"echo": "hello hello"}


def test_cli_actor_option_and_env_reach_the_call(site, tmp_path):
    db = str(tmp_path / "pal.db")
    proc = run_cli("--db", db, "--actor", "alice", "-n", "team", "--json", "zeta", "whoami", env=zeta_env(site))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"namespace": "team", "actor": "alice"}
    proc = run_cli("--db", db, "--json", "zeta", "whoami", env=zeta_env(site, PALIMPSEST_ACTOR="bob"))
    assert proc.returncode == 0 and json.loads(proc.stdout)["actor"] == "bob", proc.stderr
    proc = run_cli("--db", db, "--actor", "carol", "--json", "zeta", "whoami", env=zeta_env(site, PALIMPSEST_ACTOR="bob"))
    assert proc.returncode == 0 and json.loads(proc.stdout)["actor"] == "carol", proc.stderr  # the option wins
    proc = run_cli("--db", db, "--json", "zeta", "whoami", env=zeta_env(site))
    assert proc.returncode == 0 and json.loads(proc.stdout)["actor"] is None, proc.stderr
    proc = run_cli("--db", db, "--actor", "two words", "--json", "zeta", "whoami", env=zeta_env(site))
    assert proc.returncode == 2, proc.stderr
    assert json.loads(proc.stdout or proc.stderr)["error"]["details"]["errors"][0]["loc"] == ["actor"]


def test_mcp_lists_and_calls_the_new_verb(site, tmp_path):
    pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "palimpsest_memory.runtime.adapters.cli", "--db",
                                                                 str(tmp_path / "pal.db"), "mcp"],
                                   env=zeta_env(site), cwd=str(REPO))

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with Client(params) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
                assert set(tools) == {"zeta_ping", "zeta_explode", "zeta_whoami"}
                assert tools["zeta_ping"].input_schema["required"] == ["message"]
                result = await client.call_tool("zeta_ping", {"message": "hi"})
                assert json.loads(result.content[0].text) == {"ok": True, "verb": "zeta.ping",
                                                              "result": {"echo": "hi"}}

    anyio.run(scenario)


def test_pal_mcp_actor_flag_makes_every_tool_call_for_that_actor(site, tmp_path):
    pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "palimpsest_memory.runtime.adapters.cli", "--db",
                                                                 str(tmp_path / "pal.db"), "mcp", "--actor", "alice"],
                                   env=zeta_env(site), cwd=str(REPO))

    async def scenario() -> None:
        with anyio.fail_after(120):
            async with Client(params) as client:
                result = await client.call_tool("zeta_whoami", {})
                assert result.is_error is False
                assert json.loads(result.content[0].text)["result"] == {"namespace": "default", "actor": "alice"}

    anyio.run(scenario)
    proc = run_cli("--db", str(tmp_path / "pal.db"), "mcp", "--actor", "*", env=zeta_env(site))
    assert proc.returncode == 2 and "actor" in proc.stderr, proc.stderr  # refused at start, not at every call


def test_http_documents_and_serves_the_new_verb(site, tmp_path):
    pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
    db = tmp_path / "pal.db"
    env = zeta_env(site)
    server = ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                       "serve", "--port", "0"])
    try:
        with urllib.request.urlopen(server.url + "/openapi.json", timeout=60) as resp:
            doc = json.load(resp)
        op = doc["paths"]["/v1/verbs/zeta.ping"]["post"]
        assert op["operationId"] == "zeta_ping" and op["summary"].startswith("Echo a message")
        assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("PingParams")
        assert "/v1/verbs/zeta.secret" not in doc["paths"]
        req = urllib.request.Request(server.url + "/v1/verbs/zeta.ping", data=b'{"message": "yo", "times": 3}',
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert json.load(resp) == {"ok": True, "verb": "zeta.ping", "result": {"echo": "yo yo yo"}}
        proc = run_cli("--server", server.url, "--json", "zeta", "ping", "again", env=env)
        assert proc.returncode == 0 and json.loads(proc.stdout) == {"echo": "again"}, proc.stderr
        # the CLI's --actor travels to the server as the X-Palimpsest-Actor header
        proc = run_cli("--server", server.url, "--actor", "alice", "--json", "zeta", "whoami", env=env)
        assert proc.returncode == 0 and json.loads(proc.stdout)["actor"] == "alice", proc.stderr
    finally:
        server.stop()
    assert server.proc.returncode == 0 and not server.info_file.exists()

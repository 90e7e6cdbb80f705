"""A third-party pack adds an MCP core tool, an HTTP resource route and a web-view page through the hooks the
built-in packs use (ADR 0035), and each reaches the real adapters: `pal mcp` and `pal serve` as real processes over
the example pack installed with pip (found through its entry point, like any installed pack)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from conftest import EXAMPLE_DIR, REPO, ServerProcess, child_env  # noqa: E402
from rawmcp import PAL, RawMcp  # noqa: E402

@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    site = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / "example_pack"
    shutil.copytree(EXAMPLE_DIR, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                           "--no-build-isolation", "--target", str(site), str(source)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    # the installed copy, not the fixture folder on child_env's path: the pages must ship as package data
    path = [str(site), str(REPO), str(Path(__file__).parent)]
    return child_env(PYTHONPATH=os.pathsep.join(path), PALIMPSEST_PACKS="example")


def tools_listed(env: dict[str, str], db: Path, *args: str) -> set[str]:
    mcp = RawMcp(str(db), *args, env=env)
    try:
        mcp.initialize()
        return {t["name"] for t in mcp.request(2, "tools/list")["result"]["tools"]}
    finally:
        mcp.close()


def test_the_packs_core_tool_is_what_pal_mcp_lists(env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "m.duckdb"
    assert tools_listed(env, db) == {"example_notes"}  # core (the default): the one the pack contributes
    assert tools_listed(env, db, "--tools", "all") == {"example_note", "example_notes"}


def test_the_packs_route_and_page_are_served_by_pal_serve(env: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    server = ServerProcess(db, "http", env=env, argv=[*PAL, "--db", str(db), "serve", "--port", "0"])
    try:
        def get(path: str) -> bytes:
            with urllib.request.urlopen(server.url + path, timeout=30) as res:
                return res.read()

        request = urllib.request.Request(server.url + "/v1/verbs/example.note", data=b'{"text": "milk"}',
                                         headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=30).read()
        notes = json.loads(get("/v1/example/default/notes?limit=5"))
        assert notes["verb"] == "example.notes" and [n["text"] for n in notes["result"]["notes"]] == ["milk"]
        pages = json.loads(get("/ui/pages.json"))
        page = next(p for p in pages if p["name"] == "example_notes")
        assert page["title"] == "Notes" and page["pack"] == "example"
        assert b'call("example.notes"' in get(page["src"])
        assert [p["name"] for p in pages][-1] == "namespaces"  # the view's own page, after the pack's (order 70)
    finally:
        server.stop()

"""`pal mcp` for agents (issue 20, item 2): a small core tool set chosen in config, every parameter described in
plain words, a tool list of at most 16 KB, instructions on using memory well, and forwarding to the `pal serve`
that holds the database instead of dying on its lock."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
pytest.importorskip("fastapi", reason="the 'http' extra is not installed")
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import REPO, ServerProcess, child_env  # noqa: E402
from test_adapters_mcp import call_err, call_ok, run  # noqa: E402

from palimpsest_memory.runtime import Runtime, errors  # noqa: E402
from palimpsest_memory.runtime.adapters.mcp import build_server, select_tools  # noqa: E402
from palimpsest_memory.runtime.adapters.remote import RemoteClient  # noqa: E402

CORE = {"memory_remember", "memory_recall", "memory_explain", "memory_update", "memory_archive", "kg_assert_fact",
        "kg_facts", "kg_fact_history"}
CORE_LIMIT = 16 * 1024  # bytes of the tools/list answer's tools, as JSON
JARGON = re.compile(r"posterior|\bADR\b|BM25|``|\bwing\b|sub-handler|mirror|RRF", re.IGNORECASE)
HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}


@pytest.fixture
def real_rt(tmp_path: Path):
    rt = Runtime.open(tmp_path / "a.db", env={"PALIMPSEST_CONFIG_DISABLED": "1"},
                      config={"packs": {"memory": {"embedder": "hashing"}}})
    yield rt
    rt.close()


def test_the_core_tools_are_few_small_and_described_in_plain_words(real_rt) -> None:
    async def scenario() -> None:
        async with Client(build_server(real_rt, tools="core")) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == CORE
            size = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]))
            assert size <= CORE_LIMIT, f"core tool list is {size} bytes"
            for tool in tools:
                assert tool.description and not JARGON.search(tool.description), (tool.name, tool.description)
                for name, prop in tool.input_schema["properties"].items():
                    text = prop.get("description", "")
                    assert len(text) >= 15, f"{tool.name}.{name} has no real description"
                    assert not JARGON.search(text), (tool.name, name, text)
            instructions = client.instructions or ""
            assert "memory_recall" in instructions and "memory_remember" in instructions
            await call_ok(client, "memory_remember", {"content": "Ada prefers tea over coffee", "scope": "ada"})
            found = await call_ok(client, "memory_recall", {"query": "what"})  # a short query answers
            assert isinstance(found["results"], list)
            err = await call_err(client, "brain_state", {}, "verb_not_found")
            assert "--tools all" in err["message"]

    run(scenario)


def test_all_lists_every_public_verb_and_names_pick_tools(real_rt) -> None:
    specs = real_rt.verbs()
    assert len(select_tools(specs, "all", real_rt.catalog)) == len(specs)
    picked = select_tools(specs, "memory.recall, kg_facts", real_rt.catalog)
    assert [s.full_name for s in picked] == ["memory.recall", "kg.facts"]
    with pytest.raises(errors.ConfigError) as exc:
        select_tools(specs, "memory.recall,memory.teleport", real_rt.catalog)
    assert "memory.teleport" in exc.value.message and "memory.remember" in exc.value.message


def test_the_core_set_is_what_the_packs_contribute(real_rt) -> None:
    """Each pack says which of its verbs are core tools (the palimpsest_mcp_tools hook, ADR 0035); the brain says
    none; the runtime's config names no tool."""
    names = {s.full_name for s in select_tools(real_rt.verbs(), "core", real_rt.catalog)}
    assert {n.replace(".", "_") for n in names} == CORE
    assert "mcp" not in real_rt.config or "tools" not in real_rt.config["mcp"]


def test_pal_mcp_forwards_to_the_pal_serve_that_holds_the_database(tmp_path: Path) -> None:
    db = tmp_path / "shared.duckdb"
    env = child_env(**HASHING)
    server = ServerProcess(db, "http", env=env, argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                      "serve", "--port", "0"])
    try:
        params = StdioServerParameters(command=sys.executable, args=["-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db),
                                                                     "mcp"], env=env, cwd=str(REPO))

        async def scenario() -> None:
            async with Client(params) as client:
                assert {t.name for t in (await client.list_tools()).tools} == CORE
                saved = await call_ok(client, "memory_remember", {"content": "Orion moved to Postgres in March"})
                assert saved["note"]["occurred_at"].endswith("Z")
                await call_err(client, "memory_remember", {"content": "  "}, "invalid_params")

        run(scenario)
        # the note is in the served database: another agent reaching the server sees it
        found = RemoteClient(server.url).call("memory.recall", {"query": "Orion Postgres"})
        assert found["results"][0]["note"]["content"] == "Orion moved to Postgres in March"
    finally:
        server.stop()

"""The MCP server, driven by the SDK's own client: over stdio in a child process, over streamable HTTP, in-process."""
from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import HERE, REPO, ServerProcess, child_env, run_cli  # noqa: E402
from real_catalog import BUILT_IN_PUBLIC_VERBS  # noqa: E402

from palimpsest_memory.runtime.adapters.mcp import build_server  # noqa: E402

CALL_TIMEOUT = 120  # seconds: a hang fails the test instead of blocking the suite


def stdio_params(db, *extra: str, env=None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(HERE / "launch.py"), str(db), "stdio", *extra],
                                 env=env or child_env(), cwd=str(REPO))


def payload(result) -> dict:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


async def call_ok(client, tool: str, args: dict) -> dict:
    result = await client.call_tool(tool, args)
    body = payload(result)
    assert result.is_error is False and body["ok"] is True, body
    # structured content only beside an output schema (ADR 0033), and then the same data as the text
    assert result.structured_content is None or result.structured_content == body["result"]
    return body["result"]


async def call_err(client, tool: str, args: dict, code: str) -> dict:
    result = await client.call_tool(tool, args)
    body = payload(result)
    assert result.is_error is True and body["ok"] is False, body
    assert set(body["error"]) == {"code", "message", "verb", "details"} and body["error"]["code"] == code, body
    return body["error"]


def run(fn) -> None:
    async def bounded() -> None:
        with anyio.fail_after(CALL_TIMEOUT):
            await fn()

    anyio.run(bounded)


def test_stdio_server_lists_tools_and_calls_verbs(tmp_path):
    db = tmp_path / "pal.db"

    async def scenario() -> None:
        async with Client(stdio_params(db)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"example_note", "example_notes"}  # the sub-handler example.shout is not listed
            note = tools["example_note"]
            assert note.description == "Write a note down."
            import palimpsest_example

            from palimpsest_memory.runtime.adapters.mcp import compact_schema

            schema = palimpsest_example.NoteParams.model_json_schema()
            schema.pop("description", None)  # a params model's docstring becomes the tool's description
            assert note.input_schema == compact_schema(schema)
            assert set(note.input_schema["properties"]) == set(schema["properties"])
            assert note.annotations.read_only_hint is False and tools["example_notes"].annotations.read_only_hint

            assert await call_ok(client, "example_note", {"text": "hello"}) == {"id": 1, "text": "hello"}
            assert await call_ok(client, "example_note", {"text": "quiet", "loud": True}) == {"id": 2, "text": "QUIET!"}
            assert [n["text"] for n in (await call_ok(client, "example_notes", {"limit": 5}))["notes"]] == [
                "QUIET!", "hello"]

            e = await call_err(client, "example_note", {"text": ""}, "invalid_params")
            assert e["details"]["errors"][0]["loc"] == ["text"]
            await call_err(client, "example_note", {"text": "x", "colour": "red"}, "invalid_params")
            e = await call_err(client, "example_shout", {"text": "psst"}, "forbidden")  # sub-handler: refused
            assert "sub-handler" in e["message"]
            await call_err(client, "example.shout", {"text": "psst"}, "forbidden")
            await call_err(client, "no_such_tool", {}, "verb_not_found")

            # while the MCP server holds the database, the CLI says who holds it instead of failing obscurely
            proc = await anyio.to_thread.run_sync(lambda: run_cli("--db", str(db), "call", "example.notes"))
            assert proc.returncode == 6, proc.stderr
            assert "held by process" in proc.stderr and "stdio" in proc.stderr, proc.stderr

    run(scenario)
    assert not (tmp_path / "pal.db.server.json").exists()  # removed when the server stopped


def test_streamable_http_server(tmp_path):
    server = ServerProcess(tmp_path / "pal.db", "mcp-http", fakes=True)
    try:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/mcp")

        async def scenario() -> None:
            async with Client(server.url) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"memory_remember", "memory_recall", "kg_fact_history", "zeta_ping"} <= names
                assert "zeta_secret" not in names
                assert await call_ok(client, "zeta_ping", {"message": "hi", "times": 2}) == {"echo": "hi hi"}
                await call_err(client, "zeta_explode", {}, "internal")
                await call_err(client, "zeta_secret", {}, "forbidden")

        run(scenario)
        proc = run_cli("--db", str(server.db), "call", "example.notes")
        assert proc.returncode == 6 and server.url in proc.stderr, proc.stderr
    finally:
        server.stop()
    assert not server.info_file.exists()


def test_pal_mcp_command_serves_the_configured_catalog(tmp_path):
    """`pal mcp` itself (not the test launcher): its tools are exactly the built-in public verbs, written out by
    hand, so a pack that fails to load fails this test instead of shrinking what it expects."""
    expected = {v.replace(".", "_") for v in BUILT_IN_PUBLIC_VERBS}
    params = StdioServerParameters(command=sys.executable, args=["-m", "palimpsest_memory.runtime.adapters.cli", "--db",
                                                                 str(tmp_path / "pal.db"), "mcp", "--tools", "all"],
                                   env=child_env(), cwd=str(REPO))

    async def scenario() -> None:
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == expected

    run(scenario)


def test_in_process_server_refuses_subhandlers(fake_rt):
    async def scenario() -> None:
        async with Client(build_server(fake_rt, output_schemas=True)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "zeta_secret" not in tools and "zeta_ping" in tools
            assert tools["zeta_ping"].output_schema["properties"]["echo"]["type"] == "string"
            await call_err(client, "zeta_secret", {}, "forbidden")
            await call_err(client, "memory_unlink", {"edge_id": 5}, "not_found")
            await call_err(client, "memory_recall", {"query": "q" * 101}, "limit_exceeded")

    run(scenario)


# -- the real memory and kg packs: a pack that fails to load fails these (no skip) -----------------------------
def test_real_memory_remember_and_recall_over_stdio(tmp_path):
    notes = ["We picked DuckDB for the store in May.", "We picked the blue logo in March.",
             "The team lunch moved to Thursday.", "Alice reviewed the travel budget."]

    async def scenario() -> None:
        async with Client(stdio_params(tmp_path / "pal.db", "--discover")) as client:
            ids = [(await call_ok(client, "memory_remember", {"content": c}))["note"]["id"] for c in notes]
            assert len(set(ids)) == 4
            found = await call_ok(client, "memory_recall", {"query": "which store did we pick"})
            assert found["results"][0]["id"] == ids[0], found  # compact over MCP (ADR 0033)
            logo = await call_ok(client, "memory_recall", {"query": "the blue logo", "detail": True})
            assert logo["results"][0]["note"]["id"] == ids[1], logo

    run(scenario)


def test_real_kg_supersession_and_as_of_graph_recall_over_stdio(tmp_path):
    async def scenario() -> None:
        async with Client(stdio_params(tmp_path / "pal.db", "--discover")) as client:
            await call_ok(client, "kg_assert_fact", {"subject": "Alice", "predicate": "works_at", "object": "Meta",
                                                     "valid_from": "2020-01-01"})
            await call_ok(client, "kg_assert_fact", {"subject": "Alice", "predicate": "works_at",
                                                     "object": "Google", "valid_from": "2023-06-01"})
            history = json.dumps(await call_ok(client, "kg_fact_history", {"subject": "Alice",
                                                                           "predicate": "works_at"}))
            assert history.index("Meta") < history.index("Google")
            before = json.dumps(await call_ok(client, "kg_graph_recall", {"entities": ["Alice"],
                                                                          "as_of": "2021-01-01"}))
            assert "Meta" in before and "Google" not in before
            now = json.dumps(await call_ok(client, "kg_graph_recall", {"entities": ["Alice"]}))
            assert "Google" in now

    run(scenario)


def test_in_process_server_makes_every_call_for_its_actor(fake_rt):
    async def scenario() -> None:
        async with Client(build_server(fake_rt, actor="alice")) as client:
            assert await call_ok(client, "zeta_whoami", {}) == {"namespace": "default", "actor": "alice"}
        async with Client(build_server(fake_rt)) as client:
            assert (await call_ok(client, "zeta_whoami", {}))["actor"] is None

    run(scenario)


def test_a_server_bound_to_an_actor_refuses_calls_naming_another(tmp_path):
    """`pal mcp --actor alice`: a client may not act for bob through a verb's own actor field (issue 16.12)."""
    from palimpsest_memory.runtime import Runtime

    rt = Runtime.open(tmp_path / "a.db", env={"PALIMPSEST_CONFIG_DISABLED": "1"},
                      config={"packs": {"memory": {"embedder": "hashing"}}})

    async def scenario() -> None:
        async with Client(build_server(rt, actor="alice")) as client:
            err = await call_err(client, "brain_state", {"actor": "bob"}, "forbidden")
            assert "alice" in err["message"] and "bob" in err["message"]
            await call_err(client, "brain_profile", {"name": "p", "actor": "bob", "bind": True}, "forbidden")
            assert (await call_ok(client, "brain_state", {"actor": "alice"}))
            assert (await call_ok(client, "brain_state", {}))

    try:
        run(scenario)
        assert rt.store.con.execute("SELECT count(*) FROM brain.bindings").fetchone() == (0,)  # bob bound nothing
    finally:
        rt.close()


def test_an_mcp_session_is_a_thread_by_default(tmp_path):
    """memory.remember without a thread gets its session's label (one per server over stdio); a thread the
    client names wins (issue 19)."""
    from palimpsest_memory.runtime import Runtime

    rt = Runtime.open(tmp_path / "t.db", env={"PALIMPSEST_CONFIG_DISABLED": "1"},
                      config={"packs": {"memory": {"embedder": "hashing"}}})
    seen: list = []

    async def session() -> None:
        async with Client(build_server(rt)) as client:  # a server per client session, as `pal mcp` over stdio
            n = len(seen)  # each session says new things (a text said again is counted on its note: ADR 0039)
            a = await call_ok(client, "memory_remember", {"content": f"first note of session {n}"})
            b = await call_ok(client, "memory_remember", {"content": f"second note of session {n}"})
            c = await call_ok(client, "memory_remember", {"content": f"a named one, {n}", "thread": "standup"})
            seen.append((a["note"]["thread"], b["note"]["thread"], c["note"]["thread"]))
            await call_err(client, "memory_remember", {"content": ""}, "invalid_params")  # still validated

    try:
        run(session)
        run(session)  # a second client session
        (a1, b1, c1), (a2, b2, c2) = seen
        assert a1 == b1 and a1.startswith("mcp-") and c1 == "standup"
        assert a2 == b2 and a2 != a1 and c2 == "standup"
        assert rt.call("memory.count", {}).count == 6  # the refused calls stored nothing
    finally:
        rt.close()

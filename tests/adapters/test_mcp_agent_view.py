"""What an agent sees of the tools over the real `pal mcp` (issue 42, item 6 and bug 3; ADR 0033), on both
backends: annotations per the MCP spec from each verb's declaration, memory_recall's few parameters and compact
answers (at most 2.5 KB for 10 LoCoMo-sized results, the whole JSON-RPC answer counted), one meaning per
parameter name, memory_archive not described as forgetting, and output schemas that the SDK's own client checks
the answers against."""
from __future__ import annotations

import json
import sys
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")
from mcp import Client, StdioServerParameters  # noqa: E402

from conftest import REPO, child_env  # noqa: E402
from rawmcp import HASHING, PAL, RawMcp  # noqa: E402
from test_adapters_both_backends import target  # noqa: E402,F401 - the both-backends store fixture
from test_adapters_mcp import call_err, call_ok, run  # noqa: E402

from palimpsest_memory.runtime import load_catalog  # noqa: E402
from palimpsest_memory.runtime.pack import Act  # noqa: E402

RECALL_CORE = {"query", "limit", "scope", "created_after", "created_before", "group", "turns", "detail"}
COMPACT_FIELDS = {"id", "text", "time", "score", "scope"}
BUDGET = 2560  # bytes of the answer's text (what the agent reads) for 10 results
# Issue 42 measured 10 LoCoMo results as 1.6 KB of note text in a 6.5 KB answer; `pal import locomo` notes
# ("Speaker: text [image: caption]") average 148 characters over the 5 dev conversations (bench/mcp_cost.py
# measures the real file): these notes are 160, speaker included
SPEAKERS = ("Caroline", "Melanie")
TOPICS = ("the pottery class", "a charity run", "the adoption agency", "a camping trip", "her painting",
          "the support group")


def locomo_sized(i: int) -> str:
    text = (f"{SPEAKERS[i % 2]} (note {i}): I keep thinking about {TOPICS[i % len(TOPICS)]} we talked about last "
            "week; it really meant a lot to me and my family, and we should do it again soon, maybe in June or in "
            "July when the kids are off school")
    return text[:159] + "."


def mcp_params(target: str, *args: str, **env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=PAL[1:] + ["--db", target, "mcp", *args],
                                 env=child_env(**HASHING, **env), cwd=str(REPO))


def test_annotations_follow_each_verbs_declaration(target: str) -> None:
    specs = {s.full_name.replace(".", "_"): s for s in load_catalog()[0].verbs()}

    async def scenario() -> None:
        async with Client(mcp_params(target, "--tools", "all")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == set(specs)
            for name, tool in tools.items():
                spec, hints = specs[name], tool.annotations
                assert hints.read_only_hint is (spec.act is Act.ASSERTIVE), name
                assert hints.open_world_hint is False, name
                if spec.act is not Act.ASSERTIVE:  # the spec gives the two hints meaning for writes only
                    assert hints.destructive_hint is spec.erases, name
                    assert hints.idempotent_hint is (spec.act is Act.DECLARATION or spec.erases), name
            remember, forget = tools["memory_remember"].annotations, tools["memory_forget"].annotations
            assert (remember.destructive_hint, remember.idempotent_hint) == (False, False)
            assert (forget.destructive_hint, forget.idempotent_hint) == (True, True)
            assert tools["kg_forget"].annotations.destructive_hint is True
            assert tools["memory_archive"].annotations.destructive_hint is False  # it keeps the note
            assert tools["kg_define_predicate"].annotations.idempotent_hint is True

    run(scenario)


def test_recall_shows_few_parameters_and_other_names_keep_one_meaning(target: str) -> None:
    async def scenario() -> None:
        async with Client(mcp_params(target)) as client:  # --tools core, the default
            tools = {t.name: t for t in (await client.list_tools()).tools}
            recall = tools["memory_recall"].input_schema
            assert set(recall["properties"]) == RECALL_CORE and recall["required"] == ["query"]
            err = await call_err(client, "memory_recall", {"query": "tea", "fusion": "rrf"}, "invalid_params")
            assert "fusion" in err["message"] and "--tools all" in err["message"]
            # source: where a note came from (free text); source_id: the note a fact comes from ('m:12')
            assert "source" in tools["memory_remember"].input_schema["properties"]
            assert "source_id" not in tools["memory_remember"].input_schema["properties"]
            assert "note" in tools["kg_assert_fact"].input_schema["properties"]["source_id"]["description"]
            saved = await call_ok(client, "memory_remember", {"content": "Ada prefers tea", "source": "chat-7"})
            assert saved["note"]["source_id"] == "chat-7"
            err = await call_err(client, "memory_remember", {"content": "x", "source_id": "chat-8"}, "invalid_params")
            assert "source_id (now source)" in err["message"]
            fact = await call_ok(client, "kg_assert_fact", {"subject": "Ada", "predicate": "likes", "object": "tea",
                                                            "source_id": f"m:{saved['note']['id']}"})
            assert fact["fact"]["source_id"] == f"m:{saved['note']['id']}"
            archive = tools["memory_archive"]
            assert "forget" not in (archive.description + json.dumps(archive.input_schema)).lower()
            names: dict[str, set[str]] = {}  # a parameter name's descriptions across the tools
            for tool in tools.values():
                for pname, prop in tool.input_schema["properties"].items():
                    names.setdefault(pname, set()).add(prop.get("description", ""))
            assert len(names["source_id"]) == 1  # one tool, one meaning

        async with Client(mcp_params(target, "--tools", "all")) as client:
            recall = {t.name: t for t in (await client.list_tools()).tools}["memory_recall"].input_schema
            assert {"fusion", "min_score", "as_of", "include_breakdown"} | RECALL_CORE <= set(recall["properties"])
            found = await call_ok(client, "memory_recall", {"query": "tea", "fusion": "rrf"})
            assert found["results"][0]["text"] == "Ada prefers tea"

    run(scenario)


def test_recall_answers_are_compact_by_default_and_whole_with_detail(target: str) -> None:
    server = RawMcp(target)
    try:
        server.initialize()
        for i in range(12):
            answer = server.call(100 + i, "memory_remember", {"content": locomo_sized(i), "scope": "conv-26",
                                                              "occurred_at": f"2023-05-{8 + i:02d}T13:56:00Z"})
            assert answer["result"]["isError"] is False, answer
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "memory_recall", "arguments": {"query": "thinking about it meant a lot to my family", "limit": 10}}})
        line = server.answer_bytes()
        answer = json.loads(line)
        assert "structuredContent" not in answer["result"]  # no output schema listed: the data goes once
        text = answer["result"]["content"][0]["text"]
        body = json.loads(text)
        results = body["result"]["results"]
        assert len(results) == 10 and all(set(r) == COMPACT_FIELDS for r in results), results[0]
        assert all(len(r["text"]) == 160 and r["scope"] == "conv-26" and r["time"].endswith("Z") for r in results)
        assert set(body["result"]) == {"recall_id", "results"}
        assert len(text.encode()) <= BUDGET, f"10 compact results: {len(text.encode())} bytes of text"
        print(f"compact recall, 10 results of 160 characters: {len(text.encode())} bytes of text, {len(line)} bytes "
              "on the wire")

        server.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
            "name": "memory_recall", "arguments": {"query": "thinking about it meant a lot to my family", "limit": 10,
                                                   "detail": True}}})
        whole_text = json.loads(server.answer_bytes())["result"]["content"][0]["text"]
        whole = json.loads(whole_text)["result"]
        assert [r["note"]["id"] for r in whole["results"]] == [r["id"] for r in results]
        assert {"fusion", "embedder", "query"} <= set(whole) and "salience" in whole["results"][0]["note"]
        assert len(whole_text) > 2 * len(text)
    finally:
        err = server.close()
    assert server.proc.returncode == 0, err


def test_recall_by_episode_is_a_core_parameter_and_its_answer_stays_compact(target: str) -> None:
    """ADR 0036: group="episode" over `pal mcp --tools core`: the episodes go out with their turns' ids, scores and
    spans, the turns' notes in the compact results."""
    server = RawMcp(target)
    try:
        server.initialize()
        for i in range(6):
            answer = server.call(100 + i, "memory_remember", {"content": locomo_sized(i), "scope": "conv-26",
                                                              "thread": f"session_{i // 3}",
                                                              "occurred_at": f"2023-05-{8 + i:02d}T13:56:00Z"})
            assert answer["result"]["isError"] is False, answer
        got = server.call(7, "memory_recall", {"query": "the pottery class", "group": "episode", "turns": 2,
                                               "limit": 2})
        body = json.loads(got["result"]["content"][0]["text"])["result"]
        episodes, results = body["episodes"], body["results"]
        assert [e["thread"] for e in episodes] and {e["thread"] for e in episodes} <= {"session_0", "session_1"}
        assert [t["id"] for e in episodes for t in e["turns"]] == [r["id"] for r in results]
        assert all(set(r) == COMPACT_FIELDS for r in results) and all(e["span"]["notes"] == 3 for e in episodes)
        flat = json.loads(server.call(8, "memory_recall", {"query": "the pottery class"})["result"]["content"][0]
                          ["text"])["result"]
        assert "episodes" not in flat
    finally:
        err = server.close()
    assert server.proc.returncode == 0, err


def test_output_schemas_describe_both_answers_and_the_sdk_checks_them(target: str) -> None:
    async def scenario() -> None:
        async with Client(mcp_params(target, PALIMPSEST__mcp__output_schemas="true")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema: Any = tools["memory_recall"].output_schema
            assert schema["type"] == "object" and len(schema["anyOf"]) == 2
            assert tools["memory_remember"].output_schema["properties"]["note"]
            await call_ok(client, "memory_remember", {"content": "Ada prefers tea", "scope": "ada"})
            # the SDK's client validates structured content against the tool's output schema: both shapes pass
            compact = await client.call_tool("memory_recall", {"query": "tea"})
            assert compact.is_error is False and set(compact.structured_content["results"][0]) == COMPACT_FIELDS
            whole = await client.call_tool("memory_recall", {"query": "tea", "detail": True})
            assert whole.is_error is False and whole.structured_content["results"][0]["note"]["scope"] == "ada"

    run(scenario)

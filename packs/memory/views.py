"""What the memory pack adds to the adapters (ADR 0035), through the same hooks a third-party pack implements:
its core MCP tools and how an agent sees them (ADR 0033), its resource routes over HTTP, its pages of the web view
(the scripts in ``web/``)."""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.runtime import CompactAnswer, HttpRoute, McpTool, WebPage, hookimpl

WEB = Path(__file__).with_name("web")
NS = {"ns": "namespace"}  # the {ns} of a route is the call's namespace


@hookimpl
def palimpsest_mcp_tools() -> list[McpTool]:
    return [
        # remember's source_id is free text (a message id, a file name, a URL) where kg.assert_fact's names the
        # note a fact comes from ('m:12'): one meaning per parameter name across the tools, so here it is `source`
        McpTool("memory.remember", renamed={"source_id": "source"}),
        # the few parameters an agent uses well; --tools all lists every one. A recall's notes carry ~75 %
        # metadata an agent rarely reads: a compact answer unless it asks for detail. group and turns: recall by
        # episode (ADR 0036), a view of the same ranking an agent asks for often (episodes: null unless grouped)
        McpTool("memory.recall", params=("query", "limit", "scope", "created_after", "created_before", "group",
                                         "turns"),
                compact=CompactAnswer(items="results", keep=("recall_id", "truncated", "episodes"), digits=3,
                                      fields={"id": "note.id", "text": "note.content", "time": "note.occurred_at",
                                              "score": "score", "scope": "note.scope"})),
        McpTool("memory.explain"), McpTool("memory.update"), McpTool("memory.archive"),
    ]


@hookimpl
def palimpsest_http_routes() -> list[HttpRoute]:
    return [
        HttpRoute("POST", "/v1/memory/{ns}/remember", "memory.remember", NS),
        HttpRoute("POST", "/v1/memory/{ns}/recall", "memory.recall", NS),
        HttpRoute("POST", "/v1/memory/{ns}/edges", "memory.link", NS),
        HttpRoute("GET", "/v1/memory/{ns}/edges/{memory_id}", "memory.edges", {**NS, "memory_id": "memory_id"}),
        HttpRoute("POST", "/v1/memory/{ns}/edges/{edge_id}/delete", "memory.unlink", {**NS, "edge_id": "edge_id"}),
        HttpRoute("GET", "/v1/memory/{ns}/beliefs/{fact_key}/history", "memory.belief_history",
                  {**NS, "fact_key": "fact_key"}),
        HttpRoute("POST", "/v1/memory/{ns}/graph/centrality", "memory.centrality", NS),
    ]


@hookimpl
def palimpsest_web_pages() -> list[WebPage]:
    return [WebPage("recall", "Recall", WEB / "recall.js", order=10),
            WebPage("notes", "Notes", WEB / "notes.js", order=15),  # browse and tidy: the note page's forms
            WebPage("graph", "Graph", WEB / "graph.js", order=30),  # notes and the kg's entities, one graph
            WebPage("note", None, WEB / "note.js")]  # reached from the other views' links

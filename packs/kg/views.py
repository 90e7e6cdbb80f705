"""What the kg pack adds to the adapters (ADR 0035), through the hooks a third-party pack implements: its core MCP
tools, a resource route, and the timeline page of the web view (``web/timeline.js``)."""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.runtime import HttpRoute, McpTool, WebPage, hookimpl


@hookimpl
def palimpsest_mcp_tools() -> list[McpTool]:
    return [McpTool("kg.assert_fact"), McpTool("kg.facts"), McpTool("kg.fact_history")]


@hookimpl
def palimpsest_http_routes() -> list[HttpRoute]:
    return [HttpRoute("GET", "/v1/kg/{ns}/history/{subject}/{predicate}", "kg.fact_history",
                      {"ns": "namespace", "subject": "subject", "predicate": "predicate"})]


@hookimpl
def palimpsest_web_pages() -> list[WebPage]:
    return [WebPage("timeline", "Timeline", Path(__file__).with_name("web") / "timeline.js", order=20)]

"""What the brain pack adds to the adapters (ADR 0035): no core MCP tool (an agent does not tune its own ranking;
``pal mcp --tools all`` or naming a brain tool lists it), and its pages of the web view (``web/brain.js``, and
``web/retrievals.js``: what each recall returned)."""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.runtime import McpTool, WebPage, hookimpl


@hookimpl
def palimpsest_mcp_tools() -> list[McpTool]:
    return []


@hookimpl
def palimpsest_web_pages() -> list[WebPage]:
    web = Path(__file__).with_name("web")
    return [WebPage("brain", "Brain", web / "brain.js", order=40),
            WebPage("retrievals", "Retrievals", web / "retrievals.js", order=45)]  # the serve ledger (brain.serves)

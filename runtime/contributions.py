"""What a pack adds to the adapters beside its verbs (ADR 0035): how an agent sees its verbs over MCP, resource
routes over HTTP, pages of the web view. A pack returns these from the hooks in :mod:`hookspecs`
(``palimpsest_mcp_tools``, ``palimpsest_http_routes``, ``palimpsest_web_pages``); the built-in packs use them
exactly as a third-party pack does, so the runtime and its adapters name no pack's verbs.

Plain data with no dependency (no FastAPI, no MCP SDK): a pack imports it from ``palimpsest_memory.runtime``
whether or not those extras are installed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping

from palimpsest_memory.runtime.errors import PackLoadError
from palimpsest_memory.runtime.pack import NAME_RE

NAMESPACE = "namespace"  # a route placeholder mapped to this fills the call's namespace


@dataclass(frozen=True)
class CompactAnswer:
    """A compact MCP answer: each item of the result's ``items`` list is answered with ``fields`` (answer field ->
    dotted path in the item; floats rounded to ``digits``), with the top-level fields in ``keep``; a call with
    ``detail: true`` gets the whole result (ADR 0033)."""

    items: str
    fields: Mapping[str, str]
    keep: tuple[str, ...] = ()
    digits: int = 3


@dataclass(frozen=True)
class McpTool:
    """How one of the pack's verbs shows to an agent over MCP.

    ``core``: listed by ``pal mcp`` by default (``--tools core``); ``params``: under ``--tools core`` only these
    parameters are listed (None: all); ``renamed``: the verb's parameter -> the tool's name for it (always; one
    meaning per name across the tools); ``compact``: answer in the compact shape unless asked for ``detail``."""

    verb: str
    core: bool = True
    params: tuple[str, ...] | None = None
    renamed: Mapping[str, str] = field(default_factory=dict)
    compact: CompactAnswer | None = None


@dataclass(frozen=True)
class HttpRoute:
    """A resource-style HTTP route onto one of the pack's verbs: each ``{placeholder}`` of ``path`` fills the params
    field ``path_params`` maps it to (:data:`NAMESPACE`: the call's namespace); a GET takes the other scalar
    fields as query parameters, a POST as its JSON body."""

    method: Literal["GET", "POST"]
    path: str
    verb: str
    path_params: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WebPage:
    """A page of the web view (``pal serve``'s ``/``): ``script`` is an ES module that exports
    ``render(root, query, current)`` and imports the page's helpers from ``/ui/app.js``; it is served at
    ``/ui/pages/<pack>/<file name>`` and shown at ``#/<name>``. ``title`` is its link in the page's navigation
    (None: reached by links only); ``order`` places that link (lower first). A pack keeps its page scripts in one
    folder of their own: everything in it is served (a page may import its neighbours). A page calls verbs through the
    same guarded API as any client; it calls assertive verbs only, or marks a write as such (ADR 0019)."""

    name: str
    title: str | None
    script: Path
    order: int = 50


KINDS: dict[str, type] = {"palimpsest_mcp_tools": McpTool, "palimpsest_http_routes": HttpRoute,
                          "palimpsest_web_pages": WebPage}


def check(pack: str, hook: str, items: Any) -> list[Any]:
    """What ``pack`` returned from ``hook``, checked: a list of the hook's type, each naming only the pack's own
    verbs (a pack cannot dress up another's), each page's script a file. A PackLoadError names the pack."""
    kind = KINDS[hook]
    if not isinstance(items, Iterable) or isinstance(items, (str, bytes, Mapping)):
        raise PackLoadError(f"pack {pack!r}: {hook} must return a list of {kind.__name__}, got {items!r}",
                            details={"pack": pack})
    out = list(items)
    for item in out:
        if not isinstance(item, kind):
            raise PackLoadError(f"pack {pack!r}: {hook} returned {item!r}, not a {kind.__name__}",
                                details={"pack": pack})
        if not isinstance(item, WebPage) and item.verb.partition(".")[0] != pack:
            raise PackLoadError(f"pack {pack!r}: {hook} names {item.verb}, a verb of another pack",
                                details={"pack": pack, "verb": item.verb})
        if isinstance(item, WebPage):
            if not NAME_RE.match(item.name):
                raise PackLoadError(f"pack {pack!r}: web page name {item.name!r} must match {NAME_RE.pattern}",
                                    details={"pack": pack})
            if not Path(item.script).is_file():
                raise PackLoadError(f"pack {pack!r}: web page {item.name!r}: no script at {item.script}",
                                    details={"pack": pack})
    return out

"""The local web view of ``pal serve`` (ADR 0019): static HTML, CSS and JS shipped inside the package.

- ``GET /`` is the page; ``GET /ui/<file>`` its assets; ``GET /docs`` a readable, offline rendering of the
  OpenAPI document (no CDN: every byte comes from ``static/``, installed with the package).
- The page holds no data. Its JS calls the same ``POST /v1/verbs/{verb}`` endpoints as any client, with the same
  bearer token (asked for once, kept in the tab's session storage) and the same Host/Origin rules. It calls
  assertive verbs only, except ``brain.feedback``, which the page marks as the one write.
- It knows verbs by name and their JSON, never a pack: the runtime does not import packs.

The assets are public (no token needed to load the empty page and its scripts): they are the same for every
server and hold nothing from the store. Everything read from the store goes through the guarded API.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

STATIC = Path(__file__).with_name("static")
PUBLIC_EXACT = frozenset({"/", "/docs", "/favicon.ico", "/healthz"})  # /healthz: http_health says why
PUBLIC_PREFIX = "/ui/"
# the verbs the page calls; every one but brain.feedback is assertive (tests/browser checks the act)
READ_VERBS = ("memory.recall", "memory.get", "memory.list", "memory.namespaces", "memory.count", "kg.namespaces",
              "kg.timeline", "kg.entity", "kg.entities", "kg.edges", "kg.centrality_scores", "kg.stats", "brain.state",
              "brain.history")
WRITE_VERBS = ("brain.feedback",)


def is_public(method: str, path: str) -> bool:
    """A static asset of the view (loaded without the token; it holds no data)."""
    return method in ("GET", "HEAD") and (path in PUBLIC_EXACT or path.startswith(PUBLIC_PREFIX))


def mount(app: Any) -> None:
    """Add the page, its assets and the offline /docs to a FastAPI app (call before the catch-all routes)."""
    from starlette.responses import FileResponse, Response
    from starlette.staticfiles import StaticFiles

    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff",
               "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                          "script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}

    # HEAD as GET without the body (a link checker, `curl -I`, an uptime probe); FileResponse leaves the body out
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    def index() -> Any:
        return FileResponse(STATIC / "index.html", headers=headers)

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    def docs() -> Any:
        return FileResponse(STATIC / "docs.html", headers=headers)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Any:
        return Response(status_code=204)

    app.mount("/ui", StaticFiles(directory=STATIC), name="ui")

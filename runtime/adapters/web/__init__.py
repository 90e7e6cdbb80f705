"""The local web view of ``pal serve`` (ADR 0019): static HTML, CSS and JS shipped inside the package.

- ``GET /`` is the page; ``GET /ui/<file>`` its assets; ``GET /docs`` a readable, offline rendering of the
  OpenAPI document (no CDN: every byte comes from ``static/``, installed with the package).
- The page's views are the packs' (the ``palimpsest_web_pages`` hook, ADR 0035): each pack's page scripts are
  served from their folder at ``/ui/pages/<pack>/``, and ``/ui/pages.json`` lists them in order for the page's
  navigation. The view's own page is the namespaces overview (:data:`OWN_PAGES`).
- The page holds no data. Its JS calls the same ``POST /v1/verbs/{verb}`` endpoints as any client, with the same
  bearer token (asked for once, kept in the tab's session storage) and the same Host/Origin rules. Its views call
  assertive verbs only, or mark a write as one (the recall view's feedback).

The assets are public (no token needed to load the empty page and its scripts): they are the same for every
server and hold nothing from the store. Everything read from the store goes through the guarded API.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from palimpsest_memory.runtime import WebPage, errors

STATIC = Path(__file__).with_name("static")
PUBLIC_EXACT = frozenset({"/", "/docs", "/favicon.ico", "/healthz"})  # /healthz: http_health says why
PUBLIC_PREFIX = "/ui/"
PAGES = "/ui/pages"
# the view's own page: every namespace of the store at a glance (it asks each loaded pack what it holds there)
OWN_PAGES = (WebPage("namespaces", "Namespaces", STATIC / "namespaces.js", order=90),)


def pages(catalog: Any) -> tuple[list[dict[str, Any]], dict[str, Path]]:
    """The pages the loaded packs contribute plus the view's own, in order, as ``/ui/pages.json`` lists them; and
    the folder each pack's scripts are served from (one per pack: a page's script may import its neighbours)."""
    listed: list[tuple[int, str, dict[str, Any]]] = []
    folders: dict[str, Path] = {}
    for pack, contributed in catalog.contributions("palimpsest_web_pages").items():
        for page in contributed:
            folder = Path(page.script).resolve().parent
            if folders.setdefault(pack, folder) != folder:
                raise errors.PackLoadError(f"pack {pack!r}: its web pages' scripts must lie in one folder "
                                           f"({folders[pack]}, {folder})", details={"pack": pack})
            listed.append((page.order, page.name, {"name": page.name, "title": page.title, "pack": pack,
                                                   "src": f"{PAGES}/{pack}/{Path(page.script).name}"}))
    for page in OWN_PAGES:
        listed.append((page.order, page.name, {"name": page.name, "title": page.title, "pack": None,
                                               "src": f"/ui/{page.script.name}"}))
    names = [name for _, name, _ in listed]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise errors.PackLoadError(f"two web pages are named {', '.join(twice)}", details={"pages": twice})
    return [entry for _, _, entry in sorted(listed, key=lambda x: (x[0], x[1]))], folders


def is_public(method: str, path: str) -> bool:
    """A static asset of the view (loaded without the token; it holds no data)."""
    return method in ("GET", "HEAD") and (path in PUBLIC_EXACT or path.startswith(PUBLIC_PREFIX))


def mount(app: Any, catalog: Any) -> None:
    """Add the page, its assets, the packs' pages and the offline /docs to a FastAPI app (call before the
    catch-all routes)."""
    from starlette.responses import FileResponse, JSONResponse, Response
    from starlette.staticfiles import StaticFiles

    listed, folders = pages(catalog)

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

    @app.get("/ui/pages.json", include_in_schema=False)
    def page_list() -> Any:
        return JSONResponse(listed, headers=headers)

    for pack, folder in folders.items():  # before /ui: the first mount that matches a path serves it
        app.mount(f"{PAGES}/{pack}", StaticFiles(directory=folder), name=f"ui-{pack}")
    app.mount("/ui", StaticFiles(directory=STATIC), name="ui")

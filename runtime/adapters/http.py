"""``pal serve``: the HTTP API, generated from the verb catalog (FastAPI + uvicorn: the optional ``http`` extra).

- ``POST /v1/verbs/{verb}`` for every public verb: body = the params JSON, ``?namespace=`` optional. One real route
  per verb, so the OpenAPI document carries each verb's params and result models.
- Every route takes the optional ``X-Palimpsest-Actor`` header: who the call is made for (``Runtime.call(actor=)``;
  recall then ranks with the brain profile bound to that actor). ``pal --actor NAME serve`` sets a default.
- The resource routes the packs contribute (``HttpRoute``, the ``palimpsest_http_routes`` hook; ADR 0035): each
  maps to a verb and says which path placeholder fills which params field. A route whose verb is not loaded is not
  mounted.
- Every route takes the optional ``X-Palimpsest-Consistency: strong`` header: on a shared store (PostgreSQL) the
  server first applies every change other processes committed, so the call reads the newest state (ADR 0016);
  the default ``eventual`` reads the server's mirrors as they are (behind by at most the follower's delay).
- ``GET /v1/verbs`` lists the catalog.
- Success: ``{"ok": true, "verb": "<pack.verb>", "result": {...}}``; errors: ``PalimpsestError.to_dict()`` with
  the error class's ``http_status``. Auth, Host/Origin checks and the body limit are :class:`serving.Guard`.
"""
from __future__ import annotations

import enum
import inspect
import json
import logging
import re
import sys
import types
import typing
from typing import Annotated, Any, Literal, Optional

from fastapi import Body, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, create_model
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from palimpsest_memory.runtime import HttpRoute, PalimpsestError, Runtime, VerbSpec, __version__, errors
from palimpsest_memory.runtime.contributions import NAMESPACE
from palimpsest_memory.runtime.adapters import http_data, http_health, web
from palimpsest_memory.runtime.adapters.serving import (ACTOR_HEADER, CONSISTENCY_HEADER, IDEMPOTENCY_HEADER,
                                                        AdapterSettings, Guard, bind_socket, check_bind, is_loopback,
                                                        loopback_hosts, result_data, run_uvicorn, announce,
                                                        stop_on_signals, success, tool_name, url_of)

log = logging.getLogger("palimpsest.http")
ACTOR_DOC = ("who the call is made for (1-128 letters, digits and _ . : @ -): `memory.recall` ranks with the brain "
             "profile bound to that actor, else the namespace's; brain verbs default to it.")


class ErrorBody(BaseModel):
    code: str
    message: str
    verb: Optional[str] = None
    details: Any = None


class ErrorResponse(BaseModel):
    """The one error shape."""

    ok: Literal[False] = False
    error: ErrorBody


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    s: {"model": ErrorResponse, "description": d} for s, d in (
        (400, "invalid params"), (401, "missing or wrong bearer token"), (403, "forbidden"), (404, "not found"),
        (409, "conflict"), (413, "limit exceeded"), (421, "Host header not allowed"),
        (500, "internal or storage error"), (503, "pack unavailable"), (504, "deadline exceeded"))
}


def error_response(exc: PalimpsestError, status: int | None = None) -> JSONResponse:
    return JSONResponse(exc.to_dict(), status_code=status or exc.http_status)


def _scalar(annotation: Any) -> Any:
    """The annotation FastAPI should use for a path/query value (scalars, enums, literals; else text)."""
    tp = annotation
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else str
    if tp in (str, int, float, bool) or typing.get_origin(tp) is Literal:
        return tp
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp
    if typing.get_origin(tp) in (list, tuple, set) and typing.get_args(tp):
        inner = _scalar(typing.get_args(tp)[0])
        return list[inner] if inner is not None else None  # type: ignore[valid-type]
    return None


def _body_model(spec: VerbSpec, taken: set[str]) -> type[BaseModel] | None:
    fields = spec.params_model.model_fields
    if not taken & set(fields):
        return spec.params_model
    rest = {n: (f.annotation, f) for n, f in fields.items() if n not in taken}
    if not rest:
        return None
    name = f"{spec.params_model.__name__}Body"
    return create_model(name, __config__=ConfigDict(extra="forbid"), **rest)  # type: ignore[call-overload]


def _endpoint(runtime: Runtime, spec: VerbSpec, path_params: dict[str, str], body: type[BaseModel] | None,
              query: list[str], generic: bool, default_actor: str | None) -> Any:
    fields = spec.params_model.model_fields

    async def endpoint(request: Request, **values: Any) -> JSONResponse:
        params: dict[str, Any] = {}
        if body is not None:
            raw = await request.body()
            if raw.strip():
                given = json.loads(raw)  # FastAPI has already checked it against the body model, but lets null by
                if given is not None and not isinstance(given, dict):
                    return error_response(errors.InvalidParams(
                        f"the request body must be a JSON object, got {type(given).__name__}", verb=spec.full_name))
                params.update(given or {})
        namespace = values.get("palimpsest_namespace") if generic else None
        for name in query:
            if values.get(name) is not None:
                params[name] = values[name]
        for placeholder, target in path_params.items():
            if target == NAMESPACE:
                namespace = values[placeholder]
                if NAMESPACE in fields:
                    params[NAMESPACE] = values[placeholder]
            else:
                params[target] = values[placeholder]
        actor = values.get("palimpsest_actor")
        try:
            result = await run_in_threadpool(runtime.call, spec.full_name, params, namespace=namespace,
                                             actor=default_actor if actor is None else actor,
                                             idempotency_key=request.headers.get(IDEMPOTENCY_HEADER),
                                             consistency=request.headers.get(CONSISTENCY_HEADER) or "eventual")
        except PalimpsestError as exc:
            return error_response(exc)
        except Exception as exc:  # a bug: answer in the one shape, keep the traceback in the log
            log.exception("%s failed", spec.full_name)
            return error_response(errors.InternalError(f"unexpected {type(exc).__name__}: {exc}", verb=spec.full_name))
        return JSONResponse(success(spec.full_name, result_data(result)))

    sig: list[inspect.Parameter] = [inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request)]
    for placeholder, target in path_params.items():
        tp = _scalar(fields[target].annotation) if target in fields else str
        sig.append(inspect.Parameter(placeholder, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[
            tp if tp is not None and typing.get_origin(tp) is not list else str,
            Path(description=fields[target].description if target in fields else "the call's namespace")]))
    if body is not None:
        required = any(f.is_required() for f in body.model_fields.values())
        sig.append(inspect.Parameter("palimpsest_body", inspect.Parameter.KEYWORD_ONLY,
                                     default=inspect.Parameter.empty if required else None,
                                     annotation=Annotated[body if required else Optional[body], Body()]))
    for name in query:
        sig.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
            Optional[_scalar(fields[name].annotation)], Query(description=fields[name].description)]))
    if generic:
        sig.append(inspect.Parameter("palimpsest_namespace", inspect.Parameter.KEYWORD_ONLY, default=None,
                                     annotation=Annotated[Optional[str], Query(alias="namespace",
                                                          description="the call's namespace (default from config)")]))
    sig.append(inspect.Parameter("palimpsest_actor", inspect.Parameter.KEYWORD_ONLY, default=None,
                                 annotation=Annotated[Optional[str],
                                                      Header(alias=ACTOR_HEADER, description=ACTOR_DOC)]))
    endpoint.__signature__ = inspect.Signature(sig)  # type: ignore[attr-defined]
    endpoint.verb = spec.full_name  # type: ignore[attr-defined]  # read back to name the verb in validation errors
    return endpoint


def _response_model(spec: VerbSpec) -> type[BaseModel]:
    fields: dict[str, Any] = {"ok": (Literal[True], True), "verb": (Literal[spec.full_name], spec.full_name),
                              "result": (spec.result_model, ...)}
    return create_model(f"{tool_name(spec.full_name)}_response", **fields)  # type: ignore[call-overload]


def _mount(app: FastAPI, runtime: Runtime, spec: VerbSpec, method: str, path: str, path_params: dict[str, str],
           generic: bool, response_model: type[BaseModel], actor: str | None) -> None:
    fields = spec.params_model.model_fields
    taken = set(path_params.values())
    if method == "GET":
        body = None
        query = [n for n in fields if n not in taken and _scalar(fields[n].annotation) is not None]
    else:
        body, query = _body_model(spec, taken), []
    # generic routes: the tool name (memory_recall); resource routes: method + path (post_memory_ns_remember)
    op_id = tool_name(spec.full_name) if generic else \
        re.sub(r"[^a-z0-9]+", "_", f"{method} {path[4:]}".lower()).strip("_")
    app.add_api_route(
        path, _endpoint(runtime, spec, path_params, body, query, generic, actor), methods=[method],
        response_model=response_model, responses=ERROR_RESPONSES, summary=spec.summary or spec.full_name,
        description=spec.doc, tags=[spec.pack], operation_id=op_id,
    )


def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    verb = getattr(request.scope.get("endpoint"), "verb", None)
    found = []
    for e in exc.errors():
        loc = [str(p) for p in e.get("loc", ())]
        if loc and loc[0] in ("body", "query", "path"):
            loc = loc[1:]
        found.append({"loc": loc, "msg": e.get("msg", ""), "type": e.get("type", "")})
    first = found[0] if found else {"loc": [], "msg": "invalid request"}
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    where = ".".join(first["loc"]) or "params"
    return error_response(errors.InvalidParams(f"invalid params: {where}: {first['msg']}{more}", verb=verb,
                                               details={"errors": found}))


def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    status = exc.status_code
    message = str(exc.detail)
    err: PalimpsestError
    if status == 404:
        err = errors.NotFound(f"no route {request.method} {request.url.path}", details={"path": request.url.path})
    elif status == 413:
        err = errors.LimitExceeded(message)
    elif status in (401, 403):
        err = errors.Forbidden(message)
    elif status < 500:
        err = errors.InvalidParams(message, details={"status": status})
    else:
        err = errors.InternalError(message)
    return error_response(err, status)


def resource_routes(catalog: Any) -> list[HttpRoute]:
    """The resource routes of the loaded packs, in load order."""
    return [route for routes in catalog.contributions("palimpsest_http_routes").values() for route in routes]


def create_app(runtime: Runtime, *, token: str | None = None, max_body_bytes: int | None = None,
               allowed_hosts: set[str] | None = None, actor: str | None = None) -> FastAPI:
    """The FastAPI app for an open runtime. ``token``/``max_body_bytes`` default to the ``[adapters]`` config;
    ``actor`` is the actor of requests without an ``X-Palimpsest-Actor`` header."""
    settings = AdapterSettings.from_config(runtime.config)
    runtime.check_actor(actor)  # a bad default actor fails the start, not every request
    app = FastAPI(title="palimpsest", version=__version__, docs_url=None, redoc_url=None,
                  description="palimpsest's verb catalog over HTTP. Success: `{\"ok\": true, \"verb\", \"result\"}`; "
                              "errors: `{\"ok\": false, \"error\": {\"code\", \"message\", \"verb\", \"details\"}}`. "
                              f"Every route takes an optional `{ACTOR_HEADER}` header: {ACTOR_DOC} "
                              f"Every route also takes an optional `{CONSISTENCY_HEADER}: strong` header: on a shared "
                              "(PostgreSQL) store the call first catches up with every other process's commits.")
    public = {spec.full_name: spec for spec in runtime.verbs()}
    models = {name: _response_model(spec) for name, spec in public.items()}
    for route in resource_routes(runtime.catalog):
        spec = public.get(route.verb)
        if spec is None:
            continue
        missing = [t for t in route.path_params.values() if t != NAMESPACE and t not in spec.params_model.model_fields]
        if missing:
            log.warning("not mounting %s %s: %s has no params field %s", route.method, route.path, route.verb, missing)
            continue
        _mount(app, runtime, spec, route.method, route.path, route.path_params, False, models[route.verb], actor)
    for name, spec in public.items():
        _mount(app, runtime, spec, "POST", f"/v1/verbs/{name}", {}, True, models[name], actor)

    web.mount(app, runtime.catalog)  # the page at /, its assets and the packs' pages at /ui, offline /docs (ADR 0019)
    http_data.mount(app, runtime, error_response)  # /v1/export and /v1/import (ADR 0018)
    http_health.mount(app, runtime, error_response)  # /healthz

    @app.get("/v1/verbs", tags=["catalog"], operation_id="list_verbs")
    def list_verbs() -> JSONResponse:
        """List the public verbs."""
        rows = [{"verb": s.full_name, "tool": tool_name(s.full_name), "act": s.act.value, "summary": s.summary,
                 "path": f"/v1/verbs/{s.full_name}"} for s in public.values()]
        return JSONResponse(success("catalog", {"verbs": rows}))

    @app.post("/v1/verbs/{verb}", include_in_schema=False)
    def unknown_verb(verb: str) -> JSONResponse:
        """Anything not a public verb: a sub-handler (403), an unloaded pack (503) or no such verb (404)."""
        try:  # resolving fails first: a public verb never gets here, it has its own route
            runtime.call(verb, {})
        except PalimpsestError as exc:
            return error_response(exc)
        return error_response(errors.VerbNotFound(f"no route for verb {verb!r}", verb=verb))

    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(PalimpsestError, lambda request, exc: error_response(exc))  # type: ignore[arg-type]
    app.add_middleware(Guard, token=token if token is not None else settings.token,  # type: ignore[arg-type]
                       max_body_bytes=max_body_bytes if max_body_bytes is not None else settings.max_body_bytes,
                       allowed_hosts=allowed_hosts, public=web.is_public)
    return app


def serve(runtime: Runtime, *, host: str | None = None, port: int | None = None, token: str | None = None,
          actor: str | None = None) -> None:
    """Serve the runtime over HTTP until interrupted, announced through the store meanwhile (ADR 0031), so
    ``pal mcp`` and the CLI find this process."""
    settings = AdapterSettings.from_config(runtime.config)
    host = host or settings.host
    token = settings.token if token is None else token
    check_bind(host, token)
    sock = bind_socket(host, settings.http_port if port is None else port)
    url = url_of(sock)
    real_port = sock.getsockname()[1]
    app = create_app(runtime, token=token, allowed_hosts=loopback_hosts(real_port) if is_loopback(host) else None,
                     actor=actor)
    with stop_on_signals(), announce(runtime, "http", url):
        print(f"palimpsest: serving {runtime.path} at {url}\n  open {url}/ in a browser to look at the memory "
              f"(recall, notes, timelines, graph, brain); API docs at {url}/docs", file=sys.stderr, flush=True)
        run_uvicorn(app, sock, settings)

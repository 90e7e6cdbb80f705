"""``GET /healthz``: is this server up, and can it reach its store?

For a probe (a supervisor, a container's health check, a user's ``curl``): 200 with the one success shape when a
read of the store's description goes through (on PostgreSQL a real statement, which reconnects first if the
connection was lost), 503 with the one error shape (``store_unavailable``) when it does not. It says the backend
and nothing else about the store (no path, no URL), so it is served without the token like the page's assets;
the Host rules still apply (serving.Guard). ``HEAD`` answers the same status without a body.
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from palimpsest_memory.runtime import PalimpsestError, Runtime, errors
from palimpsest_memory.runtime.adapters.serving import success

PATH = "/healthz"


def mount(app: FastAPI, runtime: Runtime, error_response: Any) -> None:
    @app.get(PATH, tags=["catalog"], operation_id="health")
    @app.head(PATH, include_in_schema=False)  # one operation in the OpenAPI document
    async def health() -> JSONResponse:
        """Whether the server is up and its store reachable (503 store_unavailable when it is not)."""
        try:
            store = await run_in_threadpool(runtime.describe_store)
        except Exception as exc:  # noqa: BLE001 - whatever stops the read, the answer is "not reachable"
            why = exc.message if isinstance(exc, PalimpsestError) else f"{type(exc).__name__}: {exc}"
            return error_response(errors.StoreUnavailable(f"the store is not reachable: {why}",
                                                          details={"reason": "unreachable"}), 503)
        return JSONResponse(success("healthz", {"store": "reachable", "backend": store["backend"]}))

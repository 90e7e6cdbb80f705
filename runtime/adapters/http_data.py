"""``GET /v1/export`` and ``POST /v1/import``: `pal export` and `pal import palimpsest` through a server.

A server holds the database, so a person at the shell (``pal --server URL export FILE``) or another host reaches
a namespace's export through it, in the same versioned JSONL format (ADR 0018). The export is spooled to a
temporary file and streamed from there, so a large namespace is not held in memory; an import's body is bounded
by ``[adapters] max_body_bytes`` like every request (raise it for large files). Same token and Host rules as the
verbs (serving.Guard). The import is checked whole before anything is written, as locally.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Optional

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from palimpsest_memory.runtime import PalimpsestError, Runtime
from palimpsest_memory.runtime.adapters.serving import NDJSON, success


def mount(app: FastAPI, runtime: Runtime, error_response: Any) -> None:
    @app.get("/v1/export", tags=["data"], operation_id="export_namespace")
    def export_namespace(namespace: Optional[str] = None) -> Any:
        """A namespace (default: the server's) as palimpsest JSONL, the file `pal export` writes."""
        from palimpsest_memory.runtime import exportfile

        fd, path = tempfile.mkstemp(prefix="pal-export-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                exportfile.export_namespace(runtime, out, namespace)
        except PalimpsestError as exc:
            os.unlink(path)
            return error_response(exc)
        except BaseException:
            os.unlink(path)
            raise
        return FileResponse(path, media_type=NDJSON, filename="palimpsest-export.jsonl",
                            background=BackgroundTask(os.unlink, path))

    @app.post("/v1/import", tags=["data"], operation_id="import_namespace")
    async def import_namespace(request: Request, namespace: Optional[str] = None) -> JSONResponse:
        """Import a `pal export` file (the request body) into ``namespace`` (default: the one it was exported
        from), which must be empty; in one transaction: all of the file or nothing of it."""
        from palimpsest_memory.runtime import exportfile

        body = await request.body()
        fd, path = tempfile.mkstemp(prefix="pal-import-", suffix=".jsonl")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(body)
            counts = await run_in_threadpool(exportfile.import_file, runtime, path, namespace)
        except PalimpsestError as exc:
            return error_response(exc)
        finally:
            os.unlink(path)
        return JSONResponse(success("import", {"imported": counts}))

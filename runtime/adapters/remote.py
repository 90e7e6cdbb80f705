"""A small client for a running ``pal serve``, in the stdlib only, so the CLI can send calls to it (``--server``).

The server answers ``{"ok": true, "verb", "result"}`` or the one error shape; an error comes back as the same
exception class, found by its ``code``, so the CLI prints and exits exactly as if the call had run locally.
"""
from __future__ import annotations

import json
import os
import socket
import urllib.error
import uuid
import urllib.parse
import urllib.request
from typing import Any, NoReturn

from palimpsest_memory.runtime import PalimpsestError, errors
from palimpsest_memory.runtime.adapters.serving import (ACTOR_HEADER, CONSISTENCY_HEADER, IDEMPOTENCY_HEADER, NDJSON,
                                                        TOKEN_ENV, client_settings)

# later classes win, so "internal" maps to InternalError rather than the base class
_BY_CODE: dict[str, type[PalimpsestError]] = {cls.code: cls for cls in errors.ALL_ERRORS}


def error_from_dict(payload: Any, *, status: int | None = None, verb: str | None = None) -> PalimpsestError:
    """Rebuild the exception from the one JSON error shape (unknown codes keep their code on a base error)."""
    err = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(err, dict) or "code" not in err:
        return errors.InternalError(f"the server answered HTTP {status} without an error body", verb=verb,
                                    details={"status": status, "body": payload})
    code = str(err["code"])
    cls = _BY_CODE.get(code, PalimpsestError)
    exc = cls(str(err.get("message", "")), verb=err.get("verb", verb), details=err.get("details"))
    if cls is PalimpsestError:
        exc.code = code  # keep what the server said even when this client does not know the class
    return exc


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}.get(parts.scheme)


class _TokenStaysHome(urllib.request.HTTPRedirectHandler):
    """Follows a redirect, and sends the bearer token on only to the origin it was meant for: urllib's own
    handler copies every header to wherever the redirect points (issue 46: a redirect leaked the token)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        token = req.unredirected_hdrs.get("Authorization")
        if new is not None and token and _origin(new.full_url) == _origin(req.full_url):
            new.add_unredirected_header("Authorization", token)
        return new


_OPENER = urllib.request.build_opener(_TokenStaysHome)


class RemoteClient:
    """Call verbs on a palimpsest HTTP server.

    ``RemoteClient("http://127.0.0.1:8765").call("memory.recall", {"query": "…"})`` returns the result JSON.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float | None = None) -> None:
        self.url = url.rstrip("/")
        try:
            parts = urllib.parse.urlsplit(self.url)
            parts.port  # noqa: B018 - raises ValueError for a port that is not a number
            bad = "" if parts.scheme in ("http", "https") and parts.hostname else "expected http(s)://host[:port]"
        except ValueError as exc:
            bad = str(exc)
        if bad:
            raise errors.ConfigError(f"--server {url!r} is not a server URL: {bad}", details={"url": url})
        if token is None or timeout is None:
            settings = client_settings()
            token = settings.token if token is None else token
            timeout = settings.client_timeout if timeout is None else timeout
        self.token, self.timeout = token or None, timeout

    def call(self, verb: str, params: dict[str, Any] | None = None, *, namespace: str | None = None,
             actor: str | None = None, internal: bool = False, idempotency_key: str | None = None) -> Any:
        """POST /v1/verbs/{verb}; returns the result JSON or raises the server's error.

        Every call carries an idempotency key (a new one unless given): when the answer is lost (a timeout), the
        outcome is unknown, and sending the same call again with the same key is safe — the server runs a write
        at most once per key."""
        if internal:
            raise errors.Forbidden(f"{verb}: sub-handlers cannot be called through a server; call it locally "
                                   "with --internal when no server holds the database", verb=verb)
        query = "?" + urllib.parse.urlencode({"namespace": namespace}) if namespace else ""
        headers = {ACTOR_HEADER: actor} if actor else {}
        headers[IDEMPOTENCY_HEADER] = idempotency_key or uuid.uuid4().hex
        # a person at a shell expects to see what any agent just stored: the server catches up first (one indexed
        # read on a shared store, nothing on a DuckDB file)
        headers[CONSISTENCY_HEADER] = "strong"
        payload = self._request("POST", f"/v1/verbs/{urllib.parse.quote(verb)}{query}", params or {}, verb, headers)
        return payload.get("result")

    def verbs(self) -> list[dict[str, Any]]:
        return self._request("GET", "/v1/verbs", None, None)["result"]["verbs"]

    def export_to(self, file: str, namespace: str | None = None) -> int:
        """GET /v1/export into ``file`` (written whole, then renamed); returns the number of bytes."""
        query = "?" + urllib.parse.urlencode({"namespace": namespace}) if namespace else ""
        req = self._build("GET", f"/v1/export{query}", None, NDJSON)
        tmp = file + ".part"
        size = 0
        try:
            with self._open(req, "export") as resp, open(tmp, "wb") as out:
                while chunk := resp.read(1 << 20):
                    out.write(chunk)
                    size += len(chunk)
            os.replace(tmp, file)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return size

    def import_from(self, file: str, namespace: str | None = None) -> dict[str, Any]:
        """POST /v1/import with ``file`` as the body; returns the counts imported per pack and record type."""
        query = "?" + urllib.parse.urlencode({"namespace": namespace}) if namespace else ""
        with open(file, "rb") as f:
            req = self._build("POST", f"/v1/import{query}", f.read(), NDJSON)
        with self._open(req, "import") as resp:
            return _decode(resp.read(), resp.status, "import")["result"]["imported"]

    def _build(self, method: str, path: str, data: bytes | None, content_type: str,
               headers: dict[str, str] | None = None) -> urllib.request.Request:
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_unredirected_header("Authorization", f"Bearer {self.token}")  # (_TokenStaysHome)
        return req

    def _open(self, req: urllib.request.Request, what: str) -> Any:
        """The open response (a context manager), or the server's error / an unreachable server as ours."""
        try:
            return _OPENER.open(req, timeout=self.timeout)
        except (urllib.error.URLError, OSError) as exc:
            self._fail(exc, what)

    def _request(self, method: str, path: str, body: Any, verb: str | None,
                 headers: dict[str, str] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = self._build(method, path, data, "application/json", headers)
        req.add_header("Accept", "application/json")
        try:
            with _OPENER.open(req, timeout=self.timeout) as resp:
                return _decode(resp.read(), resp.status, verb)
        except (urllib.error.URLError, OSError) as exc:
            self._fail(exc, verb, (headers or {}).get(IDEMPOTENCY_HEADER))

    def _fail(self, exc: BaseException, verb: str | None, key: str | None = None) -> NoReturn:
        """Raise the server's error (an HTTP error answer), or ours for a server that did not answer: with an
        idempotency ``key``, a timeout is an unknown outcome that is safe to retry with that key."""
        if isinstance(exc, urllib.error.HTTPError):
            raw = exc.read()
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = raw.decode("utf-8", "replace")[:500]
            raise error_from_dict(payload, status=exc.code, verb=verb) from None
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (TimeoutError, socket.timeout)) and key:
            raise errors.StorageError(
                f"unknown outcome: the server at {self.url} did not answer within {self.timeout:g} s, and may "
                f"still have run the call. Retrying it with --idempotency-key {key} is safe: the server runs "
                "a write at most once per key.", verb=verb,
                details={"reason": "unknown_outcome", "url": self.url, "idempotency_key": key}) from None
        hint = f" (is `pal serve` running there? check {TOKEN_ENV} if it needs a token)"
        raise errors.StorageError(f"cannot reach the palimpsest server at {self.url}: {reason}{hint}", verb=verb,
                                  details={"reason": "server_unreachable", "url": self.url}) from None


def _decode(raw: bytes, status: int, verb: str | None) -> dict[str, Any]:
    try:
        payload = json.loads(raw)
    except ValueError:
        raise errors.InternalError(f"the server answered HTTP {status} with non-JSON", verb=verb) from None
    if not isinstance(payload, dict) or payload.get("ok") is not True:
        raise error_from_dict(payload, status=status, verb=verb)
    return payload

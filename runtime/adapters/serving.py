"""What the HTTP and MCP servers share, in the stdlib only (the CLI imports it without any extra installed).

- :class:`AdapterSettings`: the ``[adapters]`` config section (host, ports, token, body limit, client timeout).
- Safe binding: loopback by default; a non-loopback host without a token is refused.
- Server discovery through the store (:func:`announce`, :func:`discover`): a running server announces itself
  (beside a file, or in a PostgreSQL database's ``_palimpsest.servers``), so ``pal mcp`` finds it and forwards,
  and a CLI that finds a file locked says who holds it and how to reach it (:func:`explain_locked`).
- :class:`Guard`: a raw ASGI middleware for bearer-token auth, Host checking and the request body limit, answering
  in the one JSON error shape.
- The one success shape, ``{"ok": true, "verb": ..., "result": {...}}`` (:func:`success`).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import hmac
import ipaddress
import json
import os
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator, Mapping

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.errors import PalimpsestError

TOKEN_ENV = "PALIMPSEST_TOKEN"
ACTOR_HEADER = "X-Palimpsest-Actor"  # HTTP: who a request's call is made for (Runtime.call(actor=))
IDEMPOTENCY_HEADER = "Idempotency-Key"  # HTTP: a retry of a write with the same key runs it once
CONSISTENCY_HEADER = "X-Palimpsest-Consistency"  # HTTP: "strong" catches up with other processes first (ADR 0016)
NDJSON = "application/x-ndjson"  # a `pal export` file on the wire (GET /v1/export, POST /v1/import)
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def tool_name(verb: str) -> str:
    """The MCP tool / OpenAPI operation name of a verb: ``memory.recall`` → ``memory_recall``."""
    return verb.replace(".", "_")


def result_data(result: Any) -> Any:
    """The JSON data of a verb's result, as every adapter outputs it: a timestamp always carries its zone.

    Packs keep times as naive UTC datetimes (the house rule); every output says UTC (``…T09:30:00Z``), found
    as datetime objects in the model's Python dump (never by looking at strings, so a note whose text looks like a
    time is left alone). Python callers of ``Runtime.call`` still get the naive UTC datetimes."""
    from pydantic_core import to_jsonable_python

    data = result.model_dump(mode="python") if hasattr(result, "model_dump") else result
    return to_jsonable_python(_utc(data), inf_nan_mode="null")


def _utc(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
    if isinstance(value, dict):
        return {k: _utc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_utc(v) for v in value]
    return value


def success(verb: str, data: Any) -> dict[str, Any]:
    """The one success shape every server answers with (the error shape is ``PalimpsestError.to_dict()``)."""
    return {"ok": True, "verb": verb, "result": data}


# -- settings -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AdapterSettings:
    host: str
    http_port: int
    mcp_port: int
    mcp_path: str
    token: str
    max_body_bytes: int
    client_timeout: float
    read_timeout: float
    max_connections: int
    handover_seconds: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any], env: Mapping[str, str] | None = None) -> "AdapterSettings":
        """Read ``[adapters]`` from the effective config; ``PALIMPSEST_TOKEN`` overrides the configured token."""
        section = dict(config.get("adapters") or {})
        env = os.environ if env is None else env
        try:
            return cls(
                host=str(section["host"]), http_port=int(section["http_port"]), mcp_port=int(section["mcp_port"]),
                mcp_path=str(section["mcp_path"]), token=str(env.get(TOKEN_ENV) or section.get("token") or ""),
                max_body_bytes=int(section["max_body_bytes"]), client_timeout=float(section["client_timeout"]),
                read_timeout=float(section["read_timeout"]), max_connections=int(section["max_connections"]),
                handover_seconds=float(section["handover_seconds"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.ConfigError(f"invalid or missing [adapters] setting: {exc}") from None


def client_settings() -> AdapterSettings:
    """Adapter settings for a process that opens no runtime (the ``--server`` client): config only, no packs."""
    from palimpsest_memory.runtime import load_catalog

    env = {k: v for k, v in os.environ.items() if k not in ("PALIMPSEST_PACKS", "PALIMPSEST_DISABLE_PACKS")}
    _, config = load_catalog(config={"runtime": {"packs": [], "disabled": []}}, env=env, discover_packs=False)
    return AdapterSettings.from_config(config, env)


# -- binding ------------------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise errors.ConfigError(
            f"refusing to listen on non-loopback host {host!r} without a token: set {TOKEN_ENV} "
            "(or [adapters] token / --token), or bind 127.0.0.1", details={"host": host})


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket (port 0 picks a free one); the caller learns the real port from it."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise errors.ConfigError(f"cannot listen on {host}:{port}: {exc}",
                                 details={"host": host, "port": port}) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, path: str = "") -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


def loopback_hosts(port: int) -> set[str]:
    """Host header values accepted by a loopback server (DNS-rebinding protection)."""
    return {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]")} | {"127.0.0.1", "localhost", "[::1]"}


# -- servers that announced themselves (the store keeps where: beside a file, or in the database) -----------
def announce(runtime: Any, kind: str, url: str | None) -> Any:
    """While serving, let clients of the same store find this server (``Store.announce``). What a ``pal mcp``
    serves announces itself (``SharedMemory.announce``: whenever it holds the store, with its sharing endpoint)."""
    own = getattr(runtime, "announce", None)
    if own is not None:
        return own(kind, url)
    store = getattr(runtime, "store", None)
    return store.announce(kind, url) if store is not None else contextlib.nullcontext()


def discover(target: str) -> dict[str, Any] | None:
    """The newest live server announced for ``target`` and reachable from here whose verb API a client can call
    (a ``pal serve``, or a ``pal mcp`` sharing the file it holds: ADR 0037), found without opening the store; its
    ``api`` URL and ``token`` (None: the configured one) filled in."""
    from palimpsest_memory.runtime import live_servers

    if target == ":memory:":
        return None
    for found in live_servers(target, os.environ):
        api = found.get("api") or (found.get("url") if found.get("kind") == "http" else None)
        if api:
            return {**found, "api": api, "token": found.get("token")}
    return None


def explain_locked(exc: PalimpsestError) -> PalimpsestError:
    """Enrich a "database locked" StorageError with who holds the database and how to reach it."""
    from palimpsest_memory.runtime import live_servers

    details = exc.details if isinstance(exc.details, dict) else {}
    if not isinstance(exc, errors.StorageError) or details.get("reason") != "locked" or not details.get("path"):
        return exc
    found = live_servers(details["path"])
    if not found:
        return exc
    info = found[0]
    pid, kind, url = info.get("pid"), info.get("kind"), info.get("url")
    if kind == "http" and url:
        how = f"send the call to it with --server {url} (or PALIMPSEST_SERVER={url})"
    elif info.get("api"):
        how = ("it shares the memory with every other `pal mcp` started on it (they forward their calls to it); for "
               "the CLI, run `pal serve` on the file instead of the agents' `pal mcp`, or stop them")
    elif url:
        how = f"it serves MCP at {url} (only `pal serve` takes CLI calls); stop it or use an MCP client"
    else:
        how = "it serves MCP over stdio to the agent that started it; stop that agent, or run `pal serve` instead"
    message = (f"database {details['path']} is held by process {pid} (`pal {'serve' if kind == 'http' else 'mcp'}`, "
               f"{kind}, since {info.get('started_at', '?')}): {how}")
    return errors.StorageError(message, verb=exc.verb, details={**details, "holder": info})


# -- ASGI guard -----------------------------------------------------------------------------------------------
Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def send_error(send: Send, exc: PalimpsestError, status: int | None = None,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps(exc.to_dict()).encode()
    await send({"type": "http.response.start", "status": status or exc.http_status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """Host/Origin checks (DNS rebinding, CSRF), bearer auth (constant-time) and the body limit, before the app."""

    def __init__(self, app: Any, *, token: str | None, max_body_bytes: int,
                 allowed_hosts: set[str] | None = None,
                 public: Callable[[str, str], bool] | None = None) -> None:
        self.app, self.token, self.max_body, self.allowed_hosts = app, token or None, max_body_bytes, allowed_hosts
        self.public = public  # (method, path) -> True for data-free static assets served without the token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if self.allowed_hosts is not None and headers.get("host", "").lower() not in self.allowed_hosts:
            await send_error(send, errors.Forbidden(f"host {headers.get('host')!r} is not allowed",
                                                    details={"reason": "host"}), 421)
            return
        origin = headers.get("origin")
        if self.allowed_hosts is not None and origin and origin_host(origin) not in self.allowed_hosts:
            await send_error(send, errors.Forbidden(f"cross-origin request from {origin!r} refused",
                                                    details={"reason": "origin"}))
            return
        if self.token is not None and not (self.public and self.public(scope.get("method", ""), scope["path"])):
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            ok = scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), self.token.encode())
            if not ok:
                why = "missing bearer token" if not given else "wrong bearer token"
                await send_error(send, errors.Forbidden(why, details={"reason": "unauthorized"}), 401,
                                 [(b"www-authenticate", b'Bearer realm="palimpsest"')])
                return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            await send_error(send, _too_large(self.max_body))
            return
        await self._limited(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        total, rejected, started = 0, False, False

        async def limited_receive() -> dict[str, Any]:
            nonlocal total, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                total += len(message.get("body", b""))
                if total > self.max_body:
                    rejected = True
                    if not started:
                        await send_error(send, _too_large(self.max_body))
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            nonlocal started
            if rejected:
                return  # the 413 already went out; whatever the app says after the cut-off is dropped
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


def origin_host(origin: str) -> str:
    """An Origin header as ``host:port``, the port always written (80 for http, 443 for https when the Origin has
    none): the allowed hosts also hold port-less names (for Host headers), and a port-less ``http://localhost``
    is another origin (port 80) than a server on port 8765 (issue 46)."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or not rest or "/" in rest or "@" in rest:
        return ""  # not a serialised origin ("null", a path, credentials): matches no allowed host
    host, port = (rest.rsplit(":", 1) if not rest.endswith("]") and ":" in rest else (rest, ""))
    port = port or {"http": "80", "https": "443"}.get(scheme, "")
    return f"{host}:{port}" if port.isdigit() else ""


def _too_large(limit: int) -> errors.LimitExceeded:
    return errors.LimitExceeded(f"request body exceeds {limit} bytes", details={"max_body_bytes": limit})


class Stopped(KeyboardInterrupt):
    """Raised by the SIGTERM/SIGINT handler so a server unwinds (closing the database, removing its info file).

    A KeyboardInterrupt, not an Exception: the handler can fire in whatever code the main thread runs — an asyncio
    callback, a logging handler, an ``except Exception`` that wraps errors — and those pass a KeyboardInterrupt on
    where they would log, swallow or convert an Exception, losing the stop or ending the process with status 1."""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM/SIGINT into a clean return: uvicorn re-raises the signal after its graceful shutdown, which
    would otherwise kill the process before the info file is removed and the database closed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Stopped(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except (Stopped, KeyboardInterrupt):
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def uvicorn_server(app: Any, settings: AdapterSettings) -> Any:
    """A uvicorn server for an ASGI app, with the request read timeout and the connection limit of ``settings``."""
    import uvicorn  # an optional extra: only reached from the commands that serve HTTP

    from palimpsest_memory.runtime.adapters.connections import bounded_protocol

    config = uvicorn.Config(app, log_level="warning", lifespan="auto",
                            http=bounded_protocol(settings.read_timeout, settings.max_connections))
    return uvicorn.Server(config)


def run_uvicorn(app: Any, sock: socket.socket, settings: AdapterSettings) -> None:
    """Serve an ASGI app on an already bound socket until SIGINT/SIGTERM (:func:`uvicorn_server`)."""
    server = uvicorn_server(app, settings)
    try:
        server.run(sockets=[sock])  # callers wrap this in stop_on_signals() (before writing their info file)
    finally:
        sock.close()

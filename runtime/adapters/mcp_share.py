"""Several ``pal mcp`` on one DuckDB file (ADR 0037): the first holds the file and shares it, the others forward.

A DuckDB file admits one process. Agent apps start their own ``pal mcp`` (Claude Desktop, Cursor and Claude Code
side by side), so the first one to open the file also serves the verb API on a loopback port with a random
bearer token, announced beside the file (``<file>.server.json``, readable by its owner only); a later ``pal mcp``
finds it and forwards every call there. When the holder exits (its client quit), it stops announcing, finishes
the calls in flight and lets go of the file; the next call of a forwarding process finds nobody there, opens the
file itself (the first to get it holds it and shares it in turn; the others forward to that one) and sends the
call again with the same idempotency key, so a write the old holder committed before it went is not made twice.

A PostgreSQL store needs none of this: every process opens it. ``--server URL`` forwards to that server only.
"""
from __future__ import annotations

import contextlib
import secrets
import sys
import threading
import time
import uuid
from typing import Any, Iterator

from palimpsest_memory.runtime import Runtime, VerbSpec, errors, load_catalog
from palimpsest_memory.runtime.adapters.serving import (
    AdapterSettings, bind_socket, discover, explain_locked, loopback_hosts, url_of, uvicorn_server,
)

STARTUP_SECONDS = 30.0  # how long the sharing endpoint may take to listen (a slow import on a loaded machine)


class Forwarder:
    """Stands in for a runtime when another process holds the database and serves its verb API: the tools are
    the local catalog's (the same packs are installed), every call goes to that server (``RemoteClient``)."""

    path = None

    def __init__(self, url: str, catalog: Any, config: Any, token: str | None = None) -> None:
        from palimpsest_memory.runtime.adapters.remote import RemoteClient

        self.url, self.catalog, self.config = url, catalog, config
        self.client = RemoteClient(url, token=token)

    def verbs(self, *, include_subhandlers: bool = False) -> list[VerbSpec]:
        return self.catalog.verbs(include_subhandlers=include_subhandlers)

    @staticmethod
    def check_actor(actor: str | None) -> str | None:
        return Runtime.check_actor(actor)

    def call(self, verb: str, params: dict[str, Any], *, actor: str | None = None, namespace: str | None = None,
             idempotency_key: str | None = None) -> Any:
        return self.client.call(verb, params, namespace=namespace, actor=actor, idempotency_key=idempotency_key)

    def close(self) -> None:
        pass


class SharingEndpoint:
    """The verb API of a runtime on a loopback port with its own random token, served from a thread (the same app
    as ``pal serve``: one HTTP path, one guard)."""

    def __init__(self, runtime: Runtime) -> None:
        from palimpsest_memory.runtime.adapters.http import create_app

        settings = AdapterSettings.from_config(runtime.config)
        self.token = secrets.token_urlsafe(32)
        self._sock = bind_socket("127.0.0.1", 0)
        self.api = url_of(self._sock)
        app = create_app(runtime, token=self.token, allowed_hosts=loopback_hosts(self._sock.getsockname()[1]))
        self._server = uvicorn_server(app, settings)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="palimpsest-mcp-share", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            self.stop()
            raise errors.StorageError(f"could not share the store at {self.api}: the endpoint did not start")

    def stop(self) -> None:
        """Stop listening, let the calls in flight finish (uvicorn's graceful shutdown), then return."""
        self._server.should_exit = True
        self._thread.join()
        self._sock.close()


class SharedMemory:
    """What a ``pal mcp`` serves (it quacks like a :class:`Runtime` to ``build_server``): the store opened here and
    shared, or a :class:`Forwarder` to its holder, which this process replaces when the holder goes away."""

    def __init__(self, db: str | None, server: str | None) -> None:
        self.catalog, self.config = load_catalog()
        self._db = db
        self._named_server = server
        self._serving: tuple[str, str | None] | None = None  # (kind, url) while an MCP server runs on this
        self._announced: Any = None
        self._handover = AdapterSettings.from_config(self.config).handover_seconds
        self._lock = threading.Lock()
        self._runtime: Runtime | None = None
        self._sharing: SharingEndpoint | None = None
        self._target: Any = None
        if server:
            self._target = Forwarder(server, self.catalog, self.config)
        else:
            self._settle(gone=None)

    # -- what build_server and the servers use ----------------------------------------------------------------
    @property
    def path(self) -> Any:
        return getattr(self._target, "path", None)

    @property
    def url(self) -> Any:
        return getattr(self._target, "url", None)

    @contextlib.contextmanager
    def announce(self, kind: str, url: str | None) -> Iterator[None]:
        """While an MCP server of ``kind`` serves this at ``url``: announced through the store whenever this process
        holds it (now, or after taking it over), with the sharing endpoint's address; nothing while forwarding."""
        with self._lock:
            self._serving = (kind, url)
            self._announce()
        try:
            yield
        finally:
            with self._lock:
                self._serving = None
                self._unannounce()

    def verbs(self, *, include_subhandlers: bool = False) -> list[VerbSpec]:
        return self.catalog.verbs(include_subhandlers=include_subhandlers)

    @staticmethod
    def check_actor(actor: str | None) -> str | None:
        return Runtime.check_actor(actor)

    def call(self, verb: str, params: dict[str, Any], *, actor: str | None = None,
             namespace: str | None = None) -> Any:
        key = uuid.uuid4().hex  # the same key on every attempt: a write the old holder made is replayed, not redone
        retried = False
        while True:
            target = self._target
            try:
                if isinstance(target, Forwarder):
                    return target.call(verb, params, actor=actor, namespace=namespace, idempotency_key=key)
                return target.call(verb, params, actor=actor, namespace=namespace,
                                   idempotency_key=key if retried else None)
            except errors.StorageError as exc:
                details = exc.details if isinstance(exc.details, dict) else {}
                if self._named_server or details.get("reason") != "server_unreachable":
                    raise
                with self._lock:
                    if self._target is target:  # else another thread has already settled who holds it now
                        self._settle(gone=target)
                retried = True

    def close(self) -> None:
        """Stop sharing (announcement first, then the calls in flight), then let go of the file."""
        with self._lock:
            try:
                self._unannounce()
                if self._sharing is not None:
                    self._sharing.stop()
            finally:
                self._sharing = None
                if self._runtime is not None:
                    self._runtime.close()
                self._runtime = None

    def _announce(self) -> None:
        if self._serving is None or self._runtime is None or self._announced is not None:
            return
        kind, url = self._serving
        sharing = {"api": self._sharing.api, "token": self._sharing.token} if self._sharing is not None else {}
        announced = self._runtime.store.announce(kind, url, **sharing)
        announced.__enter__()
        self._announced = announced

    def _unannounce(self) -> None:
        announced, self._announced = self._announced, None
        if announced is not None:
            announced.__exit__(None, None, None)

    # -- holding and forwarding -------------------------------------------------------------------------------
    def _settle(self, gone: Forwarder | None) -> None:
        """Forward to the process that holds the store now, or open and hold it here; while another process is
        letting go of the file or opening it, try again for up to ``[adapters] handover_seconds``."""
        deadline = time.monotonic() + self._handover
        while True:
            found = discover(self._db or str(self.config.get("runtime", {}).get("database", ":memory:")))
            if found is not None and (gone is None or found["api"] != gone.url):
                self._target = Forwarder(found["api"], self.catalog, self.config, token=found.get("token"))
                who = "`pal serve`" if found.get("kind") == "http" else "`pal mcp`"
                where = f"process {found.get('pid')}" + (f" on {found['host']}" if found.get("host") else "")
                print(f"palimpsest: {who} ({where}) holds this memory; the MCP tools forward their calls to it",
                      file=sys.stderr, flush=True)
                return
            try:
                self._hold(Runtime.open(self._db))
                return
            except errors.StorageError as exc:
                details = exc.details if isinstance(exc.details, dict) else {}
                if details.get("reason") != "locked" or time.monotonic() > deadline:
                    raise explain_locked(exc) from None
            time.sleep(0.05)  # the holder is letting go of the file, or another process won it and is opening it

    def _hold(self, runtime: Runtime) -> None:
        self._runtime, self._target = runtime, runtime
        if not runtime.store.reached_through_holder:
            self._announce()
            return  # a PostgreSQL store (every process opens it) or :memory:
        try:
            self._sharing = SharingEndpoint(runtime)
        except ImportError as exc:  # the http extra missing: this process still serves its own client
            print(f"palimpsest: not sharing {runtime.path} with other `pal mcp` processes ({exc.name} is not "
                  "installed): a second one will find it locked", file=sys.stderr, flush=True)
            self._announce()
            return
        self._announce()
        print(f"palimpsest: this `pal mcp` holds {runtime.path} and shares it with other `pal mcp` processes "
              f"({self._sharing.api})", file=sys.stderr, flush=True)

"""``Runtime``: the object a host app holds, and the call path: one verb call in one transaction, under the
namespace's lock, its mirrors fed after the commit. Opening (packs, config, store, mirrors) is
:mod:`palimpsest_memory.runtime.opening`; the tunables' table and mirror are :mod:`palimpsest_memory.runtime.tunables`.
"""
from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NoReturn

from pydantic import BaseModel

from palimpsest_memory.runtime import changelog, collector, compact, idempotency, storage, tunables
from palimpsest_memory.runtime.aftercommit import Followers
from palimpsest_memory.runtime.dispatch import (CallInfo, Context, Frame, check_actor, check_namespace, utc_now,
                                                validate_params)
from palimpsest_memory.runtime.errors import (InternalError, InvalidParams, PalimpsestError, ReadOnlyViolation,
                                             StorageError, StoreUnavailable)
from palimpsest_memory.runtime.opening import boot, load_catalog
from palimpsest_memory.runtime.pack import Pack, VerbSpec

__all__ = ["Runtime", "load_catalog"]  # load_catalog: defined in opening, kept importable from here


class Runtime:
    """Loaded packs over one open DuckDB database. Use :meth:`open`; close it (or use ``with``) when done."""

    def __init__(self) -> None:  # use Runtime.open
        self._lock = threading.RLock()
        self._state: dict[str, Any] = {}
        self._settings: dict[str, Any] = {}
        self._loggers: dict[str, logging.Logger] = {}
        self.tunables = tunables.Tunables()
        self._tunables = self.tunables.values  # (namespace, actor or '*', pack, name) -> value
        self.store: storage.Store | None = None  # the one seam to the backend (ADR 0031)
        self.origin = uuid.uuid4().hex  # this runtime's name in the change log
        self.clock: Callable[[], Any] = utc_now
        self.followers = Followers(self)
        self.deadline_seconds = 0.0  # runtime.deadline_seconds, read at open
        self.max_staleness_seconds = 0.0  # runtime.max_staleness_seconds, read at open (0: no bound)
        self._traced = True  # until open has seen which dispatch implementations are installed
        self._loaded = False  # the mirrors were loaded (open got that far)

    # -- opening -------------------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        packs: Iterable[Pack | Any] | None = None,
        discover_packs: bool | None = None,
        env: Mapping[str, str] | None = None,
        clock: Callable[[], Any] | None = None,
    ) -> "Runtime":
        """Load packs and open (creating and migrating) the database.

        ``path`` defaults to ``runtime.database`` in config: a DuckDB file, ``":memory:"`` for a throwaway store, or
        a ``postgresql://`` URL (credentials from the URL or libpq's ``PG*`` variables) for a store shared by
        many processes (ADR 0016).
        ``packs`` adds pack objects (or modules with a ``pack``) beside the installed ones; by default installed
        packs are discovered through entry points only when no ``packs`` are given.
        """
        rt = cls()
        if clock is not None:
            rt.clock = clock
        boot(rt, path, config=config, packs=packs, discover_packs=discover_packs, env=env)
        return rt

    def close(self) -> None:
        if self.store is not None:
            # mirrors write what they keep only in memory (the brain's pending serves) while the store is open;
            # each runs on its own, so one that cannot flush neither keeps the database open nor stops the others
            if self._loaded:  # (a store that failed to open has no mirrors to flush)
                self.followers.close_all()
            with self._lock:
                self.store.close()
                self.store = None

    def _wake(self, newest: int | None = None) -> bool:
        """Another process may have committed (the store's follower thread): catch up under the lock, unless the
        changes up to ``newest`` (the sequence number notified) are applied already. False once the runtime is
        closed (the thread then stops)."""
        f = self.followers
        if newest is not None and newest <= f.seq and not f.reload_pending:  # (read without the lock: seq only grows)
            return self.store is not None
        with self._lock:
            if self.store is None:
                return False
            self.followers.catch_up()
            return True

    def _idle(self) -> bool:
        """The follower thread has a moment: let the mirrors do a chunk of the work they deferred (``Mirror.idle``);
        True while some remains."""
        with self._lock:
            if self.store is None:
                return False
            return self.followers.idle()

    def describe_store(self) -> dict[str, Any]:
        """What ``pal info`` shows of the store: backend, location (no secrets), size in bytes, server."""
        with self._lock:
            return self._require_open().describe()

    def grants(self, role: str, *, read_only: bool = False) -> list[str]:
        """The SQL statements that let database ``role`` open this store (``pal grants``; ADR 0031)."""
        with self._lock:
            return self._require_open().grants(role, sorted(self.catalog.packs), read_only=read_only)

    def pack_state(self, pack: str) -> Any:
        """The in-memory state of a loaded pack (its mirrors): for tools and tests that look inside a pack."""
        if pack not in self._state:
            raise PalimpsestError(f"no loaded pack named {pack!r}")
        return self._state[pack]

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- catalog -------------------------------------------------------------------------------------------
    def verbs(self, *, include_subhandlers: bool = False) -> list[VerbSpec]:
        return self.catalog.verbs(include_subhandlers=include_subhandlers)

    def schema_versions(self) -> dict[str, int]:
        return storage.schema_versions(self._require_open().con)

    # -- calling -------------------------------------------------------------------------------------------
    def call(self, verb: str, params: dict[str, Any] | BaseModel | None = None, *,
             namespace: str | None = None, actor: str | None = None, internal: bool = False,
             idempotency_key: str | None = None, consistency: str = "eventual") -> BaseModel:
        """Run one verb in one transaction and return its validated result model.

        Assertive verbs run read-only and are always rolled back; any error rolls the whole call back.
        ``actor`` names who the call is made for (``ctx.actor``; tunables set for that actor win over the
        namespace's); the calls it makes, and the subscribers of the events it publishes, run for the same actor.
        ``internal=True`` lets a debugging caller reach a sub-handler. ``idempotency_key`` makes a writing call
        safe to retry: a key already used for the same call returns that call's result without running it again.
        ``consistency="strong"`` (shared store) first applies every change other processes committed, so the call
        reads them; the default, ``"eventual"``, reads this process's mirrors as they are (its own writes at once,
        others' once their notification arrived). On a DuckDB file both are the same.
        """
        if consistency not in CONSISTENCY:
            raise InvalidParams(f"consistency must be one of {', '.join(CONSISTENCY)}, got {consistency!r}", verb=verb,
                                details={"errors": [{"loc": ["consistency"], "msg": "unknown consistency"}]})
        spec = self.catalog.resolve(verb, caller_pack=None, internal=internal)
        who = check_actor(actor, verb)
        with collector.paused(spec.bulk):  # a bulk verb: from validating its batch to its end (ADR 0029)
            return self._call(verb, spec, params, namespace, who, idempotency_key, consistency)

    def _call(self, verb: str, spec: VerbSpec, params: Any, namespace: str | None, who: str | None,
              idempotency_key: str | None, consistency: str) -> BaseModel:
        model = validate_params(spec, params)
        named = getattr(model, "namespace", None)
        if named is not None and namespace is not None and named != namespace:
            # one rule: a call names its namespace once (a body must not silently override the URL's)
            raise InvalidParams(f"the call names two namespaces, {namespace!r} and {named!r} in its params; "
                                "name it once", verb=verb, details={"errors": [{"loc": ["namespace"],
                                                                             "msg": "conflicting namespaces"}]})
        ns = check_namespace(named or namespace or self.default_namespace, verb)
        key = idempotency.check_key(idempotency_key, verb) if spec.writes else None
        with self._lock:
            store = self._require_open()
            frame = Frame(read_only=not spec.writes,  # its transaction begins at the first statement
                          deadline=time.monotonic() + self.deadline_seconds if self.deadline_seconds else None)
            try:
                self._fresh(verb)
                self.followers.ensure(ns)  # its mirrors, loaded at the namespace's first call (ADR 0016)
                digest = idempotency.call_hash(verb, ns, who, model) if key else ""
                if consistency == "strong":
                    self.followers.catch_up()
                if spec.writes:
                    # one writer per namespace at a time, its mirrors caught up under the lock (ADR 0016); the key
                    # is looked up under it, so two processes never both run the same keyed call
                    self.lock_namespace(frame, ns, key)
                    if key:
                        stored = idempotency.replay(store.con, key, verb, digest)
                        if stored is not None:
                            if frame.began:
                                store.rollback_quietly()
                            return spec.result_model.model_validate_json(stored)
                result = self._dispatch(CallInfo(spec, model, ns, None, 0, frame, self, who))
                if key:  # with the call's own writes, so the key commits exactly when they do
                    self._begin(frame)
                    idempotency.remember(store.con, key, verb, digest, result, self.clock())
                if frame.began and frame.read_only:
                    store.rollback_quietly()  # belt and braces: nothing an assertive verb did may persist
                else:
                    self.commit(frame)
            except BaseException as exc:
                self._abandon(frame, exc, verb)
            self._finish(frame, ns)
            return result

    def call_all(self, body: Callable[[Callable[..., BaseModel]], Any], *, namespace: str | None = None,
                 internal: bool = False) -> Any:
        """Run ``body(call)``, where ``call(verb, params)`` makes a verb call in ``namespace``: every call shares ONE
        write transaction, committed when ``body`` returns, rolled back whole if anything raises (or the process
        dies). For a write that takes many calls and must be all or nothing: ``pal import palimpsest`` writes a
        namespace as pages of every portable pack's ``import_records`` (runtime/exportfile.py). The namespace's
        write lock is held from the first call to the commit. Each call has its own deadline. A call that raised
        leaves the transaction unusable: ``body`` must let the error through (if it swallows it, nothing is
        committed and an :class:`InternalError` says so)."""
        ns = check_namespace(namespace or self.default_namespace, None)
        failed: list[BaseException] = []
        with self._lock:
            self._require_open()
            self.followers.ensure(ns)
            frame = Frame(read_only=False)

            def call(verb: str, params: dict[str, Any] | BaseModel | None = None) -> BaseModel:
                spec = self.catalog.resolve(verb, caller_pack=None, internal=internal)
                try:
                    with collector.paused(spec.bulk):
                        model = validate_params(spec, params)
                        named = getattr(model, "namespace", None)
                        if named is not None and named != ns:
                            raise InvalidParams(f"a call of call_all names namespace {named!r}, not {ns!r}",
                                                verb=verb)
                        self.lock_namespace(frame, ns)
                        frame.deadline = time.monotonic() + self.deadline_seconds if self.deadline_seconds else None
                        return self._dispatch(CallInfo(spec, model, ns, None, 0, frame, self, None))
                except BaseException as exc:
                    failed.append(exc)
                    raise

            try:
                result = body(call)
                if failed:
                    raise InternalError(f"a call failed inside call_all and the caller went on: nothing was "
                                        f"kept ({failed[0]!r})")
                self.commit(frame)
            except BaseException as exc:
                self._abandon(frame, exc, None)
            self._finish(frame, ns)
            return result

    def _abandon(self, frame: Frame, exc: BaseException, verb: str | None) -> NoReturn:
        """A call failed: roll its transaction back and raise the error (a database's as a typed one)."""
        if frame.began and self.store is not None:
            self.store.rollback_quietly()
        if isinstance(exc, storage.DB_ERRORS):
            raise storage.base.store_error(f"transaction failed: {exc}", exc, verb) from exc
        raise exc

    def _finish(self, frame: Frame, ns: str) -> None:
        """After a commit: feed the mirrors and the subscribers, weigh the held namespaces, and do what the call
        asked for once committed (erase the deleted rows' bytes, ADR 0018; a backup)."""
        self.followers.committed(frame)
        self.followers.trim(ns)
        if frame.erase:
            compact.erase_bytes(self)
        if frame.backup_to is not None:
            self._require_open().backup(frame.backup_to)

    def _fresh(self, verb: str) -> None:
        """Never answer from a view older than ``runtime.max_staleness_seconds``: catch up first, and when the
        store cannot be read, fail with a retryable StoreUnavailable rather than answer silently stale."""
        behind = time.monotonic() - self._require_open().read_at()
        if not self.max_staleness_seconds or behind <= self.max_staleness_seconds:
            return
        try:
            self.followers.catch_up()
        except storage.DB_ERRORS as exc:
            raise StoreUnavailable(
                f"this process has not read the store's changes for {behind:.0f} s (more than "
                f"runtime.max_staleness_seconds = {self.max_staleness_seconds:g}) and cannot read them now: {exc}",
                verb=verb, details={"retryable": True, "reason": "stale", "behind_seconds": round(behind, 1),
                                    "retry_after_seconds": round(float(getattr(exc, "retry_after", 0.0)), 2)},
            ) from None

    def _begin(self, frame: Frame) -> None:
        if not frame.began:
            self._require_open().begin(read_only=False)
            frame.began = True

    def hold(self, namespace: str) -> None:
        """Load ``namespace``'s per-namespace mirrors now, as its first call would (ADR 0016); a no-op when held."""
        ns = check_namespace(namespace, None)
        with self._lock:
            self._require_open()
            self.followers.ensure(ns)

    def held_namespaces(self) -> list[str]:
        """The namespaces whose mirrors this process holds, least recently used first."""
        with self._lock:
            return list(self.followers.held)

    def lock_namespace(self, frame: Frame, namespace: str, key: str | None = None) -> None:
        """Shared store: open the write transaction, take the namespace's write lock (and the idempotency key's),
        then apply what other processes committed before it, so the call starts from the newest state."""
        self._xact_locks(frame, [(namespace, "ns", namespace)] + ([(f"idempotency {key}", "idempotency", key)]
                                                                   if key else []))

    def serialise(self, frame: Frame, name: str) -> None:
        """Take the store-wide lock ``name`` until ``frame``'s transaction ends, then apply what other processes
        committed before it was granted (``Context.serialise``). A store only this process writes already runs one
        call at a time under the runtime's lock: the store takes nothing then."""
        self._xact_locks(frame, [(name, "named", name)])

    def _xact_locks(self, frame: Frame, locks: list[tuple[str, str, str]]) -> None:
        """Take each ``(label, kind, name)`` lock ``frame`` does not hold yet (``frame.locked`` keeps the labels:
        a namespace's own name, or "<kind> <name>"; names of namespaces hold no space) until its transaction
        ends; when the store took them, catch up with what other processes committed before they were granted."""
        if self._require_open().lock_for_write(frame, locks):
            self.followers.catch_up(in_transaction=True, frame=frame)

    def commit(self, frame: Frame) -> None:
        """Commit a writing frame with its changes logged in the same transaction (the store numbers them)."""
        store = self._require_open()
        if frame.erase:  # erased text must not survive in a stored idempotent result either
            self._begin(frame)
            idempotency.forget_results(store.con)
            compact.mark(store.con, self.clock())  # the rewrite is owed from this commit on (issue 46, F4)
        logged = frame.changes + [(p, self.default_namespace, changelog.RELOAD, None) for p in sorted(frame.reload)]
        frame.seqs = store.commit(frame.began, logged, self.origin)

    @staticmethod
    def check_actor(actor: str | None) -> str | None:
        """``actor`` if it is a valid actor name (or None), else :class:`InvalidParams` (adapters check theirs
        early)."""
        return check_actor(actor, None)

    def _nested_call(self, ctx: Context, verb: str, params: Any, namespace: str, frame: Frame, depth: int) -> Any:
        spec = self.catalog.resolve(verb, caller_pack=ctx.pack, internal=False)
        if ctx.read_only and spec.writes:
            raise ReadOnlyViolation(
                f"{ctx.verb} is read-only and cannot call {spec.act.value} verb {verb}", verb=ctx.verb)
        model = validate_params(spec, params, trusted=True)
        ns = check_namespace(getattr(model, "namespace", None) or namespace, verb)
        if spec.writes and not frame.read_only and ns not in frame.locked:
            self.lock_namespace(frame, ns)
        self.followers.ensure(ns, frame)
        if depth >= 32:
            raise ReadOnlyViolation(f"call depth limit reached calling {verb}", verb=ctx.verb)
        marks = len(frame.changes), len(frame.events)
        try:
            return self._dispatch(CallInfo(spec, model, ns, ctx.pack, depth + 1, frame, self, ctx.actor))
        except BaseException:
            if spec.writes and not frame.read_only:
                # The caller may catch this and commit what the failed call half wrote: its recorded changes
                # no longer describe the store, so the packs it touched reload their mirrors after commit.
                frame.reload.update({spec.pack, *(c[0] for c in frame.changes[marks[0]:])})
                del frame.changes[marks[0]:]
            del frame.events[marks[1]:]
            raise

    def _dispatch(self, call: CallInfo) -> Any:
        if self._traced:
            return self._pm.hook.palimpsest_dispatch(call=call)
        return self._core.palimpsest_dispatch(call)

    def _hook_results(self, name: str, **kwargs: Any) -> list[Any]:
        hook = getattr(self._pm.hook, name, None)
        if hook is None:
            raise PalimpsestError(f"no hook named {name!r} is declared by a loaded pack")
        return hook(**kwargs)

    def _set_tunable(self, ctx: Context, target: str, value: float | None, actor: str | None) -> None:
        tunables.write(self.catalog, ctx, target, value, actor, self.clock())

    def _require_open(self) -> storage.Store:
        if self.store is None:
            raise StorageError("the runtime is closed")
        return self.store


CONSISTENCY = ("eventual", "strong")

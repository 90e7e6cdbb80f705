"""One verb call: validate params → one transaction (read-only for assertive verbs) → handler → validate result."""
from __future__ import annotations

import logging
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator

from pydantic import BaseModel, ValidationError

from palimpsest_memory.runtime.compact import backup_path
from palimpsest_memory.runtime.errors import (DeadlineExceeded, InternalError, InvalidParams, PalimpsestError,
                                              ReadOnlyViolation, StorageError, from_validation_error)
from palimpsest_memory.runtime.hookspecs import hookimpl
from palimpsest_memory.runtime.pack import VerbSpec
from palimpsest_memory.runtime.storage import Database

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")
NAMESPACE_LEVEL = "*"  # the actor column of a tunable set for the whole namespace (no actor name can be "*")


@dataclass
class Frame:
    """State shared by every nested call of one top-level call: its transaction, the changes it recorded for
    the mirrors, and the events it published (both dropped if the transaction rolls back)."""

    read_only: bool
    began: bool = False  # BEGIN runs at the call's first statement: a call served from memory costs no SQL
    changes: list[tuple[str, str, str, Any]] = field(default_factory=list)  # (pack, namespace, kind, data)
    events: list[tuple[str, str, "str | None", Any]] = field(default_factory=list)  # (event, namespace, actor, payload)
    reload: set[str] = field(default_factory=set)  # packs whose mirrors must reload after commit (see engine)
    deadline: float | None = None  # time.monotonic() past which ctx.check_deadline stops the call
    locked: set[str] = field(default_factory=set)  # namespaces whose write lock this transaction holds (shared store)
    seqs: list[int] = field(default_factory=list)  # change-log numbers of its changes, once logged (shared store)
    erase: bool = False  # a call erased data: the store file is rewritten once it commits (runtime/compact.py)
    backup_to: "str | None" = None  # a consistent copy of the store file is made there once the call commits


@dataclass
class CallInfo:
    """What a dispatch wrapper sees of a call."""

    spec: VerbSpec
    params: BaseModel
    namespace: str
    caller_pack: str | None
    depth: int
    _frame: Frame = field(repr=False)
    _runtime: "Runtime" = field(repr=False)
    actor: str | None = None  # who the call is made for (None: nobody in particular); nested calls inherit it

    @property
    def verb(self) -> str:
        return self.spec.full_name


class Context:
    """What a handler may use: namespace, actor, settings, the call's database handle, ``call``, state, a clock."""

    def __init__(self, runtime: "Runtime", pack: str, verb: str, namespace: str, frame: Frame, depth: int,
                 actor: str | None = None, *, read_only: bool) -> None:
        self._runtime = runtime
        self._frame = frame
        self._depth = depth
        self.verb = verb
        self.pack = pack
        self.namespace = namespace
        self.actor = actor
        self.settings = runtime._settings.get(pack)
        self.state = runtime._state[pack]
        self.read_only = read_only
        self.db = Database(runtime.store, read_only=read_only, verb=verb, frame=frame)
        self.log = runtime._loggers[pack]
        # (when, its length in seconds, the setting that set it): the call's, or a tighter one of ``deadline``
        self._deadline = (frame.deadline, runtime.deadline_seconds, "runtime.deadline_seconds")

    def call(self, verb: str, params: dict[str, Any] | BaseModel | None = None, *, namespace: str | None = None) -> Any:
        """Call another verb inside this call's transaction (own pack's verbs, or public verbs of required packs).

        The nested call is made for the same actor."""
        return self._runtime._nested_call(self, verb, params, namespace or self.namespace, self._frame, self._depth)

    def record_change(self, kind: str, data: Any = None, *, namespace: str | None = None) -> None:
        """Tell this pack's mirrors what this call changed in the store; they get it (as a
        :class:`~palimpsest_memory.runtime.mirror.Change`) after the outermost transaction commits, never if it rolls
        back. ``namespace``: the namespace the change is about, when a store-wide verb changed another one than its own
        (per-namespace mirrors take a change only for the namespace it names)."""
        if self.read_only:
            raise ReadOnlyViolation("a read-only call has no changes to record", verb=self.verb)
        self._frame.changes.append((self.pack, namespace or self.namespace, kind, data))

    def serialise(self, name: str) -> None:
        """Until this transaction ends, be the only transaction of any process holding ``name`` (a lock of this
        pack's: ``"<pack>:<name>"``), with this process's mirrors caught up with every change committed before the
        lock was granted. Writing calls are already serialised per namespace; a handler that runs without that
        lock (``Pack.subscribe(..., namespace_lock=False)``) uses this for the part that must not run twice at once."""
        if self.read_only:
            raise ReadOnlyViolation("a read-only call takes no write lock", verb=self.verb)
        self._runtime.serialise(self._frame, f"{self.pack}: {name}")  # the space: never a namespace's name

    def uncommitted(self, kind: str | None = None) -> list[Any]:
        """The data of the changes this pack recorded for this namespace in the current, not yet committed
        transaction (of one kind, or all): while there are any, the mirrors do not show them, the SQL does."""
        return [d for p, ns, k, d in self._frame.changes
                if p == self.pack and ns == self.namespace and (kind is None or k == kind)]

    def check_deadline(self, during: str = "") -> None:
        """Stop the call with :class:`DeadlineExceeded` (nothing it did is kept) once it has run past its deadline:
        ``runtime.deadline_seconds`` from the top-level call's start (nested calls share it), or the tighter one a
        handler set with :meth:`deadline`. Verbs whose work grows with the store call this in their loops."""
        when, seconds, setting = self._deadline
        if when is not None and time.monotonic() > when:
            length = f"{seconds * 1000:g} ms" if setting.endswith("_ms") else f"{seconds:g} s"  # in the setting's unit
            raise DeadlineExceeded(f"{self.verb} ran past its {length} deadline ({setting})"
                                   + (f" during {during}" if during else ""), verb=self.verb,
                                   details={"deadline_seconds": seconds, "setting": setting, "during": during})

    @contextmanager
    def deadline(self, seconds: float, setting: str) -> Iterator[None]:
        """Inside the block, :meth:`check_deadline` stops the call ``seconds`` from now, if that comes before the
        deadline in force (``0``: no tighter one). ``setting`` names the configuration key the error quotes. The
        one deadline mechanism: a verb with a shorter budget than the call's (recall) tightens it here."""
        saved = self._deadline
        if seconds > 0:
            when = time.monotonic() + seconds
            if saved[0] is None or when < saved[0]:
                self._deadline = (when, seconds, setting)
        try:
            yield
        finally:
            self._deadline = saved

    def mirrors_stale(self) -> bool:
        """True when a writing call of this pack failed in this transaction and its caller went on: its recorded
        changes were dropped and the mirrors reload after commit, so until then only the SQL is right."""
        return self.pack in self._frame.reload

    def reload_mirrors(self) -> None:
        """This call wrote rows that no recorded change describes (a bulk import): once it commits, this pack's
        mirrors load again from the store (until then this pack's reads should go to SQL)."""
        if not self.read_only:
            self._frame.reload.add(self.pack)

    def backup_after_commit(self, name: str) -> str:
        """Once this call has committed, copy the whole store file (checkpointed, under the runtime's lock, so the
        copy is consistent) to ``<database>.backups/<name>``; returns that path (ADR 0018)."""
        path = backup_path(self._runtime, name)
        self._frame.backup_to = str(path)
        return str(path)

    def erase_from_file(self) -> None:
        """This call deletes data that must not survive in the file's bytes (a forget): once the call has
        committed and its events are delivered, the runtime rewrites the store file (ADR 0018). A no-op for a
        read-only call or an in-memory store."""
        if not self.read_only:
            self._frame.erase = True

    def publish(self, event: str, payload: Any) -> None:
        """Publish one of this pack's declared events; subscribers get it once this call has ended well."""
        declared = self._runtime.catalog.packs[self.pack].events.get(event)
        if declared is None:
            raise InternalError(f"pack {self.pack!r} publishes {event!r}, which it does not declare",
                                verb=self.verb)
        if not isinstance(payload, declared):
            raise InternalError(f"event {self.pack}.{event} carries a {declared.__name__}, got "
                                f"{type(payload).__name__}", verb=self.verb)
        self._frame.events.append((f"{self.pack}.{event}", self.namespace, self.actor, payload))

    def now(self) -> datetime:
        """The runtime's clock (UTC, naive); tests inject their own."""
        return self._runtime.clock()

    def hook(self, name: str, **kwargs: Any) -> list[Any]:
        """Call a pack-defined pluggy hook (e.g. ``register_embedders``) and return all results."""
        return self._runtime._hook_results(name, **kwargs)

    def tunable(self, name: str, default: float) -> float:
        """The current value of one of this pack's tunables for this call: the actor's value in this namespace,
        else the namespace's, else ``default`` (values are set by, e.g., the brain pack)."""
        values = self._runtime._tunables
        if self.actor is not None:
            found = values.get((self.namespace, self.actor, self.pack, name))
            if found is not None:
                return found
        return values.get((self.namespace, NAMESPACE_LEVEL, self.pack, name), default)

    def set_tunable(self, target: str, value: float, *, actor: str | None = None) -> None:
        """Set another (or this) pack's declared tunable, ``"<pack>::<name>"``, for this namespace, or for one
        ``actor`` in it (the actor's value wins over the namespace's for calls made for that actor).

        The target pack must declare the tunable and the value must lie in its declared range; the change is
        written in this call's transaction and becomes visible to later calls once it commits.
        """
        self._runtime._set_tunable(self, target, value, actor)

    def clear_tunable(self, target: str, *, actor: str | None = None) -> None:
        """Remove a tunable's value for this namespace (or for one ``actor``), so the next level applies again:
        an actor falls back to the namespace's value, a namespace to the pack's config default."""
        self._runtime._set_tunable(self, target, None, actor)


def validate_params(spec: VerbSpec, params: dict[str, Any] | BaseModel | None, *, trusted: bool = False) -> BaseModel:
    """The params as the verb's model. ``trusted``: a model instance built by a pack for a nested call is taken
    as it is (the recall stages pass large column lists); anything from outside is checked."""
    if isinstance(params, spec.params_model):
        if not trusted:
            _refuse_hostile(spec, params.model_dump())
        return params
    if isinstance(params, BaseModel):
        params = params.model_dump(exclude_unset=True)
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParams(f"params must be a JSON object, got {type(params).__name__}", verb=spec.full_name)
    _refuse_hostile(spec, params)
    try:
        return spec.params_model.model_validate(params)
    except ValidationError as exc:
        raise from_validation_error(exc, verb=spec.full_name) from None
    except (ValueError, TypeError, OverflowError, ArithmeticError, RecursionError) as exc:
        # a validator that failed with something pydantic does not convert is still bad input, not a crash
        raise InvalidParams(f"invalid params: {type(exc).__name__}: {exc}", verb=spec.full_name,
                            details={"errors": [{"loc": [], "msg": str(exc), "type": type(exc).__name__}]}) from None


def _refuse_hostile(spec: VerbSpec, params: Any) -> None:
    problem = hostile_value(params)
    if problem is not None:
        loc, msg = problem
        raise InvalidParams(f"invalid params: {'.'.join(loc) or 'params'}: {msg}", verb=spec.full_name,
                            details={"errors": [{"loc": loc, "msg": msg, "type": "value_error"}]})


MAX_PARAMS_DEPTH = 64
INT64 = (-(2**63), 2**63 - 1)


def hostile_value(value: Any, *, max_depth: int = MAX_PARAMS_DEPTH) -> tuple[list[str], str] | None:
    """``(location, problem)`` of the first input no verb can store, found before any pack sees it (the MCP
    stdio reader checks whole messages with it too): JSON nested deeper than ``max_depth`` levels, strings with
    lone UTF-16 surrogates (not encodable as UTF-8, so not storable), integers beyond 64 bits, NaN and infinite
    numbers (which JSON cannot carry: a JSON property would come back as null); None when there is none."""
    return _hostile(value, [], 0, max_depth)


def _hostile(value: Any, loc: list[str], depth: int, max_depth: int) -> tuple[list[str], str] | None:
    if depth > max_depth:
        return loc, f"nested more than {max_depth} levels deep"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return loc, "text contains a lone surrogate (not valid Unicode text)"
    elif isinstance(value, bool):
        return None
    elif isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            return loc, "integer out of the 64-bit range"
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return loc, "number is NaN or infinite (JSON has neither; it would be stored as null)"
    elif isinstance(value, dict):
        for k, v in value.items():
            here = loc + [str(k)]
            found = _hostile(k, here, depth + 1, max_depth) or _hostile(v, here, depth + 1, max_depth)
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            found = _hostile(v, loc + [str(i)], depth + 1, max_depth)
            if found:
                return found
    return None


def check_namespace(namespace: str, verb: str) -> str:
    if not isinstance(namespace, str) or not NAMESPACE_RE.match(namespace):
        raise InvalidParams(
            f"namespace {namespace!r} must be 1-128 characters of letters, digits and _ . : @ -, "
            "starting with a letter or digit", verb=verb, details={"errors": [{"loc": ["namespace"]}]},
        )
    return namespace


def check_actor(actor: str | None, verb: str | None) -> str | None:
    """An actor names who a call is made for; it follows the namespace rules (so it is never ``"*"``)."""
    if actor is None:
        return None
    if not isinstance(actor, str) or not NAMESPACE_RE.match(actor):
        raise InvalidParams(
            f"actor {actor!r} must be 1-128 characters of letters, digits and _ . : @ -, "
            "starting with a letter or digit", verb=verb, details={"errors": [{"loc": ["actor"]}]},
        )
    return actor


class CoreDispatch:
    """The runtime's own implementation of the dispatch hook: it actually runs the handler."""

    def __init__(self, runtime: "Runtime") -> None:
        self._runtime = runtime

    @hookimpl(trylast=True)
    def palimpsest_dispatch(self, call: CallInfo) -> Any:
        spec = call.spec
        ctx = Context(self._runtime, spec.pack, spec.full_name, call.namespace, call._frame, call.depth, call.actor,
                      read_only=call._frame.read_only or not spec.writes)
        try:
            result = call.spec.handler(call.params, ctx)
        except PalimpsestError as exc:
            if exc.verb is None:
                exc.verb = call.verb
            raise
        except OSError as exc:  # the machine's (a full disk, a file it may not write), not the handler's: typed,
            # said in one line (issue 46: a close's snapshot write on a full disk printed a handler "crash")
            raise StorageError(f"{call.verb} could not write: {exc}", verb=call.verb,
                               details={"errno": exc.errno, "file": exc.filename}) from exc
        except Exception as exc:  # a handler bug: report it typed, keep the cause for the log
            logging.getLogger("palimpsest").exception("handler of %s crashed", call.verb)
            raise InternalError(f"{type(exc).__name__}: {exc}", verb=call.verb) from exc
        return validate_result(call.spec, result)


def validate_result(spec: VerbSpec, result: Any) -> BaseModel:
    if isinstance(result, spec.result_model):
        return result
    try:
        return spec.result_model.model_validate(result)
    except ValidationError as exc:
        raise InternalError(
            f"handler returned an invalid {spec.result_model.__name__}: {exc.errors()[0]['msg']}",
            verb=spec.full_name, details={"errors": exc.errors(include_url=False, include_input=False)},
        ) from None


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)

"""The pack model: ``Pack`` and the ``@pack.verb`` decorator that registers a handler as a dotted verb."""
from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from pydantic import BaseModel

from palimpsest_memory.runtime.errors import PackLoadError
from palimpsest_memory.runtime.events import Subscription
from palimpsest_memory.runtime.mirror import NoState

# A pack's migration file: NNN_title.sql (portable), or NNN_title.postgres.sql / .duckdb.sql replacing it on that
# backend (ADR 0016). The one definition: storage applies them, `pal check-pack` checks a pack's files by it.
MIGRATION_FILE = re.compile(r"^(\d{3,})_[a-z0-9_]+(?:\.(duckdb|postgres))?\.sql$")

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class Act(str, Enum):
    """The speech act of a verb. Only the runtime enforces it: assertive verbs run read-only."""

    ASSERTIVE = "assertive"  # reports state; cannot change the store
    COMMISSIVE = "commissive"  # commits a change
    DECLARATION = "declaration"  # changes state by declaring it (define a predicate, bind a profile)


class Visibility(str, Enum):
    PUBLIC = "public"
    SUBHANDLER = "subhandler"  # callable from its own pack; from outside only when asked with internal=True


@dataclass(frozen=True)
class VerbSpec:
    """One verb of the catalog: everything an adapter needs to expose it, nothing it could misuse."""

    pack: str
    name: str
    act: Act
    visibility: Visibility
    params_model: type[BaseModel]
    result_model: type[BaseModel]
    handler: Callable[..., Any] = field(repr=False, compare=False)
    doc: str = ""
    # many items in one call: the runtime pauses the cycle collector while its top-level call runs (ADR 0029)
    bulk: bool = False
    # erases what it selects for real (a forget), where every other write adds a version, an edge or a mark and
    # keeps the history: MCP's destructiveHint says so to a client (ADR 0033)
    erases: bool = False

    @property
    def full_name(self) -> str:
        return f"{self.pack}.{self.name}"

    @property
    def summary(self) -> str:
        """The docstring's first sentence on one line (catalogs, CLI command lists, OpenAPI): its first line
        stopped mid-sentence wherever the sentence wrapped (issue 42, bug 4)."""
        return first_sentence(self.doc)

    @property
    def writes(self) -> bool:
        return self.act is not Act.ASSERTIVE


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def first_sentence(doc: str) -> str:
    """The first sentence of a docstring's first paragraph, whitespace made single spaces (the whole paragraph when
    no sentence ends in it; an abbreviation such as "e.g." ends none)."""
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc else ""
    for end in _SENTENCE_END.finditer(paragraph):
        if not paragraph[:end.start()].lower().endswith(_ABBREVIATIONS):
            return paragraph[:end.start()]
    return paragraph


def _check_name(kind: str, name: str) -> None:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PackLoadError(f"{kind} name {name!r} must match {NAME_RE.pattern}")


class Pack:
    """A pack: a name, a version, the packs it requires, its verbs, settings, migrations, state, events, hooks.

    ``settings`` is a pydantic model validating the pack's ``[packs.<name>]`` config section; ``migrations``
    is a folder of numbered ``NNN_title.sql`` files run inside the pack's own DuckDB schema; ``hookspecs``
    is a module of pluggy hookspecs the pack adds for others to implement (e.g. ``register_embedders``);
    ``state`` is a class built once per runtime (no arguments) as ``ctx.state``, whose
    :class:`~palimpsest_memory.runtime.Mirror` attributes the runtime loads, feeds committed changes and closes;
    ``events`` maps the names of the events the pack publishes to their payload types (subscribers use
    ``@pack.subscribe("<pack>.<event>")``); ``portable`` says the pack has ``export_records`` / ``import_records`` verbs
    for ``pal export`` (ADR 0018); ``defaults`` is the pack's ``defaults.toml`` (beside its settings model): the values
    of its ``[packs.<name>]`` section that every other config layer overrides (ADR 0035).
    """

    def __init__(
        self,
        name: str,
        version: str,
        requires: list[str] | tuple[str, ...] = (),
        *,
        settings: type[BaseModel] | None = None,
        migrations: str | Path | None = None,
        hookspecs: ModuleType | None = None,
        tunables: dict[str, tuple[float, float]] | None = None,
        state: type | None = None,
        events: dict[str, type] | None = None,
        portable: bool = False,
        defaults: str | Path | None = None,
    ) -> None:
        _check_name("pack", name)
        for req in requires:
            _check_name("required pack", req)
        if name in requires:
            raise PackLoadError(f"pack {name!r} cannot require itself")
        self.name = name
        self.version = version
        self.requires = tuple(requires)
        self.settings = settings
        self.defaults = Path(defaults) if defaults is not None else None
        if self.defaults is not None and settings is None:
            raise PackLoadError(f"pack {name!r} ships defaults but declares no settings model to check them")
        self.migrations = Path(migrations) if migrations is not None else None
        self.hookspecs = hookspecs
        self.tunables = dict(tunables or {})
        self.state = state or NoState
        self.events: dict[str, type] = dict(events or {})
        for event in self.events:
            _check_name("event", event)
        # portable: the pack's data goes into `pal export` files through its export_records / import_records
        # sub-handlers (runtime/portable.register_portable, ADR 0018)
        self.portable = portable
        self.subscriptions: list[Subscription] = []
        self.verbs: dict[str, VerbSpec] = {}
        self.hook_objects: list[Any] = []

    def add_hooks(self, obj: Any) -> Any:
        """Register a module or object holding ``@hookimpl`` functions with this pack."""
        self.hook_objects.append(obj)
        return obj

    def __repr__(self) -> str:
        return f"Pack({self.name!r}, version={self.version!r}, requires={list(self.requires)!r})"

    def verb(
        self, name: str, *, act: Act | str, visibility: Visibility | str = Visibility.PUBLIC, bulk: bool = False,
        erases: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register ``handler(params: ParamsModel, ctx: Context) -> ResultModel`` as ``<pack>.<name>``.

        ``bulk=True`` declares a verb that takes many items in one call (a batch of notes, facts, records): the
        runtime pauses Python's cycle collector while its top-level call runs (``runtime/collector.py``).
        ``erases=True`` declares a writing verb that erases data for real instead of keeping its history (a
        forget); an assertive verb cannot erase.

        Fails at import time when the name is malformed, the act or visibility is unknown, a model is missing
        from the annotations, or the params model accepts unknown fields.
        """
        _check_name("verb", name)
        try:
            act_ = Act(act)
            vis_ = Visibility(visibility)
        except ValueError as exc:
            raise PackLoadError(f"{self.name}.{name}: {exc}") from None
        if erases and act_ is Act.ASSERTIVE:
            raise PackLoadError(f"{self.name}.{name}: an assertive verb cannot erase")

        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            params_model, result_model = _models_of(handler, f"{self.name}.{name}")
            if name in self.verbs:
                raise PackLoadError(f"pack {self.name!r} registers verb {name!r} twice")
            self.verbs[name] = VerbSpec(
                pack=self.name, name=name, act=act_, visibility=vis_, params_model=params_model,
                result_model=result_model, handler=handler, doc=inspect.getdoc(handler) or "", bulk=bool(bulk),
                erases=bool(erases),
            )
            return handler

        return register

    def subscribe(self, event: str, *,
                  namespace_lock: bool = True) -> Callable[[Callable[..., None]], Callable[..., None]]:
        """Run ``handler(payload, ctx)`` after each successful call that published ``event`` ("<pack>.<name>",
        declared by this pack or one it requires), in a write transaction of its own for the event's namespace
        and actor. The handler's failure is logged; it never fails the call that published the event.

        On a shared store the handler first takes its namespace's write lock, like any writing call (ADR 0016).
        ``namespace_lock=False`` is for a handler that only records changes nobody else reads back under that
        lock (an append such as the brain's serve record): it then never waits for the namespace's writers, so
        the call that published the event (a recall) does not either. Such a handler serialises what must be
        serialised itself, with ``ctx.serialise``."""
        pack_name, _, name = event.partition(".")
        _check_name("event pack", pack_name)
        _check_name("event", name)

        def register(handler: Callable[..., None]) -> Callable[..., None]:
            self.subscriptions.append(Subscription(self.name, event, handler, namespace_lock))
            return handler

        return register


def _models_of(handler: Callable[..., Any], full: str) -> tuple[type[BaseModel], type[BaseModel]]:
    try:
        hints = typing.get_type_hints(handler)
    except Exception as exc:  # an annotation that cannot be resolved is a pack bug worth naming
        raise PackLoadError(f"{full}: cannot resolve annotations: {exc}") from None
    params = [p for p in inspect.signature(handler).parameters.values()]
    if len(params) != 2:
        raise PackLoadError(f"{full}: a handler takes exactly (params, ctx), got {len(params)} parameters")
    p_model = hints.get(params[0].name)
    r_model = hints.get("return")
    for what, model in (("params", p_model), ("result", r_model)):
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise PackLoadError(f"{full}: the {what} annotation must be a pydantic model, got {model!r}")
    if p_model.model_config.get("extra") != "forbid":
        raise PackLoadError(f"{full}: params model {p_model.__name__} must forbid unknown fields (extra='forbid')")
    return p_model, r_model

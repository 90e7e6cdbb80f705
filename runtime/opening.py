"""Opening a runtime: the catalog and configuration (no database), then the store, its migrations and the mirrors.

The call path (``Runtime.call`` and what it runs under) is :mod:`palimpsest_memory.runtime.engine`; this module is
what happens once, before the first call. Closing is ``Runtime.close``: the mirrors flush, the store closes.
"""
from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from palimpsest_memory.runtime import changelog, compact, idempotency, storage
from palimpsest_memory.runtime.config import config_layers, load_config, origins, pack_default_layers, pack_settings
from palimpsest_memory.runtime.dispatch import CoreDispatch, check_namespace
from palimpsest_memory.runtime.errors import ConfigError
from palimpsest_memory.runtime.loader import discover, load_packs
from palimpsest_memory.runtime.pack import Pack
from palimpsest_memory.runtime.registry import Catalog
from palimpsest_memory.runtime.tunables import RUNTIME_OWNER

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

log = logging.getLogger("palimpsest")


def load_catalog(
    *, config: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
    packs: Iterable[Pack | Any] | None = None, discover_packs: bool | None = None,
) -> tuple[Catalog, dict[str, Any]]:
    """Load and check packs without opening a database: the catalog adapters are generated from.

    Returns the catalog and the effective configuration.
    """
    rt_cfg = load_config(config, env).get("runtime", {})  # which packs to load: the runtime's own keys
    use_discovery = (packs is None) if discover_packs is None else discover_packs
    sources, failures = discover() if use_discovery else ([], {})
    for obj in packs or ():
        name = obj.name if isinstance(obj, Pack) else getattr(getattr(obj, "pack", None), "name", repr(obj))
        sources = [s for s in sources if s[0] != name] + [(name, obj)]
    loaded = load_packs(sources, import_failures=failures, select=list(rt_cfg.get("packs") or []),
                        disable=list(rt_cfg.get("disabled") or []))
    for name, why in loaded.failed.items():
        log.warning("pack %s is not loaded: %s", name, why)
    unavailable = loaded.failed | {d: "disabled in config" for d in loaded.disabled}
    catalog = Catalog(loaded.packs, unavailable=unavailable, plugin_manager=loaded.plugin_manager)
    return catalog, load_config(config, env, packs=loaded.packs)  # the loaded packs' defaults beneath


def config_sources(*, env: Mapping[str, str] | None = None) -> list[tuple[str, Any, str]]:
    """Every effective setting of the installed packs and the runtime as ``(dotted key, value, where it came
    from)``: a pack's defaults, the runtime's default.toml, the user file or the environment (``pal config show``)."""
    catalog, cfg = load_catalog(env=env)
    layers = pack_default_layers(catalog.packs.values()) + config_layers(None, env)
    found = origins(layers)
    rows = []
    for key in sorted(found):
        value: Any = cfg
        for part in key.split("."):
            value = value[part]
        rows.append((key, value, found[key]))
    return rows


def boot(rt: "Runtime", path: str | Path | None, *, config: Mapping[str, Any] | None,
         packs: Iterable[Pack | Any] | None, discover_packs: bool | None, env: Mapping[str, str] | None) -> None:
    """Load ``rt``'s packs and configuration, then open (creating and migrating) its store and load its mirrors;
    on any failure what was opened is closed again (``Runtime.open`` has the arguments' meaning)."""
    rt.catalog, rt.config = load_catalog(config=config, env=env, packs=packs, discover_packs=discover_packs)
    rt_cfg = rt.config.get("runtime", {})
    rt.default_namespace = check_namespace(str(rt_cfg.get("default_namespace", "default")), "runtime")
    rt.deadline_seconds = float(rt_cfg["deadline_seconds"])
    rt.max_staleness_seconds = float(rt_cfg["max_staleness_seconds"])
    if not math.isfinite(rt.max_staleness_seconds) or rt.max_staleness_seconds < 0:
        raise ConfigError(f"config: runtime.max_staleness_seconds must be 0 (no bound) or a positive number of "
                          f"seconds, got {rt.max_staleness_seconds!r}",
                          details={"key": "runtime.max_staleness_seconds"})
    budget = float(rt_cfg.get("mirror_budget_mb", 0))
    if not math.isfinite(budget) or budget < 0:
        raise ConfigError(f"config: runtime.mirror_budget_mb must be 0 (no limit) or a positive number of MB, "
                          f"got {budget!r}", details={"key": "runtime.mirror_budget_mb"})
    rt.followers.budget = int(budget * 1024 * 1024)
    rt._pm = rt.catalog.plugin_manager
    rt._core = CoreDispatch(rt)
    rt._pm.register(rt._core, name="runtime-core")
    rt._loggers[RUNTIME_OWNER] = log
    rt._state[RUNTIME_OWNER] = None
    rt.followers.mirrors[RUNTIME_OWNER] = [("tunables", rt.tunables)]
    for pack in rt.catalog.packs.values():
        rt._settings[pack.name] = pack_settings(pack.name, pack.settings, rt.config)
        rt._state[pack.name] = state = pack.state()
        rt._loggers[pack.name] = logging.getLogger(f"palimpsest.{pack.name}")
        rt.followers.add_mirrors(pack.name, state)
        for sub in pack.subscriptions:
            rt.followers.add_subscription(sub)
    target = str(path if path is not None else rt_cfg.get("database", ":memory:"))
    store = rt.store = storage.open_store(target, checkpoint_threshold=rt_cfg.get("checkpoint_threshold"),
                                          env={**os.environ, **(env or {})})
    rt.path = store.location  # printable: an absolute path, or a URL without its credentials
    try:
        store.prepare(changelog.Codec(type(s).__module__.rpartition(".")[0] or type(s).__module__
                                      for s in rt._state.values() if s is not None),
                      float(rt_cfg["change_log_hours"]))
        idempotency.ensure_table(store.con)
        compact.ensure_table(store.con)
        if store.writable:  # a read-only role leaves the pruning to the others
            idempotency.prune(store.con, rt.clock(), float(rt_cfg["idempotency_hours"]))
        for pack in rt.catalog.packs.values():
            storage.migrate(store.con, pack.name, pack.migrations)
        compact.resume(rt)  # before any mirror reads the store: a rewrite reopens it
        rt.followers.load_all()
        rt._loaded = True
        store.seal()
        store.opened()
        store.follow(rt._wake, rt._idle)
        # with no tracing wrapper installed, a call goes straight to the handler: pluggy's hook machinery
        # costs more than a nested sub-handler's own work (a recall makes several)
        rt._traced = len(rt._pm.hook.palimpsest_dispatch.get_hookimpls()) > 1
    except BaseException:
        rt.close()
        raise

"""Pack discovery: entry points → import → checks → dependency order → pluggy registration → check_pending."""
from __future__ import annotations

import graphlib
import traceback
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Iterable

import pluggy

from palimpsest_memory.runtime import hookspecs
from palimpsest_memory.runtime.errors import PackLoadError
from palimpsest_memory.runtime.pack import Pack

ENTRY_POINT_GROUP = "palimpsest.packs"


@dataclass
class LoadedPacks:
    """The outcome of loading: packs in dependency order, the plugin manager, and what could not load and why."""

    packs: list[Pack]
    plugin_manager: pluggy.PluginManager
    failed: dict[str, str] = field(default_factory=dict)  # import failures and their dependents
    disabled: list[str] = field(default_factory=list)


def _as_pack(obj: Any, origin: str) -> tuple[Pack, list[Any]]:
    """An entry point may name a Pack or a module holding ``pack``; return it and its hook-holding objects."""
    if isinstance(obj, Pack):
        return obj, list(obj.hook_objects)
    if isinstance(obj, ModuleType) and isinstance(getattr(obj, "pack", None), Pack):
        return obj.pack, [obj, *obj.pack.hook_objects]
    raise PackLoadError(f"{origin} must name a palimpsest Pack or a module with a `pack` attribute, got {obj!r}")


def discover(group: str = ENTRY_POINT_GROUP) -> tuple[list[tuple[str, Any]], dict[str, str]]:
    """Import every entry point of the group. Returns ``[(entry point name, object)]`` and import failures."""
    found: list[tuple[str, Any]] = []
    failed: dict[str, str] = {}
    seen: set[str] = set()
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        if ep.name in seen:  # the same distribution seen twice on sys.path (editable + site) is not a clash
            continue
        seen.add(ep.name)
        try:
            found.append((ep.name, ep.load()))
        except Exception as exc:  # a broken third-party pack must not take the others down
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            failed[ep.name] = f"failed to import {ep.value}: {last}"
    return found, failed


def load_packs(
    sources: Iterable[tuple[str, Any]],
    *,
    import_failures: dict[str, str] | None = None,
    select: list[str] | None = None,
    disable: list[str] | None = None,
) -> LoadedPacks:
    """Check, order and register packs. ``sources`` are ``(declared name, Pack or module)`` pairs."""
    failed = dict(import_failures or {})
    disable = list(disable or [])
    packs: dict[str, tuple[Pack, list[Any]]] = {}
    for declared, obj in sources:
        pack, hook_objects = _as_pack(obj, f"entry point {declared!r}")
        if declared != pack.name:
            raise PackLoadError(
                f"entry point {declared!r} loads a pack named {pack.name!r}; the names must be equal",
                details={"entry_point": declared, "pack": pack.name},
            )
        if pack.name in packs:
            raise PackLoadError(f"two packs are named {pack.name!r}", details={"pack": pack.name})
        packs[pack.name] = (pack, hook_objects)

    wanted = set(select) if select else set(packs) | set(failed)
    for name in sorted(wanted - set(packs) - set(failed)):
        raise PackLoadError(f"pack {name!r} is selected in config but no such pack is installed",
                            details={"pack": name, "installed": sorted(packs)})
    wanted -= set(disable)

    # A pack whose requirement failed to import is reported and skipped; a requirement that is simply not
    # installed, or disabled while its dependent is wanted, is a boot error naming both packs.
    order = _toposort({n: packs[n][0].requires for n in wanted if n in packs})
    loaded: list[Pack] = []
    for name in order:
        if name not in wanted or name not in packs:
            continue
        pack = packs[name][0]
        for req in pack.requires:
            if req in failed:
                failed[name] = f"requires pack {req!r}, which is not available ({failed[req]})"
                break
            if req not in packs:
                raise PackLoadError(f"pack {name!r} requires pack {req!r}, which is not installed",
                                    details={"pack": name, "missing": req})
            if req not in wanted:
                raise PackLoadError(f"pack {name!r} requires pack {req!r}, which is disabled",
                                    details={"pack": name, "missing": req})
        else:
            loaded.append(pack)

    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for pack in loaded:
        if pack.hookspecs is not None:
            pm.add_hookspecs(pack.hookspecs)
    for pack in loaded:
        for i, obj in enumerate(packs[pack.name][1]):
            try:
                pm.register(obj, name=f"{pack.name}#{i}")
            except (pluggy.PluginValidationError, ValueError) as exc:
                raise PackLoadError(f"pack {pack.name!r} has an invalid hook: {exc}", details={"pack": pack.name})
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        owner = (pm.get_name(exc.plugin) or "?").split("#")[0]
        raise PackLoadError(f"pack {owner!r} implements an unknown hook: {exc}", details={"pack": owner}) from None
    return LoadedPacks(packs=loaded, plugin_manager=pm, failed={k: v for k, v in failed.items() if k in wanted},
                       disabled=sorted(set(disable) & (set(packs) | set(failed))))


def _toposort(graph: dict[str, tuple[str, ...]]) -> list[str]:
    sorter = graphlib.TopologicalSorter({n: set(reqs) for n, reqs in graph.items()})
    try:
        return list(sorter.static_order())
    except graphlib.CycleError as exc:
        cycle = list(exc.args[1]) if len(exc.args) > 1 else []
        raise PackLoadError(f"packs require each other in a cycle: {' -> '.join(cycle)}",
                            details={"cycle": cycle}) from None

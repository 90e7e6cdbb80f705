"""palimpsest's runtime: the public API for host apps, pack authors and adapters.

Everything importable from here is supported; anything else in ``runtime.*`` is internal.

The names load on first use (PEP 562), so ``import palimpsest_memory.runtime`` and ``from palimpsest_memory.runtime
import errors`` stay cheap: the ``pal`` command line answers ``--help`` without importing DuckDB, pydantic models or any
pack (issue 20, item 4).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

DISTRIBUTION = "palimpsest-memory"  # the name on PyPI (ADR 0023); the import package is palimpsest_memory


def _version() -> str:
    """The installed distribution's version (one source: pyproject.toml); a bare checkout reads pyproject.toml."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"

# public name -> the module that defines it
_WHERE = {
    "CallInfo": "palimpsest_memory.runtime.dispatch", "Context": "palimpsest_memory.runtime.dispatch",
    "hostile_value": "palimpsest_memory.runtime.dispatch",
    "Runtime": "palimpsest_memory.runtime.engine", "load_catalog": "palimpsest_memory.runtime.opening",
    "config_sources": "palimpsest_memory.runtime.opening",
    "PalimpsestError": "palimpsest_memory.runtime.errors",
    "hookimpl": "palimpsest_memory.runtime.hookspecs", "hookspec": "palimpsest_memory.runtime.hookspecs",
    "CompactAnswer": "palimpsest_memory.runtime.contributions", "HttpRoute": "palimpsest_memory.runtime.contributions",
    "McpTool": "palimpsest_memory.runtime.contributions", "WebPage": "palimpsest_memory.runtime.contributions",
    "Change": "palimpsest_memory.runtime.mirror", "Mirror": "palimpsest_memory.runtime.mirror",
    "Act": "palimpsest_memory.runtime.pack", "Pack": "palimpsest_memory.runtime.pack",
    "VerbSpec": "palimpsest_memory.runtime.pack", "Visibility": "palimpsest_memory.runtime.pack",
    "NamespacedParams": "palimpsest_memory.runtime.params", "Params": "palimpsest_memory.runtime.params",
    # the store seam (ADR 0031): what adapters and tools may know of a store without opening it
    "Store": "palimpsest_memory.runtime.storage", "describe_store": "palimpsest_memory.runtime.storage",
    "is_store_file": "palimpsest_memory.runtime.storage", "live_servers": "palimpsest_memory.runtime.storage",
    "restore_file": "palimpsest_memory.runtime.storage", "store_file_of": "palimpsest_memory.runtime.storage",
}

__all__ = [
    "Act", "CallInfo", "Change", "CompactAnswer", "Context", "HttpRoute", "McpTool", "Mirror", "NamespacedParams",
    "Pack", "PalimpsestError", "Params", "Runtime", "Store", "VerbSpec", "Visibility", "WebPage", "__version__",
    "config_sources", "describe_store", "errors", "hookimpl", "hookspec", "hostile_value", "is_store_file",
    "live_servers", "load_catalog", "restore_file", "store_file_of",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = value = _version()
        return value
    if name == "errors":
        return importlib.import_module("palimpsest_memory.runtime.errors")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    __version__: str
    from palimpsest_memory.runtime import errors
    from palimpsest_memory.runtime.contributions import CompactAnswer, HttpRoute, McpTool, WebPage
    from palimpsest_memory.runtime.dispatch import CallInfo, Context, hostile_value
    from palimpsest_memory.runtime.engine import Runtime
    from palimpsest_memory.runtime.opening import config_sources, load_catalog
    from palimpsest_memory.runtime.errors import PalimpsestError
    from palimpsest_memory.runtime.hookspecs import hookimpl, hookspec
    from palimpsest_memory.runtime.mirror import Change, Mirror
    from palimpsest_memory.runtime.pack import Act, Pack, VerbSpec, Visibility
    from palimpsest_memory.runtime.params import NamespacedParams, Params
    from palimpsest_memory.runtime.storage import (Store, describe_store, is_store_file, live_servers, restore_file,
                                                   store_file_of)

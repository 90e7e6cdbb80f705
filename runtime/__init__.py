"""palimpsest's runtime: the public API for host apps, pack authors and adapters.

Everything importable from here is supported; anything else in ``runtime.*`` is internal.

The names load on first use (PEP 562), so ``import runtime`` and ``from runtime import errors`` stay cheap: the
``pal`` command line answers ``--help`` without importing DuckDB, pydantic models or any pack (issue 20, item 4).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_WHERE = {
    "CallInfo": "runtime.dispatch", "Context": "runtime.dispatch",
    "Runtime": "runtime.engine", "load_catalog": "runtime.engine",
    "PalimpsestError": "runtime.errors",
    "hookimpl": "runtime.hookspecs", "hookspec": "runtime.hookspecs",
    "Change": "runtime.mirror", "Mirror": "runtime.mirror",
    "Act": "runtime.pack", "Pack": "runtime.pack", "VerbSpec": "runtime.pack", "Visibility": "runtime.pack",
    "NamespacedParams": "runtime.params", "Params": "runtime.params",
}

__all__ = [
    "Act", "CallInfo", "Change", "Context", "Mirror", "NamespacedParams", "Pack", "PalimpsestError", "Params",
    "Runtime", "VerbSpec", "Visibility", "errors", "hookimpl", "hookspec", "load_catalog",
]


def __getattr__(name: str) -> Any:
    if name == "errors":
        return importlib.import_module("runtime.errors")
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'runtime' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from runtime import errors
    from runtime.dispatch import CallInfo, Context
    from runtime.engine import Runtime, load_catalog
    from runtime.errors import PalimpsestError
    from runtime.hookspecs import hookimpl, hookspec
    from runtime.mirror import Change, Mirror
    from runtime.pack import Act, Pack, VerbSpec, Visibility
    from runtime.params import NamespacedParams, Params

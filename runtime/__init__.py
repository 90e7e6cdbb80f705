"""palimpsest's runtime: the public API for host apps, pack authors and adapters.

Everything importable from here is supported; anything else in ``runtime.*`` is internal.
"""
from runtime import errors
from runtime.dispatch import CallInfo, Context
from runtime.engine import Runtime, load_catalog
from runtime.errors import PalimpsestError
from runtime.hookspecs import hookimpl, hookspec
from runtime.mirror import Change, Mirror
from runtime.pack import Act, Pack, VerbSpec, Visibility
from runtime.params import NamespacedParams, Params

__all__ = [
    "Act", "CallInfo", "Change", "Context", "Mirror", "NamespacedParams", "Pack", "PalimpsestError", "Params",
    "Runtime", "VerbSpec", "Visibility", "errors", "hookimpl", "hookspec", "load_catalog",
]
__version__ = "0.1.0"

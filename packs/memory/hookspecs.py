"""Hooks the memory pack offers to other packs."""
from __future__ import annotations

from typing import Any

from palimpsest_memory.runtime import hookspec


@hookspec
def register_embedders() -> list[Any]:
    """Return embedders this pack offers, as ``EmbedderSpec(name, factory, multilingual)`` objects.

    ``factory()`` builds the model lazily (only when the configured embedder names it); the object it returns
    has ``name``, ``dim``, ``multilingual`` and ``embed(texts) -> float32 array`` with L2-normalised rows.
    Weights must come from an installed package: nothing may download at run time.
    """

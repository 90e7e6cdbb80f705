"""The kg pack: entry point ``kg = "packs.kg.pack:pack"``. Importing it registers every verb."""
from __future__ import annotations

from packs.kg import edges, entities, facts, forget, graph, portable, queries  # noqa: F401  (verb registration)
from packs.kg.core import pack

__all__ = ["pack"]

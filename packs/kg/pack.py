"""The kg pack: entry point ``kg = "packs.kg.pack:pack"``. Importing it registers every verb."""
from __future__ import annotations

from packs.kg import edges, entities, entity_timeline, facts, graph, overview, queries  # noqa: F401  (verbs)
from packs.kg.core import pack

__all__ = ["pack"]

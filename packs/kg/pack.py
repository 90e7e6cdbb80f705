"""The kg pack: entry point ``kg = "packs.kg.pack:pack"``. Importing it registers every verb."""
from __future__ import annotations

from packs.kg import (commands, edges, entities, entity_timeline, facts, forget, graph, overview,  # noqa: F401
                     portable, queries)
from packs.kg.core import pack

pack.add_hooks(commands)  # `pal kg history SUBJECT PREDICATE`

__all__ = ["pack"]

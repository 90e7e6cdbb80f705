"""The kg pack: entry point ``kg = "packs.kg.pack:pack"``. Importing it registers every verb."""
from __future__ import annotations

from packs.kg import commands, edges, entities, facts, graph, queries, stats  # noqa: F401  (verb registration)
from packs.kg.core import pack

pack.add_hooks(commands)  # `pal kg history SUBJECT PREDICATE`

__all__ = ["pack"]

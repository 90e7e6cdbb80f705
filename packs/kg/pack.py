"""The kg pack: entry point ``kg = "palimpsest_memory.packs.kg.pack:pack"``. Importing it registers every verb."""
from __future__ import annotations

from palimpsest_memory.packs.kg import (commands, edges, entities, entity_timeline, fact_reads,  # noqa: F401
                                        fact_writes, forget, graph, neighbourhood, overview, portable, views)
from palimpsest_memory.packs.kg.core import pack

pack.add_hooks(commands)  # `pal kg history SUBJECT PREDICATE`
pack.add_hooks(views)  # its MCP tools, HTTP route and web page (ADR 0035)

__all__ = ["pack"]

"""The memory pack: entry point ``memory = "palimpsest_memory.packs.memory.pack:pack"``. Importing it registers every
verb and hook.

Verb modules import :mod:`palimpsest_memory.packs.memory.core`, never this module.
"""
from __future__ import annotations

from palimpsest_memory.packs.memory import (admin, beliefs, browse, commands, explain, forget,  # noqa: F401
                                            graph, import_verbs, lifecycle, nodes, overview, portable, recall,
                                            remember, stages, update, views, walk)
from palimpsest_memory.packs.memory.mirrors import embedder_registry, graph_sync  # noqa: F401
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.settings import MemorySettings

pack.add_hooks(embedder_registry)  # the built-in embedders, registered like a third-party pack's
pack.add_hooks(commands)  # `pal memory ...` CLI commands
pack.add_hooks(nodes)  # kg asks which m:<note> nodes exist before it links them
pack.add_hooks(views)  # its MCP tools, HTTP routes and web pages (ADR 0035)

__all__ = ["MemorySettings", "pack"]

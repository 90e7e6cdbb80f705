"""The memory pack's per-runtime state: its mirrors of the store, driven by the runtime (ADR 0015).

Declaration order is load order: the embedders first (the index never embeds on load, but a verb may embed
as soon as the runtime is open), then the search index, then the graph.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from palimpsest_memory.packs.memory.mirrors.embedder_registry import Embedders
from palimpsest_memory.packs.memory.mirrors.graph import MemoryGraph
from palimpsest_memory.packs.memory.mirrors.index import IndexMirror


@dataclass
class MemoryState:
    embedders: Embedders = field(default_factory=Embedders)  # the models, and the query-embedding cache
    index: IndexMirror = field(default_factory=IndexMirror)  # notes, BM25 (with its snapshot), vectors
    graph: MemoryGraph = field(default_factory=MemoryGraph)  # note ↔ note edges and centrality
    # namespaces whose notes this process has seen all hashed (duplicates.backfill): every note written since
    # carries its hash (a remember hashes it, a palimpsest import's after-import step does), so one look suffices
    hashed: set[str] = field(default_factory=set)

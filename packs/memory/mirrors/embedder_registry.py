"""Embedder registry (filled by the ``register_embedders`` hook) and the cached query embedding.

The registry is part of the pack's state (``ctx.state.embedders``): the runtime builds it in ``load`` from the
hook and the settings. It mirrors no table, so a commit changes nothing in it; models are loaded on first use.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from palimpsest_memory.runtime import Context, errors, hookimpl
from palimpsest_memory.runtime.mirror import Change, Mirror


@dataclass(frozen=True)
class EmbedderSpec:
    name: str
    factory: Callable[[], Any]
    multilingual: bool = False
    note: str = ""


@hookimpl
def register_embedders() -> list[EmbedderSpec]:
    """The built-ins, registered exactly as a third-party pack would register its own."""
    from palimpsest_memory.packs.memory.engine import embedders as e

    return [
        EmbedderSpec("wordllama", e.WordLlamaEmbedder, note="fast: WordLlama l2_supercat 256-d (installed)"),
        EmbedderSpec("minilm", lambda: e.SentenceTransformerEmbedder("all-MiniLM-L6-v2"),
                     note="quality: all-MiniLM-L6-v2 (extra: palimpsest-memory[quality])"),
        EmbedderSpec("e5", e.E5SmallEmbedder, multilingual=True,
                     note="multilingual-e5-small 4-bit, 384-d, torch-free (extra: palimpsest-memory[e5]); ADR 0028"),
        EmbedderSpec("hashing", e.HashingEmbedder, note="deterministic hashing; for tests only"),
    ]


class Embedders(Mirror):
    """The embedders a runtime uses: built lazily, each once; query vectors cached (LRU)."""

    def __init__(self, specs: Sequence[EmbedderSpec] = (), cache_size: int = 0) -> None:
        self.specs = {s.name: s for s in specs}
        self._models: dict[str, Any] = {}
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_size = cache_size

    def load(self, ctx: Context) -> None:
        """The registered embedders (every pack's ``register_embedders``) and the cache size from settings.
        A model already built stays built if its name is still registered (weights are slow to load)."""
        self.specs = {s.name: s for group in ctx.hook("register_embedders") for s in group}
        self._models = {k: v for k, v in self._models.items() if k in self.specs}
        self._cache.clear()
        self._cache_size = ctx.settings.query_cache_size

    def apply(self, changes: Sequence[Change]) -> None:
        """Nothing stored changes an embedder: a query's vector depends on the model and the query only."""

    def digest(self) -> Any:
        return tuple(sorted(self.specs)), self._cache_size

    def get(self, name: str) -> Any:
        model = self._models.get(name)
        if model is None:
            spec = self.specs.get(name)
            if spec is None:
                raise errors.ConfigError(f"no embedder named {name!r}; registered: {sorted(self.specs)}")
            try:
                model = spec.factory()
            except Exception as exc:  # missing optional extra or weights: say which and how to fix it
                raise errors.ConfigError(f"embedder {name!r} is unavailable: {exc}") from None
            self._models[name] = model
        return model

    def embed(self, name: str, texts: list[str]) -> np.ndarray:
        return np.asarray(self.get(name).embed(texts), dtype=np.float32)

    def embed_queries(self, name: str, queries: list[str]) -> np.ndarray:
        """Queries through the model's query side (``embed_queries``) when it has one (an asymmetric model such as
        e5 prefixes queries and passages differently), else through ``embed`` like any text."""
        model = self.get(name)
        fn = getattr(model, "embed_queries", None) or model.embed
        return np.asarray(fn(queries), dtype=np.float32)

    def embed_query(self, name: str, query: str) -> np.ndarray:
        key = (name, query)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        vec = self.embed_queries(name, [query])[0]
        if self._cache_size:
            self._cache[key] = vec
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec

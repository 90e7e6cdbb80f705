"""The piece-by-piece ids (token_pieces.py) are the tokenizer's own ids, and the embedder's vectors do not depend on
which way the ids were found."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tokenizers import Tokenizer, normalizers

from palimpsest_memory.packs.memory.engine.embedders import WordLlamaEmbedder
from palimpsest_memory.packs.memory.engine.token_pieces import PieceIds


@pytest.fixture(scope="module")
def embedder():
    return WordLlamaEmbedder()


@pytest.fixture(scope="module")
def tokenizer(embedder):
    return embedder._model.tokenizer


def _tokenizer_ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False).ids


# spaces, runs of them, the mark itself, other white space, accents, CJK, emoji, digits, punctuation and the
# tokenizer's added tokens, which it splits out of the raw text before it normalises
_PARTS = st.sampled_from([" ", "  ", "\u2581", "\t", "\n", "a", "dog", "Dog", "s", "'s", ",", ".", "!", "é", "naïve",
                          "東京", "🙂", "1", "2023", "<s>", "</s>", "<unk>", "<", ">", "x" * 30, "\u00a0", "ﬁ"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.one_of(_PARTS, st.text(max_size=6)), max_size=25))
def test_the_pieces_ids_are_the_tokenizers_ids(tokenizer, parts):
    pieces = PieceIds.for_tokenizer(tokenizer)
    assert pieces is not None
    text = "".join(parts)
    assert pieces.ids(text) == _tokenizer_ids(tokenizer, text)
    assert pieces.ids(text) == _tokenizer_ids(tokenizer, text)  # again, from the cache


def test_the_cache_is_bounded_and_starting_over_changes_no_ids(tokenizer, monkeypatch):
    monkeypatch.setattr(PieceIds, "MAX_PIECES", 8)
    pieces = PieceIds.for_tokenizer(tokenizer)
    rng = np.random.default_rng(3)
    words = ["alpha", "beta", "gamma", "delta,", "epsilon.", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]
    for _ in range(60):
        text = " ".join(rng.choice(words, size=int(rng.integers(1, 12))))
        assert pieces.ids(text) == _tokenizer_ids(tokenizer, text)
        assert len(pieces) <= 8


def _altered(tokenizer, change):
    spec = json.loads(tokenizer.to_str())
    change(spec)
    return Tokenizer.from_str(json.dumps(spec))


def test_a_tokenizer_the_pieces_cannot_replay_is_refused(tokenizer):
    other = Tokenizer.from_str(tokenizer.to_str())
    other.normalizer = normalizers.Sequence([normalizers.Lowercase()])
    assert PieceIds.for_tokenizer(other) is None

    def crossing_token(spec):  # a token that holds a mark after a character: BPE could merge across a piece
        spec["model"]["vocab"]["s\u2581the"] = len(spec["model"]["vocab"])

    assert PieceIds.for_tokenizer(_altered(tokenizer, crossing_token)) is None

    def dropout(spec):
        spec["model"]["dropout"] = 0.1

    assert PieceIds.for_tokenizer(_altered(tokenizer, dropout)) is None
    assert PieceIds.for_tokenizer(Tokenizer.from_str(tokenizer.to_str())) is not None  # the copy itself is fine


def test_the_embedder_gives_the_same_vectors_without_the_pieces(embedder):
    texts = ["I adopted a puppy", "", "   ", "hello </s> world", "Café  au lait\tnaïve 東京 🙂", "word " * 300,
             "We  got\na new dog,, didn't we?"]
    ours = embedder.embed(texts)
    plain = WordLlamaEmbedder.__new__(WordLlamaEmbedder)
    plain.__dict__.update(embedder.__dict__, _pieces=None)  # the same model, every text asked of the tokenizer
    assert np.allclose(ours, plain.embed(texts), atol=1e-6, rtol=0)
    assert np.linalg.norm(ours[1]) == 0 and np.linalg.norm(ours[2]) > 0.99


def test_threads_sharing_one_cache_that_starts_over_get_the_tokenizers_ids(tokenizer, monkeypatch):
    # an HTTP server embeds on several threads at once: a cache emptied by one thread under another's lookups
    # must not change anyone's ids
    import threading

    monkeypatch.setattr(PieceIds, "MAX_PIECES", 16)
    pieces = PieceIds.for_tokenizer(tokenizer)
    rng = np.random.default_rng(11)
    vocab = [f"w{i}" for i in range(200)] + ["dog,", "Café", "東京", "naïve."]
    texts = [" ".join(rng.choice(vocab, size=12)) for _ in range(400)]
    wrong: list[str] = []

    def work(part):
        for t in part:
            if pieces.ids(t) != _tokenizer_ids(tokenizer, t):
                wrong.append(t)

    threads = [threading.Thread(target=work, args=(texts[i::4],)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not wrong and len(pieces) <= 16

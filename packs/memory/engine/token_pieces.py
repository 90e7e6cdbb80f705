"""A SentencePiece-style BPE tokenizer's ids, looked up piece by piece (issue 18, ADR 0025).

WordLlama's tokenizer (Llama 2's) has no pre-tokenizer: its normaliser prepends a word mark ("▁") and turns every
space into one, and BPE then runs over the whole text. So the library's own cache, which is keyed by pre-tokenized
word, never hits, and every note pays the whole merge loop (~40 µs for 150 characters here), on a thread pool the
graph's insert threads also need. But no token of that vocabulary holds a mark after another character, so no
merge ever joins a character to the mark that follows it: BPE never crosses the start of a run of marks. A text's
ids are therefore its pieces' ids (a piece: a run of marks and the characters up to the next mark), in order, and a
piece's ids can be computed once and kept. ``PieceIds.for_tokenizer`` checks those conditions on the tokenizer it
is given and returns ``None`` where one does not hold; the caller then asks the tokenizer for every text.
"""

from __future__ import annotations

import re

__all__ = ["PieceIds"]

_MARK = "\u2581"
_PIECE = re.compile(f"{_MARK}+[^{_MARK}]*")
# the normaliser this module replays: prepend a mark to a non-empty text, then every space becomes a mark
_NORMALIZER = f'Sequence(normalizers=[Prepend(prepend="{_MARK}"), Replace(pattern=String(" "), content="{_MARK}")])'


class PieceIds:
    """The ids ``tokenizer.encode(text, add_special_tokens=False)`` gives, from a bounded cache of pieces."""

    # Pieces kept: a piece is a word with its punctuation, so a corpus's pieces grow with its vocabulary; past this
    # many the cache starts over (~15 MB at most; a miss costs one BPE call on one piece, a few µs).
    MAX_PIECES = 65_536

    def __init__(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._bpe = tokenizer.model
        added = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content]
        # the tokenizer splits its added tokens ("<s>", "</s>", "<unk>") out of the raw text before normalising: a
        # text holding one goes to the tokenizer whole
        self._added = re.compile("|".join(map(re.escape, added))) if added else None
        self._ids: dict[str, tuple[int, ...]] = {}

    @classmethod
    def for_tokenizer(cls, tokenizer) -> PieceIds | None:
        """A ``PieceIds`` when piece-by-piece lookup gives the tokenizer's own ids, else ``None``."""
        from tokenizers.models import BPE

        model = tokenizer.model
        if repr(tokenizer.normalizer) != _NORMALIZER or tokenizer.pre_tokenizer is not None:
            return None
        if not isinstance(model, BPE) or model.dropout is not None:  # dropout: the same piece may split two ways
            return None
        if any(_MARK in token.lstrip(_MARK) for token in tokenizer.get_vocab(with_added_tokens=False)):
            return None  # a token that holds a mark after a character: BPE could merge across a piece's start
        return cls(tokenizer)

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self, text: str) -> list[int]:
        if not text:
            return []
        if self._added is not None and self._added.search(text):
            return self._tokenizer.encode(text, add_special_tokens=False).ids
        out: list[int] = []
        cache = self._ids
        for piece in _PIECE.findall(_MARK + text.replace(" ", _MARK)):
            got = cache.get(piece)
            if got is None:
                if len(cache) >= self.MAX_PIECES:
                    cache.clear()
                got = cache[piece] = tuple(t.id for t in self._bpe.tokenize(piece))
            out += got
        return out

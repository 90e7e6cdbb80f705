"""Tokenisation for the memory pack's full-text (BM25) leg.

Pure functions, no state besides a process-wide PyStemmer instance.

Rules
-----
* Text is NFKC-normalised and lower-cased.
* Non-CJK words are runs of Unicode letters/digits (an inner apostrophe is kept
  inside the word, a trailing possessive ``'s`` is dropped: ``Caroline's`` ->
  ``caroline``).  Words in :data:`STOPWORDS` are removed, the rest are stemmed
  with the Snowball English stemmer (PyStemmer).  Single characters are kept
  only when they are digits.
* CJK runs (Han, Hiragana, Katakana, Hangul) are not space-separated, so each
  run is emitted as overlapping character **bigrams** plus, for runs of
  length 1 or when ``cjk_unigrams`` is on, the single characters.  A run of one
  character is emitted as that character.  Bigrams make "東京タワー" match
  "東京に行った" on "東京" without any dictionary.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

# Bump when tokenize() would split, drop or stem any text differently: stored full-text index snapshots
# (packs/memory/engine/snapshot.py) carry it and are rebuilt when it changes.
TOKENIZER_VERSION = 1

__all__ = [
    "STOPWORDS",
    "cjk_ratio",
    "is_cjk_char",
    "has_content",
    "is_meaningless_query",
    "tokenize",
    "tokenize_query",
    "words",
]

# Written for this project: function words, auxiliaries, pronouns, question
# words and chat fillers that carry no topical signal in English notes.
STOPWORDS: frozenset[str] = frozenset(
    """
    a an the and or but nor so yet if then else than that this these those there here
    of to in on at by for with from into onto upon over under about above below off out up down
    as per via between among through during before after since until till while against without within
    is am are was were be been being do does did doing done have has had having
    will would shall should can could may might must ought
    i me my mine myself we us our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself they them their theirs themselves
    what which who whom whose when where why how whatever whoever whenever wherever
    all any both each either neither every few many more most much other some such same own
    no not only too very just also even still again ever
    s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn cant cannot
    im ive id youre youve youll hes shes its were theyre theyve weve dont doesnt didnt isnt arent wasnt werent
    oh ah um uh hmm yeah yes ok okay hey hi hello wow lol haha thanks thank
    get got gets getting go goes going gone went make made makes let lets
    really quite pretty lot lots kind sort thing things something anything nothing everything
    one ones like well now way wouldve couldve shouldve
    """.split()
)

_STEMMER = Stemmer.Stemmer("english")


def is_cjk_char(ch: str) -> bool:
    """True for Han ideographs, Hiragana, Katakana and Hangul syllables/jamo."""
    o = ord(ch)
    return (
        0x4E00 <= o <= 0x9FFF  # CJK unified ideographs
        or 0x3400 <= o <= 0x4DBF  # extension A
        or 0x20000 <= o <= 0x2FA1F  # extensions B..F, compatibility supplement
        or 0xF900 <= o <= 0xFAFF  # compatibility ideographs
        or 0x3040 <= o <= 0x30FF  # hiragana + katakana
        or 0x31F0 <= o <= 0x31FF  # katakana phonetic extensions
        or 0xAC00 <= o <= 0xD7AF  # hangul syllables
        or 0x1100 <= o <= 0x11FF  # hangul jamo
        or 0x3130 <= o <= 0x318F  # hangul compatibility jamo
    )


def cjk_ratio(text: str) -> float:
    """Fraction of the *non-space, non-punctuation* characters of ``text`` that are CJK.

    Returns 0.0 for an empty string or a string with no letters/digits.
    (A query more than ~15 % CJK should be routed to a multilingual embedder.)
    """
    total = 0
    cjk = 0
    for ch in text:
        if ch.isspace():
            continue
        cat = unicodedata.category(ch)
        if cat[0] not in "LN":
            continue
        total += 1
        if is_cjk_char(ch):
            cjk += 1
    return cjk / total if total else 0.0


# A "word" is a run of letters/digits with optional inner apostrophes; CJK is
# split off afterwards.  \w includes "_" which we do not want.
_WORD_RE = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)


_CJK_RUN_RE = re.compile(
    "([\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002fa1f\uf900-\ufaff\u3040-\u30ff\u31f0-\u31ff"
    "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+)")  # the ranges of is_cjk_char


def _split_cjk(word: str) -> list[tuple[bool, str]]:
    """Split a word into alternating (is_cjk, run) pieces (ASCII words skip the scan: the common case)."""
    if word.isascii():
        return [(False, word)]
    parts = _CJK_RUN_RE.split(word)  # odd positions are the CJK runs
    return [(i % 2 == 1, p) for i, p in enumerate(parts) if p]


def _cjk_tokens(run: str, unigrams: bool) -> list[str]:
    if len(run) == 1:
        return [run]
    toks = [run[i : i + 2] for i in range(len(run) - 1)]
    if unigrams:
        toks.extend(run)
    return toks


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def words(text: str) -> list[str]:
    """Lower-cased surface words (no stopword removal, no stemming); CJK runs kept whole."""
    text = unicodedata.normalize("NFKC", text).lower()
    return _WORD_RE.findall(text)


def _word_tokens(w: str, stopwords: bool, cjk_unigrams: bool) -> tuple[str, ...]:
    """The tokens one surface word yields (see module docstring)."""
    out: list[str] = []
    for is_cjk, piece in _split_cjk(w):
        if is_cjk:
            out.extend(_cjk_tokens(piece, cjk_unigrams))
            continue
        piece = piece.replace("’", "'")
        if piece.endswith("'s"):
            piece = piece[:-2]
        piece = piece.replace("'", "")
        if not piece:
            continue
        if stopwords and piece in STOPWORDS:
            continue
        if len(piece) == 1 and not piece.isdigit():
            continue
        out.append(_stem(piece))
    return tuple(out)


# surface word -> its tokens under the default options: words repeat (Zipf), so most are one dict look-up
_DEFAULT_WORDS: dict[str, tuple[str, ...]] = {}
_DEFAULT_WORDS_MAX = 65_536  # like _stem's cache: ~10 MB at most; Zipf puts most look-ups in the first few thousand


def tokenize(text: str, *, stopwords: bool = True, cjk_unigrams: bool = True) -> list[str]:
    """Tokens for BM25 (see module docstring). Order is preserved, duplicates kept."""
    out: list[str] = []
    if not (stopwords and cjk_unigrams):
        for w in words(text):
            out.extend(_word_tokens(w, stopwords, cjk_unigrams))
        return out
    cache = _DEFAULT_WORDS
    for w in words(text):
        toks = cache.get(w)
        if toks is None:
            toks = _word_tokens(w, True, True)
            if len(cache) >= _DEFAULT_WORDS_MAX:
                cache.clear()
            cache[w] = toks
        if toks:
            out.extend(toks)
    return out


def tokenize_query(text: str, max_terms: int = 16) -> list[str]:
    """Distinct query tokens in first-seen order, capped at ``max_terms``.

    The cap bounds query latency (each term is one postings scan) and keeps
    pasted paragraphs from turning into full scans.  CJK bigrams count toward
    the cap like any other term.
    """
    seen: dict[str, None] = {}
    for t in tokenize(text):
        if t not in seen:
            seen[t] = None
            if len(seen) >= max_terms:
                break
    return list(seen)


def has_content(q: str) -> bool:
    """Whether a query has anything to search with: at least one letter or digit (CJK counts)."""
    return any(unicodedata.category(ch)[0] in "LN" for ch in unicodedata.normalize("NFKC", q))


def is_meaningless_query(q: str) -> bool:
    """Refuse queries that cannot retrieve anything meaningful.

    A query is meaningless when ANY of these holds:

    1. it has fewer than 2 letter/digit characters in total (CJK characters
       count as letters, so "東京" is fine);
    2. all its letters/digits are one repeated character, case-insensitively
       ("aaaa", "AAAA a", "1111");
    3. it yields no BM25 token: nothing but stopwords, punctuation and single
       non-digit letters ("the of and", "?!", "a b c").
    """
    alnum = [ch.lower() for ch in unicodedata.normalize("NFKC", q) if unicodedata.category(ch)[0] in "LN"]
    if len(alnum) < 2:
        return True
    if len(set(alnum)) == 1:
        return True
    return not tokenize(q)

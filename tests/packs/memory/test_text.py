from hypothesis import given, strategies as st

from palimpsest_memory.packs.memory.engine.text import STOPWORDS, cjk_ratio, is_meaningless_query, tokenize, tokenize_query


def test_lowercase_stem_and_stopwords():
    toks = tokenize("The Kids were RUNNING to the adoption agencies")
    assert "the" not in toks and "were" not in toks
    assert toks == ["kid", "run", "adopt", "agenc"]


def test_possessive_and_apostrophes():
    assert tokenize("Caroline's painting") == tokenize("Caroline painting")
    assert tokenize("I don't know") == ["know"]  # "don't" is a stopword after apostrophe removal


def test_single_letters_dropped_digits_kept():
    assert tokenize("a b 7 x") == ["7"]
    assert "2023" in tokenize("May 2023")


def test_cjk_ratio():
    assert cjk_ratio("") == 0.0
    assert cjk_ratio("hello") == 0.0
    assert cjk_ratio("東京") == 1.0
    assert abs(cjk_ratio("ab東京") - 0.5) < 1e-9
    assert cjk_ratio("東京!!! ...") == 1.0  # punctuation and spaces ignored


def test_cjk_bigrams_match_without_spaces():
    doc = set(tokenize("我昨天去了東京塔"))
    q = set(tokenize("東京"))
    assert q and q <= doc
    assert "東京" in doc and "京塔" in doc
    # unrelated CJK shares nothing
    assert not (set(tokenize("大阪")) & doc)


def test_mixed_script_split():
    toks = tokenize("iPhone用户")
    assert "iphon" in toks and "用户" in toks


def test_tokenize_query_dedup_and_cap():
    assert tokenize_query("cat cat dog cat") == ["cat", "dog"]
    q = " ".join(f"word{i}" for i in range(40))
    assert len(tokenize_query(q, max_terms=16)) == 16


def test_meaningless_queries():
    for q in ["", " ", "a", "?!", "aaaa", "AAAA a", "1111", "the of and", "a b c", "to be or not to be"]:
        assert is_meaningless_query(q), q
    for q in ["cats", "ok go hiking", "東京", "2023", "Caroline adoption"]:
        assert not is_meaningless_query(q), q


def test_stopwords_are_lowercase_words():
    assert all(w == w.lower() and " " not in w for w in STOPWORDS)


@given(st.text(max_size=60))
def test_tokenize_total_and_lowercase(s):
    toks = tokenize(s)
    assert all(t and t == t.lower() for t in toks)
    assert 0.0 <= cjk_ratio(s) <= 1.0


def test_the_word_cache_gives_what_the_rules_give():
    """tokenize caches each surface word's tokens: the output must be the rules' own, cached or not."""
    from palimpsest_memory.packs.memory.engine import text
    samples = ["Caroline's café naïve it's 2023 the 1 a b", "東京タワーに行った ＡＢＣ",
               "Don’t stop; RUNNING runs ran", "x y z 7 8 9 q's", "Ünïcödé wörds and the words"]
    for s in samples:
        direct = [t for w in text.words(s) for t in text._word_tokens(w, True, True)]
        assert text.tokenize(s) == direct == text.tokenize(s)  # the second call is served from the cache
        assert text.tokenize(s, stopwords=False) == [t for w in text.words(s)
                                                      for t in text._word_tokens(w, False, True)]

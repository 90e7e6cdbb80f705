"""The detector skips texts none of whose words opens a key, and on ASCII text tries only the sizes of the keys a word
opens: the same hits as walking every word's span with every size."""
from hypothesis import given, settings, strategies as st

from palimpsest_memory.packs.kg.detect import _WORD, Detector, Hit
from palimpsest_memory.packs.kg.models import name_key

NAMES = ["Caroline", "New York", "New York City", "Mel B Brown", "a b c d e", "Straße Eins", "İstanbul", "Mel B",
         "ﬁsh market", "O'Neil", "east"]
KEYS = {name_key(n): (i, n, "thing") for i, n in enumerate(NAMES)}
PIECES = ["caroline", "CAROLINE", "new", "New York", "new york city", "city", "Brown", "a b", "c d e", "½", "NEW  york",
          "strasse eins", "STRASSE EINS", "straße", "istanbul", "i̇stanbul", "mel b", "fish market", "ﬁsh Market",
          "o'neil", "East", "the", "x", "ß", "İ"]


def walk(det: Detector, text: str) -> list[Hit]:  # the rule itself: every word's span, longest key first
    spans = [(m.start(), m.end(), m.group(0).casefold()) for m in _WORD.finditer(text)]
    hits, i = [], 0
    while i < len(spans):
        if spans[i][2] in det.first:
            for j in range(min(len(spans), i + det.max_words) - 1, i - 1, -1):
                key = name_key(text[spans[i][0]:spans[j][1]])
                if key in det.keys:
                    hits.append(Hit(spans[i][0], spans[j][1], key))
                    i = j
                    break
        i += 1
    return hits


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=8), st.sampled_from([" ", ", ", "-"]),
       st.sampled_from([1, 2, 4, 12]))
def test_prefilter_keeps_every_hit(parts, sep, max_words):
    det = Detector(KEYS, max_words=max_words)
    text = sep.join(parts)
    assert det._words(text) == walk(det, text)


def test_a_text_naming_no_entity_has_no_hits_and_one_that_does_has_them():
    det = Detector(KEYS, max_words=4)
    assert det.find("nothing to see here") == []
    assert [h.key for h in det.find("Caroline moved to NEW YORK")] == ["caroline", "new york"]

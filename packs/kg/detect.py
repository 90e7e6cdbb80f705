"""Entity detection in text: known names and aliases at word boundaries (CJK names by substring).

A :class:`Detector` is built from every name/alias key of a namespace and cached in the pack state under the
namespace's revision token (``kg.entity_revisions``), which every entity/alias write rewrites with a random
value inside its own transaction: a cached detector is reused only while the token it was built from is the
one this transaction sees, so rolled-back or concurrent changes can never leave a stale detector in use.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from packs.kg.models import name_key

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")


@dataclass
class Hit:
    start: int
    end: int
    key: str


class Detector:
    def __init__(self, keys: dict[str, tuple[int, str, str]], max_words: int) -> None:
        self.keys = keys  # key → (entity id, canonical name, kind)
        self.first: set[str] = set()
        self.max_words = 1
        special: list[str] = []
        for key in keys:
            words = _WORD.findall(key)
            plain = words and not _CJK.search(key) and key[0] == words[0][0] and key[-1] == words[-1][-1]
            if plain:
                self.first.add(words[0])
                self.max_words = max(self.max_words, min(len(words), max_words))
            else:
                special.append(key)
        self.special = _special_regex(sorted(special, key=len, reverse=True)) if special else None

    def find(self, text: str) -> list[Hit]:
        hits = self._words(text)
        if self.special is not None:
            taken = [(h.start, h.end) for h in hits]
            folded = text.casefold()
            if len(folded) == len(text):
                for m in self.special.finditer(folded):
                    if not any(s < m.end() and m.start() < e for s, e in taken):
                        hits.append(Hit(m.start(), m.end(), name_key(m.group(0))))
        hits.sort(key=lambda h: h.start)
        return hits

    def _words(self, text: str) -> list[Hit]:
        spans = [(m.start(), m.end(), m.group(0).casefold()) for m in _WORD.finditer(text)]
        hits: list[Hit] = []
        i, n = 0, len(spans)
        while i < n:
            if spans[i][2] not in self.first:
                i += 1
                continue
            for j in range(min(n, i + self.max_words) - 1, i - 1, -1):  # longest match first
                key = name_key(text[spans[i][0]:spans[j][1]])
                if key in self.keys:
                    hits.append(Hit(spans[i][0], spans[j][1], key))
                    i = j
                    break
            i += 1
        return hits


def _special_regex(keys: list[str]) -> re.Pattern[str]:
    parts = []
    for key in keys:
        body = r"\s+".join(re.escape(w) for w in key.split(" "))
        if _CJK.search(key):
            parts.append(body)  # no spaces between CJK words: match by substring
        else:
            lead = r"(?<!\w)" if re.match(r"\w", key) else ""
            tail = r"(?!\w)" if re.search(r"\w$", key) else ""
            parts.append(lead + body + tail)
    return re.compile("|".join(parts))

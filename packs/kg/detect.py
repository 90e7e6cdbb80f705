"""Entity detection in text: known names and aliases at word boundaries (CJK names by substring).

A :class:`Detector` is built from every name/alias key of a namespace. :class:`EntityDetectors` is the mirror
that holds them (adr/0014-kg-scale.md): per namespace used, the committed keys, updated by the committed
:class:`~palimpsest_memory.packs.kg.cache.KgChange` of every kg write, and the detector built from them when next
needed. A transaction whose own uncommitted kg writes changed entities or aliases detects with a detector built from SQL
for that call only, so a rolled-back change never reaches a kept detector.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.mirror import Change, Mirror

from palimpsest_memory.packs.kg.cache import WRITE, KgChange
from palimpsest_memory.packs.kg.models import name_key

EntityKeys = dict[str, tuple[int, str, str]]  # name key → (entity id, canonical name, kind)

_WORD = re.compile(r"\w+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")


@dataclass
class Hit:
    start: int
    end: int
    key: str


class Detector:
    def __init__(self, keys: EntityKeys, max_words: int) -> None:
        self.keys = keys  # key → (entity id, canonical name, kind)
        self.max_name_words = max_words
        self.first: set[str] = set()
        self.max_words = 1
        sizes: dict[str, set[int]] = {}  # first word → the word counts of the plain keys it opens (≤ max_words)
        special: list[str] = []
        for key in keys:
            words = _WORD.findall(key)
            plain = words and not _CJK.search(key) and key[0] == words[0][0] and key[-1] == words[-1][-1]
            if plain:
                self.first.add(words[0])
                self.max_words = max(self.max_words, min(len(words), max_words))
                if len(words) <= max_words:
                    sizes.setdefault(words[0], set()).add(len(words))
            else:
                special.append(key)
        self.sizes = {w: sorted(ks, reverse=True) for w, ks in sizes.items()}  # longest first
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
        # Most texts name no entity: when none of their words opens a key, skip the spans. For ASCII, lower-casing is
        # case-folding and leaves the words where they were; either way ``words[i]`` is the i-th span's word, folded.
        ascii_text = text.isascii()
        words = _WORD.findall(text.lower()) if ascii_text else [w.casefold() for w in _WORD.findall(text)]
        if self.first.isdisjoint(words):
            return []
        bounds = [m.span() for m in _WORD.finditer(text)]
        hits: list[Hit] = []
        i, n = 0, len(words)
        while i < n:
            word = words[i]
            if word not in self.first:
                i += 1
                continue
            # ASCII: a span of k words folds to a key of k words, so only the sizes of the keys this word opens can
            # match (most names are one or two words, the longest allowed twelve). Otherwise normalising may change
            # the word count ("½" is one word, NFKC's "1⁄2" two): every size, longest first.
            sizes = self.sizes.get(word, ()) if ascii_text else range(min(n - i, self.max_words), 0, -1)
            for k in sizes:
                if i + k > n:
                    continue
                j = i + k - 1
                key = name_key(text[bounds[i][0]:bounds[j][1]])
                if key in self.keys:
                    hits.append(Hit(bounds[i][0], bounds[j][1], key))
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


def load_entity_keys(ctx: Context, namespace: str) -> EntityKeys:
    return {k: (i, n, kd) for k, i, n, kd in ctx.db.query(
        "SELECT k.key, e.id, e.name, e.kind FROM kg.entity_keys k JOIN kg.entities e ON e.id = k.entity_id "
        "WHERE k.namespace = ?", [namespace])}


class EntityDetectors(Mirror):
    """The entity keys of every namespace detected in since the runtime opened, and their detectors."""

    def __init__(self, hold: Iterable[str] = ()) -> None:
        self.keys: dict[str, EntityKeys] = {ns: {} for ns in hold}  # hold: built by the next load (see FactCache)
        self.built: dict[str, Detector] = {}  # namespace → detector of its current keys (dropped when they change)

    def detector(self, ctx: Context) -> Detector:
        """The namespace's detector: the kept one, or one built from SQL when this transaction changed entities."""
        max_words = ctx.settings.detect_max_name_words
        if ctx.mirrors_stale() or any(ch.entities_changed for ch in ctx.uncommitted(WRITE)):
            return Detector(load_entity_keys(ctx, ctx.namespace), max_words)
        ns = ctx.namespace
        det = self.built.get(ns)
        if det is None or det.max_name_words != max_words:
            if ns not in self.keys:
                self.keys[ns] = load_entity_keys(ctx, ns)
            det = self.built[ns] = Detector(self.keys[ns], max_words)
        return det

    per_namespace = True

    def load(self, ctx: Context, namespace: str | None = None) -> None:
        """Load one namespace's keys (at its first call; ADR 0016); without one, reload the namespaces held."""
        for ns in [namespace] if namespace is not None else list(self.keys):
            self.built.pop(ns, None)
            self.keys[ns] = load_entity_keys(ctx, ns)

    def evict(self, namespace: str) -> None:
        self.keys.pop(namespace, None)
        self.built.pop(namespace, None)

    def size_bytes(self, namespace: str) -> int:
        return 2 * 150 * len(self.keys.get(namespace, ()))  # the keys, and the detector built from them

    def apply(self, changes: Sequence[Change]) -> None:
        for ch in changes:
            keys = self.keys.get(ch.namespace) if ch.kind == WRITE else None
            change: KgChange = ch.data
            if keys is None or not change.entities_changed:
                continue
            # copy before changing: a detector handed out earlier keeps the dict it was built from
            keys = self.keys[ch.namespace] = {} if change.cleared else dict(keys)
            for key in [k for k, v in keys.items() if v[0] in change.dropped]:
                del keys[key]
            keys.update(change.keys)
            if change.kinds:
                for key, (eid, name, kind) in keys.items():
                    if eid in change.kinds:
                        keys[key] = (eid, name, change.kinds[eid])
            self.built.pop(ch.namespace, None)

    def digest(self) -> Any:
        return {ns: sorted(keys.items()) for ns, keys in sorted(self.keys.items())}

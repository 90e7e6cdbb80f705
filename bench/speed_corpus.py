"""A benchmark corpus of distinct texts at any size, generated deterministically from LoCoMo's real turns.

Repeating LoCoMo's 2,760 turns to 100k or 1M notes (what ``bench/memory_perf.py`` does) gives every text ~36 or
~362 exact copies: an ANN index then finds a near-random subset of a tie-heavy top-200 and BM25's document
frequencies are those of 2,760 texts. This corpus keeps copy 0 verbatim (LoCoMo's questions still have their
answers in it) and rewrites every later copy of a turn with seeded substitutions:

- the conversation's two speakers get names built from syllables (seeded by copy and conversation);
- each word of four or more letters is, with probability ``SWAP``, replaced by a word drawn from the corpus's
  own vocabulary in proportion to its frequency (so term statistics keep LoCoMo's Zipf shape);
- numbers are shifted, and the turn's time moves by a whole number of days per copy.

Nothing of it is committed: it is rebuilt at bench time (~10 s per million notes) from ``../shared/data``.
The same size and seed always give the same notes (``tests/bench`` is not needed: ``digest`` prints a hash).
"""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"
SWAP = 0.35
WORD = re.compile(r"[A-Za-z]{4,}|\d+")
SYLLABLES = ("ka", "ri", "mo", "len", "sa", "tor", "vi", "da", "nel", "or", "bi", "ja", "mar", "lu", "pe", "zan",
             "e", "fi", "go", "rhea", "tam", "il", "co", "wen")


def _turns():
    import sys
    sys.path.insert(0, str(ROOT))
    from palimpsest_memory.packs.memory.importers.conversations import parse_locomo
    return parse_locomo(DATA)


def questions() -> list[str]:
    return [q["question"] for s in json.loads(DATA.read_text()) for q in s["qa"]]


def _name(rng: np.random.Generator) -> str:
    parts = rng.choice(len(SYLLABLES), size=int(rng.integers(2, 4)))
    return "".join(SYLLABLES[p] for p in parts).capitalize()


def distinct(size: int, seed: int = 0) -> tuple[list[dict], list[str]]:
    """``size`` notes (dicts for ``memory.remember_many``) and the speakers to register; copy 0 is LoCoMo."""
    convs = _turns()
    vocab = Counter(w.lower() for c in convs for t in c.turns for w in WORD.findall(t.text) if not w.isdigit())
    words = np.array(list(vocab))
    p = np.array(list(vocab.values()), dtype=np.float64)
    p /= p.sum()
    notes: list[dict] = []
    speakers: set[str] = set()
    copy = 0
    while len(notes) < size:
        for ci, c in enumerate(convs):
            rng = np.random.default_rng([seed, copy, ci])
            names = {s: (s if copy == 0 else _name(rng)) for s in c.speakers}
            speakers.update(names.values())
            shift = timedelta(days=17 * copy)
            # one draw per conversation copy: a pool of replacement words, consumed in order
            pool = words[rng.choice(len(words), size=4096, p=p)].tolist()
            coins = rng.random(4096).tolist()
            nums = rng.integers(1, 9, size=64).tolist()
            at = 0

            def swap(m: re.Match) -> str:
                nonlocal at
                at = (at + 1) % 4096
                w = m.group(0)
                if w.isdigit():
                    return str(int(w) + nums[at % 64])
                if coins[at] >= SWAP:
                    return w
                new = pool[at]
                return new.capitalize() if w[0].isupper() else new

            for t in c.turns:
                if len(notes) == size:
                    break
                text = t.text
                if copy:
                    for old, new in names.items():  # the speakers' names inside the text too
                        text = text.replace(old.split()[0], new)
                    text = WORD.sub(swap, text)
                who = names[t.speaker] if t.speaker in names else t.speaker
                content = f"{who}: {text}" + (f" [image: {t.caption}]" if t.caption else "")
                notes.append({"content": content, "occurred_at": (t.occurred_at + shift).isoformat(),
                              "scope": f"{c.scope}#{copy}", "thread": f"{t.thread}#{copy}"})
        copy += 1
    return notes, sorted(speakers)


def repeated(size: int) -> tuple[list[dict], list[str]]:
    """LoCoMo's turns copied verbatim until ``size`` (scope and thread renamed per copy): the old corpus, kept as a
    regression comparison only."""
    convs = _turns()
    notes, copy = [], 0
    while len(notes) < size:
        for c in convs:
            for t in c.turns:
                if len(notes) == size:
                    break
                notes.append({"content": t.content(), "occurred_at": t.occurred_at.isoformat(),
                              "scope": f"{c.scope}#{copy}", "thread": f"{t.thread}#{copy}"})
        copy += 1
    return notes, sorted({s for c in convs for s in c.speakers})


def digest(notes: list[dict]) -> str:
    h = hashlib.sha1()
    for n in notes:
        h.update(n["content"].encode())
    return h.hexdigest()[:12]


if __name__ == "__main__":
    import sys
    import time
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    t = time.perf_counter()
    notes, sp = distinct(n)
    dt = time.perf_counter() - t
    uniq = len({x["content"] for x in notes})
    print(f"{n} notes in {dt:.1f} s, {uniq} distinct ({uniq / n:.1%}), {len(sp)} speakers, digest {digest(notes)}")
    for x in notes[2760:2764] + notes[-2:]:
        print(" ", x["content"][:140])

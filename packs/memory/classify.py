"""A transparent, rule-based classifier for a note's ``kind`` (its "room").

Each kind has a list of cue patterns (whole words, case-insensitive). A note gets the kind with the most cue
hits; ties go to the kind listed first in ``CUES`` (decision > problem > milestone > preference > emotional);
no hit → ``None``. The cues are deliberately few and readable: a caller who knows better passes ``kind``.
"""
from __future__ import annotations

import re

CUES: dict[str, list[str]] = {
    "decision": [
        r"decided", r"decide", r"we chose", r"chose", r"choose", r"going with", r"go with", r"settled on",
        r"picked", r"opted", r"decision", r"agreed to", r"we will use", r"switch(?:ed|ing)? to", r"instead of",
    ],
    "problem": [
        r"bug", r"broken", r"breaks", r"crash(?:es|ed)?", r"fail(?:s|ed|ing|ure)?", r"error", r"issue",
        r"problem", r"outage", r"regression", r"doesn'?t work", r"stuck", r"blocked",
    ],
    "milestone": [
        r"shipped", r"launched", r"released", r"finished", r"completed", r"milestone", r"went live",
        r"deployed", r"merged", r"graduated", r"got the job", r"promoted", r"passed",
    ],
    "preference": [
        r"prefer(?:s|red)?", r"i like", r"i love", r"i hate", r"i dislike", r"favou?rite", r"rather",
        r"always use", r"never use", r"can'?t stand",
    ],
    "emotional": [
        r"feel(?:s|ing)?", r"felt", r"happy", r"sad", r"angry", r"excited", r"anxious", r"worried",
        r"proud", r"scared", r"upset", r"grateful", r"lonely", r"stressed", r"thrilled",
    ],
}
_PATTERNS = {kind: re.compile(r"\b(?:" + "|".join(cues) + r")\b", re.IGNORECASE) for kind, cues in CUES.items()}


def _literal(cue: str) -> str:
    """The cue's literal opening: a substring of every text the cue matches (lower-cased)."""
    out = ""
    for i, ch in enumerate(cue):
        if ch in "()[]?*+\\|.{" or cue[i + 1:i + 2] in ("?", "*"):
            break
        out += ch
    return out.lower()


# Per kind, the literal openings of its cues (lower-cased): an ASCII text that holds none of a kind's openings has no
# hit of that kind, so its scan is skipped - most notes skip all five, a note with a cue usually runs one. Only for
# ASCII text, where IGNORECASE is exactly lower-casing.
_OPENINGS = {kind: tuple(sorted({_literal(c) for c in cues})) for kind, cues in CUES.items()}


def classify(content: str) -> str | None:
    """The kind with the most cue hits in ``content``, or None."""
    kinds = _PATTERNS.items()
    if content.isascii():
        low = content.lower()
        kinds = [(kind, pattern) for kind, pattern in kinds if any(o in low for o in _OPENINGS[kind])]
    best, best_hits = None, 0
    for kind, pattern in kinds:
        hits = len(pattern.findall(content))
        if hits > best_hits:
            best, best_hits = kind, hits
    return best

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


# A text that holds none of these (lower-cased) matches no cue: most notes, which then skip the five scans. Only for
# ASCII text, where IGNORECASE is exactly lower-casing.
_OPENINGS = tuple(sorted({_literal(c) for cues in CUES.values() for c in cues}))


def classify(content: str) -> str | None:
    """The kind with the most cue hits in ``content``, or None."""
    if content.isascii():
        low = content.lower()
        if not any(o in low for o in _OPENINGS):
            return None
    best, best_hits = None, 0
    for kind, pattern in _PATTERNS.items():
        hits = len(pattern.findall(content))
        if hits > best_hits:
            best, best_hits = kind, hits
    return best

"""The kind classifier skips the scan of every kind whose cues' literal openings an ASCII text lacks: same kinds as the
five scans."""
from hypothesis import given, settings, strategies as st

from palimpsest_memory.packs.memory import classify as c


def scans(content: str) -> str | None:  # the rule itself: the kind with the most cue hits, ties to the first
    best, best_hits = None, 0
    for kind, pattern in c._PATTERNS.items():
        hits = len(pattern.findall(content))
        if hits > best_hits:
            best, best_hits = kind, hits
    return best


PIECES = ["we DECIDED", "Decide", "going with", "Switching to", "crashes", "doesnt work", "can't stand", "favourite",
          "favorite", "FEELING", "felt", "happy", "a bug", "debugger", "prefers", "the", "ſad", "ı like", "K",
          "passed", "went live", "stuck", "rather", "opted", "merged", "shipped", "issue", "x"]


# every cue, spelled in every way it matches, in any case
CUE_TEXTS = st.sampled_from([cue for cues in c.CUES.values() for cue in cues]).flatmap(
    lambda cue: st.from_regex(cue, fullmatch=True)).flatmap(
    lambda text: st.sampled_from([text, text.upper(), text.title()]))


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | CUE_TEXTS | st.text(max_size=8), max_size=8))
def test_prefilter_keeps_every_kind(parts):
    text = " ".join(parts)
    assert c.classify(text) == scans(text)


def test_examples():
    assert c.classify("We decided to go with Postgres") == "decision"
    assert c.classify("nothing to see here") is None
    assert c.classify("I FEEL HAPPY") == "emotional"

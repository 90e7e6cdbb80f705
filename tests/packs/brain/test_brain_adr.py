"""ADR 0010 is the brain's specification: its worked examples and constants are read from the text and checked
against the code and packs/brain/defaults.toml, so the two cannot drift apart."""
import re
from pathlib import Path

import pytest

from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.runtime.config import load_config

ROOT = Path(__file__).resolve().parents[3]
ADR = (ROOT / "adr" / "0010-brain.md").read_text(encoding="utf-8")
BRAIN = load_config(None, {"PALIMPSEST_CONFIG_DISABLED": "1"}, packs=[pack])["packs"]["brain"]
NUM = r"(−?-?[0-9]+(?:\.[0-9]+)?)"


def num(text: str) -> float:
    return float(text.replace("−", "-"))


def nums(text: str) -> list[float]:
    return [num(x) for x in re.findall(r"−?-?[0-9]+(?:\.[0-9]+)?", text)]


def test_the_credit_example_is_what_the_code_computes():
    line = re.search(r"- credit: (.*?)\n  (.*?)\n", ADR)
    assert line, "ADR 0010 lost its worked credit example"
    text = line.group(1) + " " + line.group(2)
    rel, sal, rec = (nums(m) for m in re.findall(r"\[(.*?)\]", text))
    w = nums(re.search(r"weights (.*?),\s*\n?\s*note", text).group(1))
    j = int(re.search(r"note (\d+)", text).group(1)) - 1
    g = nums(re.search(r"g = \((.*?)\)", text).group(1))
    got = post.credit({"relevance": rel, "effective_salience": sal, "recency": rec}, j,
                      dict(zip(post.COMPONENTS, w)))
    assert [got[c] for c in post.COMPONENTS] == pytest.approx(g, abs=1e-6)


def test_the_update_example_is_what_the_code_computes():
    m = re.search(r"- update: salience Beta\((.*?)\), (\w+), weight " + NUM + r", g = " + NUM + r" → y = " + NUM
                  + r", Δα = " + NUM + r", Δβ = " + NUM + r", Beta\((.*?)\),\s*mean " + NUM + r" → " + NUM, ADR)
    assert m, "ADR 0010 lost its worked update example"
    a, b = nums(m.group(1))
    signal, w, g = m.group(2), num(m.group(3)), num(m.group(4))
    state = {c: (a, b) for c in post.COMPONENTS}
    d = post.deltas({c: g for c in post.COMPONENTS}, signal, w, state)["salience"]
    assert d == pytest.approx((num(m.group(6)), num(m.group(7))))
    assert d[0] / w == pytest.approx(num(m.group(5)))
    new = post.apply(state, {c: d for c in post.COMPONENTS}, BRAIN["ess_cap"], BRAIN["min_count"])["salience"]
    assert new == pytest.approx(tuple(nums(m.group(8))))
    assert (a / (a + b), new[0] / sum(new)) == pytest.approx((num(m.group(9)), num(m.group(10))), abs=1e-6)


def test_the_adr_constants_are_the_configured_ones():
    assert num(re.search(r"# ess_cap = " + NUM, ADR).group(1)) == BRAIN["ess_cap"]
    assert num(re.search(r"# min_count = " + NUM, ADR).group(1)) == BRAIN["min_count"]
    assert num(re.search(r"`serve_flush_every` \(" + NUM + r"\)", ADR).group(1)) == BRAIN["serve_flush_every"]
    weights = re.search(r"Weight:\s*`correction` " + NUM + r", `explicit` " + NUM + r", `implicit` " + NUM, ADR)
    assert tuple(num(x) for x in weights.groups()) == tuple(BRAIN["weights"][k] for k in
                                                           ("correction", "explicit", "implicit"))
    for c, (a, b) in zip(post.COMPONENTS, re.findall(r"(?:relevance|salience|temporal) Beta\((\d+),\s*(\d+)\)",
                                                      ADR.split("## Decision")[1])[:3]):
        assert (float(a), float(b)) == (BRAIN["priors"][c]["alpha"], BRAIN["priors"][c]["beta"])
    assert BRAIN["credit"] == "relative" and '(the default)' in ADR.split('credit = "relative"')[1][:20]
    # the bound the unlearning property test checks is the one the ADR states
    unlearn = int(re.search(r"brought below 0.5 by\s+(\d+) explicit events", ADR).group(1))
    state = {c: (BRAIN["ess_cap"] - BRAIN["min_count"], BRAIN["min_count"]) for c in post.COMPONENTS}
    n = 0
    for n in range(1, 10 * unlearn + 1):  # bounded: a broken update that never unlearns fails, it does not hang
        d = post.deltas({c: 1.0 for c in post.COMPONENTS}, "not_useful", BRAIN["weights"]["explicit"], state)
        state = post.apply(state, d, BRAIN["ess_cap"], BRAIN["min_count"])
        if post.mean(state)["relevance"] < 0.5:
            break
    assert post.mean(state)["relevance"] < 0.5, f"still >= 0.5 after {n} events"
    assert n == unlearn

"""Two things a new user saw in the web view (issue 42): `/docs` glued two sentences ("...default to it. and an
optional...") and showed raw backticks (bug 5); the brain view's table said 3 events where its chart said 4
(bug 7: the table counts feedback since the profile's last init or reset, the chart's heading counted every event
of the log, the init included, and neither said so)."""
from __future__ import annotations

import re
from typing import Any


def test_docs_render_code_as_code_and_sentences_apart(page: Any) -> None:
    page.d.get(page.server.url + "/docs")
    page.wait(lambda d: len(page.css("details.docs-op")) > 40)
    # all the text, closed <details> included
    text = page.d.execute_script("return document.getElementById('docs').textContent")
    assert "`" not in text, re.findall(r".{40}`.{40}", text)[:5]
    intro = " ".join(p.text for p in page.css("#docs p.intro"))
    assert intro and not re.search(r"\. [a-z]", intro), intro  # every sentence starts anew
    codes = [c.text for c in page.css("#docs p.intro code")]
    assert "X-Palimpsest-Actor" in codes and "memory.recall" in codes, codes
    recall = page.css("details.docs-op[data-path='/v1/verbs/memory.recall']")[0]
    page.d.execute_script("arguments[0].open = true", recall)
    assert recall.find_elements("css selector", ".body code"), "the verb's description shows its code as code"


def test_brain_table_and_charts_count_the_same_feedback(page: Any) -> None:
    page.open("brain")
    page.wait(lambda d: len(page.css(".posterior-chart")) == 2)
    header = [th.text for th in page.css("#brain-profiles th")]
    assert "feedback since reset" in header and "events" not in header
    table = [int(td.text) for td in page.css("#brain-profiles .profile-row td.feedback-count")]
    headings = page.css("h3.profile-heading")
    charts = page.css(".posterior-chart")
    assert len(table) == len(headings) == len(charts) == 2
    for count, heading, chart in zip(table, headings, charts):
        kinds = [c.get_attribute("class").split()[-1] for c in chart.find_elements("css selector", "circle.event")]
        since = 0
        for kind in kinds:  # feedback after the newest init or reset, as brain.state counts it
            since = since + 1 if kind == "feedback" else 0
        events = int(heading.get_attribute("data-events"))
        assert count == since == int(heading.get_attribute("data-feedback")), (heading.text, kinds)
        assert f"{count} feedback since reset" in heading.text and f"{events} events in its log" in heading.text
        assert events == len(kinds) and events > count  # the log holds the init as well

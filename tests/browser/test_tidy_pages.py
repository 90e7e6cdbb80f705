"""The pages people tidy their memory in (issue 42, item 3), in a real Chromium against a real `pal serve` process
on each backend: the notes list (filters, paging), a note's page (versions; edit, archive, forget) and what a
refused write leaves behind (nothing). The store is checked through the server's API after each write."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from selenium.webdriver.common.keys import Keys

WRITES = {"memory.update", "memory.archive", "memory.forget"}


def _rows(page: Any) -> list[Any]:
    return page.css("#notes-table tbody tr")


def _summary(page: Any, start: str) -> str:
    return page.wait(lambda d: (t := page.css("#notes-summary")[0].text).startswith(start) and t)


def _outcome(page: Any, start: str) -> str:
    """The banner of the write that just happened (the page re-renders after it: wait for this write's)."""
    return page.wait(lambda d: (o := page.css("#write-outcome")) and o[0].text.startswith(start) and o[0].text)


def _fill(page: Any, name: str, value: str) -> None:
    box = page.css(f"#notes-form [name={name}]")[0]
    box.clear()
    box.send_keys(value)


def test_notes_list_filters_and_pages(tidy_page: Any) -> None:
    page, srv = tidy_page, tidy_page.server
    total = srv.call("memory.count")["count"]
    assert total == 32
    page.open("notes")
    _summary(page, f"1–25 of {total} notes")
    rows = _rows(page)
    assert len(rows) == 25 and rows[0].text.count("Note 31 of vega") == 1  # newest first
    assert "vega" in rows[0].text and "current" in rows[0].text and "plan" in rows[0].text
    page.shot("notes")
    page.css("#notes-next")[0].click()
    _summary(page, f"26–32 of {total}")
    assert [r.get_attribute("data-id") for r in _rows(page)][-1] == str(srv.data["ids"][0])
    assert not page.css("#notes-next")  # the last page
    page.css("#notes-prev")[0].click()
    _summary(page, "1–25")
    assert "Note 31" in _rows(page)[0].text
    # scope and kind: the orion decisions are the notes 0, 4, …, 28 (every one tagged urgent)
    _fill(page, "scope", "orion")
    page.css("#notes-form [name=kind] option[value=decision]")[0].click()
    page.css("#notes-form button")[0].click()
    _summary(page, "1–8 of 8")
    assert all("orion" in r.text and "urgent" in r.text for r in _rows(page))
    page.open("notes?tag=urgent")
    _summary(page, "1–8 of 8")
    page.open("notes?from=2026-03-03&to=2026-03-05")  # whole UTC days: the notes of days 2, 3 and 4
    _summary(page, "1–3 of 3")
    assert [r.text.split(" of ")[0][-7:] for r in _rows(page)] == ["Note 04", "Note 03", "Note 02"]
    page.open("notes?scope=nowhere")
    _summary(page, "no notes match")


def test_note_page_edit_archive_and_forget(tidy_page: Any) -> None:
    page, srv = tidy_page, tidy_page.server
    old = srv.data["ids"][5]
    page.open(f"note/{old}")
    page.wait(lambda d: page.css("#note-content"))
    assert page.css("#note-content")[0].text == "Note 05 of vega: step 5 of the plan, decided on day 5"
    assert "problem" in page.css("#note-meta")[0].text and len(page.css("#note-versions li")) == 1
    # edit: new text is a new version (memory.update supersedes); the page follows it and says what happened
    text = page.css("#edit-form textarea")[0]
    text.clear()
    text.send_keys("Note 05 of vega, corrected: step 5 moved to day 6")
    page.css("#edit-form button.write")[0].click()
    outcome = _outcome(page, "saved as a new version")
    new = srv.call("memory.get", {"ids": [old]})["notes"][0]["superseded_by"]
    assert new and f"note {new} supersedes note {old}" in outcome
    assert page.css("#note-content")[0].text.endswith("moved to day 6")
    assert [li.get_attribute("data-id") for li in page.css("#note-versions li")] == [str(old), str(new)]
    # archive
    page.css("#archive-form button.write")[0].click()
    assert _outcome(page, "archived") == f"archived note {new}"
    assert srv.call("memory.get", {"ids": [new]})["notes"][0]["archived_at"]
    assert "archived" in page.css("#note-meta")[0].text
    # forget asks first; a blank reason is refused by the verb, shown beside the form, and erases nothing
    assert page.css("#forget-form .confirm")[0].is_displayed() is False
    page.css("#forget-ask")[0].click()
    page.css("#forget-form textarea")[0].send_keys("   ")
    page.shot("note")
    page.css("#forget-confirm")[0].click()
    error = page.wait(lambda d: (e := page.css("#forget-form .write-error")) and e[0].is_displayed() and e[0].text)
    assert error.startswith("refused (invalid_params)") and "reason" in error
    assert srv.call("memory.get", {"ids": [new]})["missing"] == []
    page.css("#forget-form textarea")[0].send_keys(Keys.CONTROL, "a")
    page.css("#forget-form textarea")[0].send_keys("Ana asked for it to go")
    page.css("#forget-confirm")[0].click()
    _outcome(page, f"erased note {new} ")
    page.wait(lambda d: page.css("#tombstone"))
    assert "Ana asked for it to go" in page.css("#tombstone")[0].text
    assert srv.call("memory.get", {"ids": [new]})["missing"] == [new]
    stones = srv.call("memory.tombstones", {"ids": [new]})["tombstones"]
    assert [s["reason"] for s in stones] == ["Ana asked for it to go"]
    acts = srv.acts()
    called = set(page.verbs_called())
    assert WRITES <= called and {v for v in called if acts[v] != "assertive"} == WRITES


def test_an_unknown_note_says_so(tidy_page: Any) -> None:
    tidy_page.open("note/987654")
    assert tidy_page.wait(lambda d: (m := tidy_page.css("#note-absent")) and m[0].text) == \
        "note 987654 does not exist here"
    assert not tidy_page.css("#note-tidy")  # nothing to write to


def _post(url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=body if method == "POST" else None, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=60) as res:
            return res.status, json.loads(res.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


def test_refused_writes_leave_the_store_as_it_was(tidy: Any) -> None:
    """What the page's writes rely on: a cross-site page cannot make them (its Origin is refused, its preflight
    too; a body it could send without one, a form or text/plain, is not JSON to the API), and a bad write (no
    reason, an unknown note) is a clear error. After each, the note and the tombstones are unchanged."""
    note = tidy.data["ids"][9]
    before = (tidy.call("memory.get", {"ids": [note]}), tidy.call("memory.tombstones"))
    url = f"{tidy.url}/v1/verbs/memory.forget"
    forget = json.dumps({"ids": [note], "reason": "a cross-site page says so"}).encode()
    status, body = _post(url, forget, {"Content-Type": "application/json", "Origin": "https://evil.example"})
    assert (status, body["error"]["details"]["reason"]) == (403, "origin")
    status, _ = _post(url, b"", {"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
                      method="OPTIONS")
    assert status == 403  # the preflight a cross-site JSON write needs is refused too
    status, body = _post(url, f"ids={note}&reason=form".encode(),
                         {"Content-Type": "application/x-www-form-urlencoded"})
    assert (status, body["error"]["code"]) == (400, "invalid_params")
    status, body = _post(url, forget, {"Content-Type": "text/plain"})
    assert (status, body["error"]["code"]) == (400, "invalid_params")
    json_headers = {"Content-Type": "application/json"}
    status, body = _post(url, json.dumps({"ids": [note]}).encode(), json_headers)
    assert (status, body["error"]["code"]) == (400, "invalid_params") and "reason" in body["error"]["message"]
    status, body = _post(url, json.dumps({"ids": [note], "reason": ""}).encode(), json_headers)
    assert (status, body["error"]["code"]) == (400, "invalid_params")
    status, body = _post(url, json.dumps({"ids": [987654], "reason": "tidy"}).encode(), json_headers)
    assert (status, body["error"]["code"]) == (404, "not_found") and "987654" in body["error"]["message"]
    for verb, params in (("memory.update", {"id": 987654, "content": "x"}), ("memory.archive", {"ids": [987654]})):
        status, body = _post(f"{tidy.url}/v1/verbs/{verb}", json.dumps(params).encode(), json_headers)
        assert (status, body["error"]["code"]) == (404, "not_found"), body
    assert (tidy.call("memory.get", {"ids": [note]}), tidy.call("memory.tombstones")) == before


def test_retrievals_show_what_each_recall_returned_and_its_feedback(tidy_page: Any) -> None:
    page, srv = tidy_page, tidy_page.server
    recalls = srv.data["recalls"]
    page.open("retrievals")
    cards = page.wait(lambda d: len(c := page.css("#serves .serve")) == 2 and c)
    assert [c.get_attribute("data-recall") for c in cards] == [recalls["bo"], recalls["ada"]]  # newest first
    ada = cards[1]
    assert "for ada" in ada.text and "1 feedback" in ada.text
    served = ada.find_elements("css selector", "ol.served li")
    assert len(served) == 3 and "Note " in served[0].text  # the notes' text, read through memory.get
    assert served[0].find_elements("css selector", ".given.useful")  # the feedback sits on the note it was about
    assert not served[1].find_elements("css selector", ".given")
    gone = int(served[2].get_attribute("data-note"))
    page.shot("retrievals")
    page.css("#serves-form [name=actor]")[0].send_keys("bo")
    page.css("#serves-form button")[0].click()
    page.wait(lambda d: [c.get_attribute("data-recall") for c in page.css("#serves .serve")] == [recalls["bo"]])
    # forgetting a served note erases it from the ledger as well: the recall lists one note fewer
    srv.call("memory.forget", {"ids": [gone], "reason": "tidying the retrievals test"})
    page.open("retrievals?actor=ada")
    card = page.wait(lambda d: (c := page.css("#serves .serve")) and c[0])
    notes = [int(li.get_attribute("data-note")) for li in card.find_elements("css selector", "ol.served li")]
    assert len(notes) == 2 and gone not in notes
    assert {v for v in page.verbs_called()} <= {"brain.serves", "memory.get", "kg.namespaces", "memory.namespaces"}

"""An import is checked whole before its first write and is all or nothing once writing (issue 46, F5 and item 8).

Each test says which path it means and asserts that the path was reached: the check pass refuses a key repeated in
a later batch before a single batch is written; a failure after the first batch was written (injected, or the
store's own refusal of an id another namespace holds) rolls the batches already written back; in every case the
store is as before and the same import, retried once the cause is gone, succeeds. An import that committed batch
by batch fails these tests (the batches written before the failure would stay).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

from palimpsest_memory.runtime import errors, exportfile
from palimpsest_memory.runtime.portable import PAGE
from store_support import HASHING, snapshot

NOTES = PAGE + 500  # two batches of notes, then their vectors


@pytest.fixture
def exported(make_pal_runtime, tmp_path) -> Path:  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config=HASHING)
    rt.call("memory.remember_many", {"notes": [{"content": f"note {i} on the harbour wall"} for i in range(NOTES)]},
            namespace="src")
    path = tmp_path / "export.jsonl"
    with path.open("w", encoding="utf-8") as out:
        exportfile.export_namespace(rt, out, "src")
    return path


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class Spy:
    """Wraps the runtime's call_all so a test sees each batch the import wrote (and may fail the import right after
    one): the calls still go to the real store, in the import's own transaction."""

    def __init__(self, rt: Any, fail_after: Optional[int] = None) -> None:
        self.rt, self.fail_after, self.batches, self.seen_in_transaction = rt, fail_after, 0, None
        real: Callable[..., Any] = rt.call_all

        def call_all(body: Callable[..., Any], **kw: Any) -> Any:
            def spied(call: Callable[..., Any]) -> Any:
                def spy(verb: str, params: Any = None) -> Any:
                    res = call(verb, params)
                    if verb.endswith(".import_records") and (params or {}).get("records"):
                        self.batches += 1
                        if self.batches == self.fail_after:  # the batch is in the transaction: fail now
                            self.seen_in_transaction = call("memory.count", {}).count
                            raise errors.StorageError("injected: the disk filled after a batch was written")
                    return res
                return body(spy)
            return real(spied, **kw)

        rt.call_all = call_all

    def remove(self) -> None:
        del self.rt.call_all


def test_a_key_repeated_in_a_later_batch_is_refused_before_the_first_write(make_pal_runtime, exported, tmp_path):  # type: ignore[no-untyped-def]
    rows = records(exported)
    notes = [i for i, r in enumerate(rows) if r.get("type") == "note"]
    rows[notes[PAGE + 100]] = rows[notes[0]]  # note 1 again, in the second batch
    bad = write(tmp_path / "repeat.jsonl", rows)
    rt = make_pal_runtime(config=HASHING)
    before = snapshot(rt)
    spy = Spy(rt)
    with pytest.raises(errors.InvalidParams) as err:
        exportfile.import_file(rt, bad, "dst")
    assert f":{notes[PAGE + 100] + 1}:" in err.value.message and "repeats line 2" in err.value.message
    assert spy.batches == 0  # the check pass found it: no batch was written
    assert snapshot(rt) == before
    spy.remove()
    assert exportfile.import_file(rt, exported, "dst")["memory"]["note"] == NOTES  # the retry succeeds
    assert rt.call("memory.count", {}, namespace="dst").count == NOTES


def test_a_failure_after_the_first_batch_was_written_leaves_nothing(make_pal_runtime, exported):  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config=HASHING)
    before = snapshot(rt)
    spy = Spy(rt, fail_after=1)
    with pytest.raises(errors.StorageError, match="injected"):
        exportfile.import_file(rt, exported, "dst")
    assert spy.batches == 1 and spy.seen_in_transaction == PAGE  # reached: the first batch was in the store
    assert snapshot(rt) == before and rt.call("memory.count", {}, namespace="dst").count == 0
    assert not rt.call("memory.recall", {"query": "harbour wall"}, namespace="dst").results  # nor in the mirrors
    spy.remove()
    assert exportfile.import_file(rt, exported, "dst")["memory"]["note"] == NOTES  # the retry succeeds
    hits = rt.call("memory.recall", {"query": "note 2400 on the harbour wall", "limit": 1}, namespace="dst").results
    assert hits[0].note.content == "note 2400 on the harbour wall"


def test_an_id_the_store_holds_in_a_later_batch_rolls_the_written_batches_back(make_pal_runtime, exported, tmp_path):  # type: ignore[no-untyped-def]
    rows = records(exported)
    taken = PAGE + 100  # a note of the second batch: its id is used by another namespace of the target store
    one = [rows[0]] + [r for r in rows[1:-1] if r["data"].get("id") == taken and r["type"] == "note"
                       or r["type"] == "vector" and r["data"]["note_id"] == taken] + [{"end": True, "records": 2}]
    rt = make_pal_runtime(config=HASHING)
    exportfile.import_file(rt, write(tmp_path / "one.jsonl", one), "other")
    before = snapshot(rt)
    spy = Spy(rt)
    with pytest.raises(errors.Conflict, match=f"id {taken} is already used"):
        exportfile.import_file(rt, exported, "dst")
    assert spy.batches == 1  # reached: the first batch was written, the second refused by the store
    assert snapshot(rt) == before
    spy.remove()
    rt.call("memory.forget", {"ids": [taken], "reason": "make room"}, namespace="other")
    assert exportfile.import_file(rt, exported, "dst")["memory"]["note"] == NOTES  # the retry succeeds


BAD_HEADERS = [
    ("packs null", lambda h: {**h, "packs": None}, "packs must be an object"),
    ("packs a list", lambda h: {**h, "packs": ["memory"]}, "packs must be an object"),
    ("namespace a number", lambda h: {**h, "namespace": 7}, "namespace a string"),
]


@pytest.mark.parametrize("why, mangle, message", BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS])
def test_a_bad_header_is_invalid_params(make_pal_runtime, exported, tmp_path, why, mangle, message):  # type: ignore[no-untyped-def]
    rows = records(exported)
    rows[0] = mangle(rows[0])
    rt = make_pal_runtime(config=HASHING)
    before = snapshot(rt)
    with pytest.raises(errors.InvalidParams, match=message):
        exportfile.import_file(rt, write(tmp_path / "h.jsonl", rows), "dst")
    assert snapshot(rt) == before


@pytest.mark.parametrize("why", ["latin-1", "deep", "type"])
def test_a_bad_line_is_invalid_params_naming_it(make_pal_runtime, exported, tmp_path, why):  # type: ignore[no-untyped-def]
    lines = exported.read_bytes().splitlines(keepends=True)
    if why == "latin-1":
        lines[3] = lines[3].replace(b'"note 2 on', 'caf\u00e9 "note 2 on'.encode("latin-1"))
    elif why == "deep":
        lines[3] = b'{"pack": "memory", "type": "note", "data": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}\n"
    else:
        lines[3] = lines[3].replace(b'"type": "note"', b'"type": "nothing"')
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(lines))
    rt = make_pal_runtime(config=HASHING)
    before = snapshot(rt)
    with pytest.raises(errors.InvalidParams) as err:
        exportfile.import_file(rt, bad, "dst")
    assert ":4:" in err.value.message
    assert snapshot(rt) == before

"""An import is all or nothing (issue 16, item 2) and bad files are typed errors naming the line (item 7).

A file rejected at line N writes no note, entity, fact or edge — whether the parser, remember's limits or the
store (a key already used with other content) rejects it — and a good file imports fully.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from palimpsest_memory.packs.memory import import_verbs
from palimpsest_memory.packs.memory.commands import import_conversations
from palimpsest_memory.packs.memory.importers.conversations import Conversation, Turn, iter_jsonl, line_bound
from palimpsest_memory.runtime import errors

ROOT = Path(__file__).resolve().parents[3]
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
TABLES = ("memory.notes", "memory.vectors", "kg.entities", "kg.facts", "kg.edges")


def turn(i: int, speaker: str = "Ada", scope: str | None = None, text: str | None = None) -> dict:
    row = {"speaker": speaker, "text": text or f"turn number {i} about the harbour",
           "timestamp": f"2026-03-02T10:{i % 60:02d}:00", "thread": f"t{i // 100}"}
    return {**row, "scope": scope} if scope else row


def write_lines(path: Path, lines: list) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path


def counts(rt) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {t: rt.store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def import_file(rt, path: Path, **extra):  # type: ignore[no-untyped-def]
    return rt.call("memory.import_file", {"path": str(path), "format": "jsonl", **extra}, internal=True)


@pytest.fixture
def store(make_pal_runtime, tmp_path):  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config=HASHING)
    # something already there, so "nothing written" is measured against a non-empty store
    import_file(rt, write_lines(tmp_path / "before.jsonl", [turn(i, "Zed", "earlier") for i in range(3)]))
    return rt


BAD_AT_651 = [
    ("not json", "{oops", errors.InvalidParams),
    ("no speaker", {"text": "x", "timestamp": "2026-03-02T10:00:00"}, errors.InvalidParams),
    ("before year 1 in UTC", {**turn(0), "timestamp": "0001-01-01T00:00:00+05:00"}, errors.InvalidParams),
    ("scope too long", turn(0, scope="s" * 1001), errors.InvalidParams),  # its key is too long first
    ("content too long", turn(0, text="x" * 100_001), errors.LimitExceeded),
    ("thread too long", {**turn(0), "thread": "t" * 1001}, errors.LimitExceeded),
    ("lone surrogate", '{"speaker": "Bo", "text": "\\ud800", "timestamp": "2026-03-02T10:00:00"}',
     errors.InvalidParams),
    ("same id, other text", {**turn(0, scope="harbour", text="other"), "id": "L5"}, errors.Conflict),
]


@pytest.mark.parametrize("why, bad, exc", BAD_AT_651, ids=[b[0] for b in BAD_AT_651])
def test_a_file_rejected_at_line_651_writes_nothing(store, tmp_path, why, bad, exc):  # type: ignore[no-untyped-def]
    # 650 good turns (two batches' worth), two new speakers and a new scope before the bad line, more after it
    rows = [turn(i, "Ada" if i % 2 else "Bob", "harbour") for i in range(650)] + [bad] + [turn(651)]
    before = counts(store)
    with pytest.raises(exc) as err:
        import_file(store, write_lines(tmp_path / "bad.jsonl", rows))
    assert "line 651" in err.value.message and "nothing was imported" in err.value.message
    assert counts(store) == before
    assert not store.call("memory.recall", {"query": "harbour turn number"}).results or all(
        h.note.scope == "earlier" for h in store.call("memory.recall", {"query": "harbour turn number"}).results)


@pytest.fixture
def stored(monkeypatch) -> list[int]:  # type: ignore[no-untyped-def]
    """The size of each batch the import's write pass stored, in order (the real store_notes runs): a test about
    the write pass asserts it was reached, not refused earlier by the check pass (issue 46, item 8)."""
    real, seen = import_verbs.store_notes, []

    def counting(ctx, batch, **kw):  # type: ignore[no-untyped-def]
        out = real(ctx, batch, **kw)
        seen.append(len(batch))
        return out

    monkeypatch.setattr(import_verbs, "store_notes", counting)
    return seen


def test_a_key_already_stored_with_other_content_rolls_the_whole_import_back(store, tmp_path, stored):  # type: ignore[no-untyped-def]
    # passes validation (the file is consistent) but the store refuses it in the write pass, after 600 notes (ids
    # of their own: a line without one is turn L<n> of its file, and L1 would be the stored note's key at line 1)
    rows = [{**turn(i, scope="earlier"), "id": f"T{i}"} for i in range(3, 603)] + [
        {**turn(0, "Zed", "earlier", "new text"), "id": "L1"}]
    before = counts(store)
    with pytest.raises(errors.Conflict):
        import_file(store, write_lines(tmp_path / "clash.jsonl", rows))
    assert stored == [import_verbs.BATCH]  # reached: the first batch was written, the second refused by the store
    assert counts(store) == before
    res = import_file(store, write_lines(tmp_path / "fixed.jsonl", rows[:-1]))  # the retry, the clash removed
    assert res.created == 600 and counts(store)["memory.notes"] == before["memory.notes"] + 600


def test_a_locomo_file_refused_in_its_write_pass_leaves_nothing(store, tmp_path, stored):  # type: ignore[no-untyped-def]
    turns = [{"speaker": "Ann", "text": f"turn {i} about the harbour", "dia_id": f"D{i}"} for i in range(600)]
    turns.append({"speaker": "Ann", "text": "other text", "dia_id": "L1"})  # the key of a stored note: a clash
    sample = {"sample_id": "earlier", "conversation": {"speaker_a": "Ann", "speaker_b": "Ben",
                                                       "session_1_date_time": "1:56 pm on 8 May, 2023",
                                                       "session_1": turns}}
    path = tmp_path / "clash.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    before = counts(store)
    with pytest.raises(errors.Conflict):
        store.call("memory.import_file", {"path": str(path), "format": "locomo", "key_prefix": "jsonl"},
                   internal=True)
    assert stored == [import_verbs.BATCH]  # reached the write pass
    assert counts(store) == before
    sample["conversation"]["session_1"] = turns[:-1]
    path.write_text(json.dumps([sample]), encoding="utf-8")
    res = store.call("memory.import_file", {"path": str(path), "format": "locomo", "key_prefix": "jsonl"},
                     internal=True)
    assert res.created == 600


def test_a_good_file_imports_fully_and_a_rerun_adds_nothing(store, tmp_path):  # type: ignore[no-untyped-def]
    rows = [turn(i, "Ada" if i % 2 else "Bob", "harbour") for i in range(1200)]
    path = write_lines(tmp_path / "good.jsonl", rows)
    before = counts(store)
    res = import_file(store, path)
    assert (res.conversations, res.notes, res.created, res.replayed) == (1, 1200, 1200, 0)
    after = counts(store)
    assert after["memory.notes"] - before["memory.notes"] == 1200
    assert after["kg.entities"] - before["kg.entities"] == 3  # Ada, Bob, harbour
    assert after["kg.facts"] - before["kg.facts"] == 2  # each speaker participates_in harbour
    again = import_file(store, path)
    assert (again.created, again.replayed) == (0, 1200) and counts(store) == after
    hits = store.call("memory.recall", {"query": "turn number 1199", "limit": 3}).results
    assert hits[0].note.content == "Ada: turn number 1199 about the harbour"


def test_import_conversations_is_one_transaction_too(make_pal_runtime, stored):  # type: ignore[no-untyped-def]
    from datetime import datetime
    rt = make_pal_runtime(config=HASHING)
    good = Conversation("s1", ["Ann"], [Turn("Ann", f"hello {i}", datetime(2026, 1, 1), "a", f"D{i}") for i in range(700)])
    bad = Conversation("s2", ["Ben"], [Turn("Ben", "x" * 100_001, datetime(2026, 1, 1), "a", "D1")])
    before = counts(rt)
    with pytest.raises(errors.LimitExceeded):
        import_conversations(rt, [good, bad], "t", None)
    assert stored == [] and counts(rt) == before  # refused by the check pass, before any write
    import_conversations(rt, [Conversation("s0", ["Cy"], [Turn("Cy", "said once", datetime(2026, 1, 1), "a", "D9")])],
                         "t", None)
    before = counts(rt)
    clash = Conversation("s0", ["Cy"], [Turn("Cy", "said otherwise", datetime(2026, 1, 1), "a", "D9")])
    with pytest.raises(errors.Conflict):  # the stored key s0/D9 with other content: refused in the write pass
        import_conversations(rt, [good, clash], "t", None)
    assert stored == [1, import_verbs.BATCH]  # reached: the first 500 were written, the batch holding the clash refused
    assert counts(rt) == before
    res = import_conversations(rt, [good], "t", None)
    assert res["created"] == 700 and len(res["note_ids"]) == 700


def test_jsonl_is_read_line_by_line_with_a_bound(tmp_path):  # type: ignore[no-untyped-def]
    path = write_lines(tmp_path / "c.jsonl", [turn(1), "x" * 2000, turn(3)])
    lines = iter_jsonl(path, max_line_bytes=1000)
    assert next(lines)[0] == 1  # the first turn comes before the long line is read
    with pytest.raises(errors.InvalidParams) as err:
        next(lines)
    assert "line 2" in err.value.message and err.value.details["errors"][0]["loc"] == ["line", 2]
    exact = write_lines(tmp_path / "exact.jsonl", [json.dumps(turn(1)).ljust(1000)])
    assert [n for n, _, _ in iter_jsonl(exact, max_line_bytes=1000)] == [1]  # a line of exactly the bound is read
    assert line_bound(100_000) >= 6 * 100_000  # a note at the content limit, fully escaped, still fits


# -- through the CLI: typed errors, exit 2, never a traceback (item 7) --------------------------------------
def pal(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(tmp / "c.duckdb"),
               PALIMPSEST__packs__memory__embedder="hashing")
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", *args], capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=120)


def hostile_files(tmp: Path) -> dict[str, tuple[str, str, str]]:
    good = json.dumps(turn(1))
    deep = tmp / "deep.jsonl"
    deep.write_text(good + "\n" + '{"speaker": ' + "[" * 100_000 + "]" * 100_000 + "}\n", encoding="utf-8")
    latin = tmp / "latin1.jsonl"
    latin.write_bytes((good + "\n").encode() + json.dumps(turn(2, text="café"), ensure_ascii=False).encode("utf-8").replace(
        "é".encode(), "é".encode("latin-1")) + b"\n")
    long = tmp / "long.jsonl"
    long.write_text(good + "\n" + json.dumps(turn(2, text="y" * 700_000)) + "\n", encoding="utf-8")
    nested_locomo = tmp / "deep.json"
    nested_locomo.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    latin_locomo = tmp / "latin1.json"
    latin_locomo.write_bytes(b'[{"sample_id": "caf\xe9"}]')
    return {"deep line": ("jsonl", str(deep), "line 2"), "not UTF-8": ("jsonl", str(latin), "line 2"),
            "line too long": ("jsonl", str(long), "line 2"), "/dev/zero": ("jsonl", "/dev/zero", "line 1"),
            "a directory": ("jsonl", str(tmp), "cannot read"),
            "deep locomo": ("locomo", str(nested_locomo), "nested too deeply"),
            "locomo not UTF-8": ("locomo", str(latin_locomo), "not UTF-8"),
            "locomo /dev/zero": ("locomo", "/dev/zero", "larger than")}


@pytest.mark.parametrize("case", ["deep line", "not UTF-8", "line too long", "/dev/zero", "a directory",
                                  "deep locomo", "locomo not UTF-8", "locomo /dev/zero"])
def test_pal_import_of_a_hostile_file_is_invalid_params_naming_the_line(tmp_path, case):  # type: ignore[no-untyped-def]
    fmt, path, named = hostile_files(tmp_path)[case]
    if path == "/dev/zero" and not Path(path).exists():
        pytest.skip("no /dev/zero here")
    proc = pal(tmp_path, "import", fmt, path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    err = json.loads(proc.stdout or proc.stderr)["error"]
    assert err["code"] == "invalid_params" and named in err["message"], err
    con = duckdb.connect(str(tmp_path / "c.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM memory.notes").fetchone()[0] == 0  # the good line 1 too
    finally:
        con.close()


def test_openai_style_and_untimed_chat_lines_import_in_file_order(tmp_path):  # type: ignore[no-untyped-def]
    """Issue 17.4: `{"role", "content"}` messages (content as text or as parts) and `{"speaker", "text"}` lines
    without a time import; a line that is neither is invalid params naming the line, and nothing is written."""
    import json

    from palimpsest_memory.packs.memory.importers.conversations import parse_jsonl

    good = tmp_path / "chat.jsonl"
    good.write_text("\n".join(json.dumps(x) for x in [
        {"role": "system", "content": "You help plan the Orion launch."},
        {"role": "user", "content": [{"type": "text", "text": "When does Orion launch?"}, {"type": "image_url"}]},
        {"role": "assistant", "name": "planner", "content": "Orion launches in May."},
        {"speaker": "Ada", "text": "Noted: May it is."},
    ]) + "\n")
    (conv,) = parse_jsonl(good)
    assert [(t.speaker, t.text) for t in conv.turns] == [
        ("system", "You help plan the Orion launch."), ("user", "When does Orion launch?"),
        ("planner", "Orion launches in May."), ("Ada", "Noted: May it is.")]
    times = [t.occurred_at for t in conv.turns]
    assert times == sorted(times) and len(set(times)) == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + json.dumps({"role": "user"}) + "\n")
    with pytest.raises(errors.InvalidParams, match="line 5"):
        parse_jsonl(bad)

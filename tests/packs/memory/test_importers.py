"""Importers: LoCoMo dates, JSONL chat logs, `pal import jsonl` end to end, idempotent re-imports, LoCoMo."""
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from palimpsest_memory.packs.memory.commands import import_conversations
from palimpsest_memory.packs.memory.importers.conversations import parse_jsonl, parse_locomo, parse_locomo_date
from palimpsest_memory.runtime import errors

ROOT = Path(__file__).resolve().parents[3]
LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo-dev5.json"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}


# -- LoCoMo session dates ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
    ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
    ("12:30 pm on 1 January, 2024", datetime(2024, 1, 1, 12, 30)),
    ("11:59 PM on 31 December 2022", datetime(2022, 12, 31, 23, 59)),
    ("  9:05 am on 29 February, 2024 ", datetime(2024, 2, 29, 9, 5)),
    ("7:00 am on 2 june, 2023", datetime(2023, 6, 2, 7, 0)),
])
def test_parse_locomo_date(text, expected):
    assert parse_locomo_date(text) == expected


@pytest.mark.parametrize("text", [
    "", "yesterday", "1:56 pm on 8 Mayo, 2023", "1:56 on 8 May, 2023", "8 May 2023", "1:56 pm on May 8, 2023",
    "13:56 pm on 8 May, 2023", "0:15 am on 8 May, 2023", "1:75 pm on 8 May, 2023", "1:56 pm on 31 June, 2023",
    "1:56 pm on 29 February, 2023", "2023-05-08T13:56:00",
])
def test_bad_locomo_dates_are_invalid_params(text):
    with pytest.raises(errors.InvalidParams) as exc:
        parse_locomo_date(text)
    assert repr(text) in exc.value.message


# -- JSONL ------------------------------------------------------------------------------------------------
def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows) + "\n",
                    encoding="utf-8")
    return path


CHAT = [
    {"speaker": "Ada", "text": "We go with Postgres because the team already knows it.",
     "timestamp": "2026-03-02T10:15:00", "thread": "kickoff"},
    {"speaker": "Bob", "text": "Then the harbour office needs a new VPN before Friday.",
     "timestamp": "2026-03-02T10:16:00", "thread": "kickoff"},
    "",
    {"speaker": "Ada", "text": "Lunch at noon?", "timestamp": "2026-03-02T11:00:00+01:00", "scope": "misc",
     "id": "x9", "caption": "a sandwich"},
    {"speaker": "Cy", "text": "The ferry to Zanzibar was cancelled again.", "timestamp": "2026-03-03T08:00:00Z"},
]


def test_parse_jsonl_defaults_and_grouping(tmp_path):
    convs = parse_jsonl(write_jsonl(tmp_path / "team-chat.jsonl", CHAT))
    assert [c.scope for c in convs] == ["team-chat", "misc"]
    main, misc = convs
    assert main.speakers == ["Ada", "Bob", "Cy"] and misc.speakers == ["Ada"]
    assert [t.thread for t in main.turns] == ["kickoff", "kickoff", "main"]
    assert [t.turn_id for t in main.turns] == ["L1", "L2", "L4"]  # ids count turns, blank lines skipped
    assert main.turns[0].content() == "Ada: We go with Postgres because the team already knows it."
    assert main.turns[0].occurred_at == datetime(2026, 3, 2, 10, 15)
    assert main.turns[2].occurred_at == datetime(2026, 3, 3, 8, 0)  # "Z" is UTC
    (lunch,) = misc.turns
    assert lunch.turn_id == "x9"
    assert lunch.occurred_at == datetime(2026, 3, 2, 10, 0)  # converted to UTC, not just stripped
    assert lunch.content() == "Ada: Lunch at noon? [image: a sandwich]"
    notes = main.notes("jsonl")
    assert notes[0] == {"content": "Ada: We go with Postgres because the team already knows it.",
                        "occurred_at": "2026-03-02T10:15:00", "scope": "team-chat", "thread": "kickoff",
                        "source_id": "L1", "key": "jsonl:team-chat:L1"}


def test_parse_jsonl_scope_option_is_the_default_scope(tmp_path):
    convs = parse_jsonl(write_jsonl(tmp_path / "c.jsonl", CHAT), scope="orion")
    assert sorted(c.scope for c in convs) == ["misc", "orion"]


@pytest.mark.parametrize("bad", [
    "{not json",
    json.dumps({"text": "no speaker", "timestamp": "2026-03-02T10:00:00"}),
    json.dumps({"speaker": "Ada", "text": "   "}),  # (a line without a timestamp imports: the import's clock)
    json.dumps({"role": "user", "content": 42}),
    json.dumps({"speaker": "Ada", "text": "bad time", "timestamp": "next tuesday"}),
    json.dumps({"speaker": "Ada", "text": "numeric time", "timestamp": 1700000000}),
    json.dumps(["a", "list"]),
    json.dumps("a string"),
])
def test_a_bad_jsonl_line_is_invalid_params_naming_the_line(tmp_path, bad):
    rows = [CHAT[0], "", CHAT[1], bad, CHAT[4]]  # the bad one is physical line 4 (a blank line above it)
    with pytest.raises(errors.InvalidParams) as exc:
        parse_jsonl(write_jsonl(tmp_path / "bad.jsonl", rows))
    assert "line 4" in exc.value.message
    assert exc.value.details["errors"][0]["loc"] == ["line", 4]


def test_a_missing_file_is_invalid_params(tmp_path):
    with pytest.raises(errors.InvalidParams):
        parse_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(errors.InvalidParams):
        parse_locomo(tmp_path / "nope.json")


@pytest.mark.parametrize("data", [
    {"not": "a list"},
    [{"sample_id": "s1"}],  # no conversation
    [{"sample_id": "s1", "conversation": {"speaker_a": "A", "speaker_b": "B",
                                          "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}],
    [{"sample_id": "s1", "conversation": {"speaker_a": "A", "speaker_b": "B", "session_1_date_time": "soon",
                                          "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "hi"}]}}],
    [{"sample_id": "s1", "conversation": {"speaker_a": "A", "speaker_b": "B",
                                          "session_1_date_time": "1:56 pm on 8 May, 2023",
                                          "session_1": [{"speaker": "A", "text": "no dia_id"}]}}],
])
def test_malformed_locomo_files_are_invalid_params(tmp_path, data):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(errors.InvalidParams):
        parse_locomo(path)


def test_parse_locomo_small_file(tmp_path):
    data = [{"sample_id": "conv-x", "conversation": {
        "speaker_a": "Ann", "speaker_b": "Ben",
        "session_2_date_time": "9:00 am on 2 June, 2023",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "Back again."}],
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "Look at this!", "blip_caption": "a red boat"},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "Nice boat."}],
        "session_10_date_time": "10:00 am on 1 July, 2023",
        "session_10": [{"speaker": "Ann", "dia_id": "D10:1", "text": "Tenth."}],
    }}]
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    (conv,) = parse_locomo(path)
    assert conv.scope == "conv-x" and conv.speakers == ["Ann", "Ben"]
    assert [t.turn_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1", "D10:1"]  # sessions in numeric order
    assert [t.thread for t in conv.turns] == ["session_1", "session_1", "session_2", "session_10"]
    assert conv.turns[0].content() == "Ann: Look at this! [image: a red boat]"
    assert conv.turns[2].occurred_at == datetime(2023, 6, 2, 9, 0)


# -- importing into a runtime -----------------------------------------------------------------------------
def test_import_conversations_registers_speakers_and_is_idempotent(tmp_path, make_pal_runtime):
    rt = make_pal_runtime(config=HASHING)
    convs = parse_jsonl(write_jsonl(tmp_path / "team-chat.jsonl", CHAT))
    first = import_conversations(rt, convs, "jsonl", None)
    ids = first.pop("note_ids")
    assert first == {"conversations": 2, "created": 4, "replayed": 0, "seen_again": 0}
    assert list(ids) == ["team-chat/L1", "team-chat/L2", "team-chat/L4", "misc/x9"]
    again = import_conversations(rt, convs, "jsonl", None)
    assert again.pop("note_ids") == ids  # the replays return the stored notes
    assert again == {"conversations": 2, "created": 0, "replayed": 4, "seen_again": 0}
    assert rt.store.con.execute("SELECT count(*) FROM memory.notes").fetchone()[0] == 4
    people = {e.name for e in rt.call("kg.entities", {"kind": "person"}).entities}
    assert people == {"Ada", "Bob", "Cy"}
    hit = rt.call("memory.recall", {"query": "ferry Zanzibar"}).results[0].note
    assert (hit.content, hit.scope, hit.thread) == ("Cy: The ferry to Zanzibar was cancelled again.",
                                                    "team-chat", "main")
    # the speaker is a known entity now: the note mentions them
    edges = rt.call("kg.edges", {"node_id": f"m:{hit.id}", "direction": "out"}).edges
    cy = rt.call("kg.entity", {"name": "Cy"}).entity
    assert [(e.dst, e.relation) for e in edges] == [(cy.node_id, "mentions")]


def run_pal(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PALIMPSEST_CONFIG_DISABLED": "1"}
    for var in ("PALIMPSEST_DB", "PALIMPSEST_PACKS", "PALIMPSEST_DISABLE_PACKS", "PALIMPSEST_SERVER"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_pal_import_jsonl_end_to_end(tmp_path):
    db = tmp_path / "pal.duckdb"
    chat = write_jsonl(tmp_path / "team-chat.jsonl", CHAT)
    first = run_pal(db, "--json", "import", "jsonl", str(chat))
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"conversations": 2, "created": 4, "replayed": 0, "seen_again": 0}
    again = run_pal(db, "--json", "import", "jsonl", str(chat))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {"conversations": 2, "created": 0, "replayed": 4, "seen_again": 0}
    found = run_pal(db, "--json", "memory", "recall", "which database did we choose?")
    assert found.returncode == 0, found.stderr
    res = json.loads(found.stdout)
    assert res["embedder"] == "wordllama"  # the shipped default
    top = res["results"][0]["note"]
    assert top["content"] == "Ada: We go with Postgres because the team already knows it."
    assert (top["scope"], top["thread"], top["key"]) == ("team-chat", "kickoff", "jsonl:team-chat:L1")
    assert top["occurred_at"] == "2026-03-02T10:15:00Z"  # every output says UTC (issue 20)
    vpn = json.loads(run_pal(db, "--json", "memory", "recall", "VPN for the harbour office").stdout)
    assert vpn["results"][0]["note"]["content"].startswith("Bob: Then the harbour office needs a new VPN")


def test_pal_import_of_a_bad_file_fails_cleanly_and_imports_nothing(tmp_path):
    db = tmp_path / "pal.duckdb"
    bad = write_jsonl(tmp_path / "bad.jsonl", [CHAT[0], "{oops"])
    res = run_pal(db, "--json", "import", "jsonl", str(bad))
    assert res.returncode == 2, (res.stdout, res.stderr)  # invalid_params: a literal, as users' scripts see it
    err = json.loads(res.stdout or res.stderr)
    assert err["error"]["code"] == "invalid_params" and "line 2" in err["error"]["message"]
    assert "Traceback" not in res.stderr


# -- LoCoMo -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def locomo_first():
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo data not present at {LOCOMO} (kept outside the repo: non-commercial licence)")
    return parse_locomo(LOCOMO)[0], json.loads(LOCOMO.read_text(encoding="utf-8"))[0]


def test_locomo_first_conversation_imports_and_answers(make_pal_runtime, locomo_first):
    conv, raw = locomo_first
    rt = make_pal_runtime(config=HASHING)
    counts = import_conversations(rt, [conv], "locomo", None)
    note_ids = counts.pop("note_ids")
    n_turns = sum(len(v) for k, v in raw["conversation"].items()
                  if k.startswith("session_") and not k.endswith("date_time"))
    assert counts == {"conversations": 1, "created": n_turns, "replayed": 0, "seen_again": 0}
    assert len(note_ids) == n_turns
    row = rt.store.con.execute("SELECT content, scope, thread, occurred_at, key FROM memory.notes WHERE source_id = 'D1:1'"
                          ).fetchone()
    first_turn = raw["conversation"]["session_1"][0]
    assert row == (f"{first_turn['speaker']}: {first_turn['text']}", raw["sample_id"], "session_1",
                   parse_locomo_date(raw["conversation"]["session_1_date_time"]),
                   f"locomo:{raw['sample_id']}:D1:1")
    speakers = {raw["conversation"]["speaker_a"], raw["conversation"]["speaker_b"]}
    assert speakers <= {e.name for e in rt.call("kg.entities", {"kind": "person"}).entities}
    # a question's evidence turn is among the first ten results (BM25 alone finds these)
    answered = 0
    questions = [q for q in raw["qa"] if q.get("evidence") and q.get("category") in (1, 2, 4)][:10]
    for q in questions:
        got = {h.note.source_id for h in rt.call("memory.recall", {"query": q["question"]}).results}
        answered += bool(got & set(q["evidence"]))
    assert answered >= len(questions) // 2
    assert import_conversations(rt, [conv], "locomo", None)["created"] == 0

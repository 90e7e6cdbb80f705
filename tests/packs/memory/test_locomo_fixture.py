"""The LoCoMo parser and importer over a small original LoCoMo-format file that ships with the tests (issue 22,
item 8): the real data lives outside the repository, so without this the parser was exercised on real-shaped
data only where ``../shared/data`` exists. The fixture is made up (tests/fixtures/locomo/README.md)."""
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

from palimpsest_memory.packs.memory.commands import import_conversations
from palimpsest_memory.packs.memory.importers.conversations import parse_locomo

ROOT = Path(__file__).resolve().parents[3]
MINI = ROOT / "tests" / "fixtures" / "locomo" / "locomo-mini.json"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
TURNS_1 = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D2:1", "D2:2", "D2:3", "D3:1", "D3:2", "D10:1", "D10:2"]


def test_the_fixture_parses_to_the_expected_turns():
    one, two = parse_locomo(MINI)
    assert (one.scope, one.speakers) == ("mini-1", ["Ines", "Tomas"])
    assert (two.scope, two.speakers) == ("mini-2", ["Rafa", "June"])
    assert [t.turn_id for t in one.turns] == TURNS_1  # session 10 after 3: numeric, not string, order
    assert [t.thread for t in one.turns] == ["session_1"] * 5 + ["session_2"] * 3 + ["session_3"] * 2 + [
        "session_10"] * 2
    assert [t.occurred_at for t in one.turns[4:6]] == [datetime(2024, 3, 2, 18, 40), datetime(2024, 3, 14, 11, 15)]
    assert one.turns[-1].occurred_at == datetime(2024, 5, 11, 12, 20)  # 12:20 pm is noon, not midnight
    assert one.turns[2].content() == ("Ines: I planted purple carrots first, then a row of sugar snap peas. "
                                      "[image: a photo of a small raised garden bed]")
    assert one.turns[0].content() == "Ines: Tomas! Guess who finally got a plot at the community garden?"
    assert [t.turn_id for t in two.turns] == ["D1:1", "D1:2"]
    assert two.turns[0].occurred_at == datetime(2025, 1, 5, 9, 30)


def test_the_fixture_imports_and_its_questions_find_their_evidence(make_pal_runtime):
    convs = parse_locomo(MINI)
    rt = make_pal_runtime(config=HASHING)
    counts = import_conversations(rt, convs, "locomo", None)
    assert len(counts.pop("note_ids")) == 14
    assert counts == {"conversations": 2, "created": 14, "replayed": 0, "seen_again": 0}
    hits = rt.call("memory.recall", {"query": "sugar snap peas", "scope": "mini-1", "limit": 3}).results
    top = hits[0].note
    assert (top.source_id, top.scope, top.thread, top.key) == ("D1:3", "mini-1", "session_1", "locomo:mini-1:D1:3")
    assert top.occurred_at == datetime(2024, 3, 2, 18, 40)
    assert {"Ines", "Tomas", "Rafa", "June"} <= {e.name for e in rt.call("kg.entities", {"kind": "person"}).entities}
    raw = json.loads(MINI.read_text(encoding="utf-8"))
    for q in [q for s in raw for q in s["qa"] if q["category"] in (1, 2, 4)]:
        got = [h.note.source_id for h in rt.call("memory.recall", {"query": q["question"], "limit": 5}).results]
        assert set(got) & set(q["evidence"]), (q["question"], got)
    again = import_conversations(rt, convs, "locomo", None)
    assert (again["created"], again["replayed"]) == (0, 14)


def test_pal_import_locomo_end_to_end(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env["PALIMPSEST_CONFIG_DISABLED"] = "1"
    db = tmp_path / "pal.duckdb"
    res = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db), "--json", "import", "locomo",
                          str(MINI)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"conversations": 2, "created": 14, "replayed": 0, "seen_again": 0}, res.stdout

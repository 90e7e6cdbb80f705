"""ChatGPT and Claude.ai exports and Markdown folders import as notes (issue 42, item 5).

The fixtures under tests/fixtures/imports are written by hand in the shapes the services export today (no real
user data). Each import is all or nothing: a malformed record is an InvalidParams naming the file, the
conversation and the message (or the Markdown file), and the store is as it was; importing again adds nothing.
"""
from __future__ import annotations

import json
import os
import shutil
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

from palimpsest_memory.runtime import errors

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "imports"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}
TABLES = ("memory.notes", "kg.entities", "kg.facts", "kg.edges")


def counts(rt) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {t: rt.store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def imp(rt, fmt: str, path: Path | str, **extra):  # type: ignore[no-untyped-def]
    return rt.call("memory.import_file", {"path": str(path), "format": fmt, **extra}, internal=True)


def notes(rt, scope: str) -> list:  # type: ignore[no-untyped-def]
    return rt.call("memory.list", {"scope": scope, "order": "occurred_at", "limit": 100}).notes


@pytest.fixture
def rt(make_pal_runtime):  # type: ignore[no-untyped-def]
    return make_pal_runtime(config=HASHING)


# -- ChatGPT -------------------------------------------------------------------------------------------------
def test_chatgpt_export_imports_the_visible_branch_each_conversation_a_thread(rt):  # type: ignore[no-untyped-def]
    res = imp(rt, "chatgpt", FIXTURES / "chatgpt" / "conversations.json")
    assert (res.conversations, res.created, res.replayed, res.skipped) == (2, 7, 0, 3)  # system, tool, blank
    got = notes(rt, "chatgpt")
    assert [n.content for n in got] == [
        "user: Should Orion use Postgres or MongoDB for invoices?",
        "assistant: Postgres: invoices need strict transactions.",  # the branch shown, not the regenerated one
        "user: [image]\nHere is the schema diagram: does it hold up?",
        "assistant: ```python\nrows = count_invoices(schema)\n```",
        "assistant: The schema holds: 4211 invoices fit one partition.",
        "user: The harbour office needs a new VPN before the move.",
        "assistant: WireGuard is the simplest VPN to run there.",  # no create_time: the message before's
    ]
    assert {n.thread for n in got} == {"Orion database choice (6a1f0c2e)", "Harbour office VPN (7b2e1d3f)"}
    first = got[0]
    assert first.occurred_at == datetime(2026, 3, 2, 10, 0, 1)
    assert first.key == first.source_id == \
        "chatgpt:6a1f0c2e-1111-4c3b-9f00-0000000000aa:aaaa0000-0000-4000-8000-000000000002"
    assert {"user", "assistant"} <= {e.name for e in rt.call("kg.entities", {"kind": "person"}).entities}


def test_chatgpt_reimport_from_folder_or_zip_adds_nothing(rt, tmp_path):  # type: ignore[no-untyped-def]
    imp(rt, "chatgpt", FIXTURES / "chatgpt" / "conversations.json")
    before = counts(rt)
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(FIXTURES / "chatgpt" / "conversations.json", "conversations.json")
        z.writestr("chat.html", "<html></html>")
    for source in (FIXTURES / "chatgpt", archive):
        res = imp(rt, "chatgpt", source)
        assert (res.created, res.replayed) == (0, 7)
    assert counts(rt) == before
    # another scope: the keys (chatgpt:<conversation>:<message>) still say the notes are there
    assert imp(rt, "chatgpt", archive, scope="elsewhere").created == 0
    assert counts(rt)["memory.notes"] == before["memory.notes"] and not notes(rt, "elsewhere")


def chatgpt_data() -> list:
    return json.loads((FIXTURES / "chatgpt" / "conversations.json").read_text(encoding="utf-8"))


def _no_author(d: list) -> None:
    del d[0]["mapping"]["aaaa0000-0000-4000-8000-000000000007"]["message"]["author"]


def _bad_time(d: list) -> None:
    d[0]["mapping"]["aaaa0000-0000-4000-8000-000000000007"]["message"]["create_time"] = "yesterday"


def _cycle(d: list) -> None:
    d[1]["mapping"]["bbbb0000-0000-4000-8000-000000000000"]["parent"] = "bbbb0000-0000-4000-8000-000000000002"


def _lost_node(d: list) -> None:
    d[1]["current_node"] = "nowhere"


def _no_content_type(d: list) -> None:
    del d[1]["mapping"]["bbbb0000-0000-4000-8000-000000000002"]["message"]["content"]["content_type"]


CHATGPT_BAD = [
    ("no author", _no_author, ["conversation 0", "aaaa0000-0000-4000-8000-000000000007", "author"]),
    ("time not a number", _bad_time, ["conversation 0", "000000000007", "seconds since 1970"]),
    ("cycle", _cycle, ["conversation 1 (7b2e1d3f-2222-4d4c-8e11-0000000000bb)", "cycle"]),
    ("current_node missing", _lost_node, ["conversation 1", "'nowhere' is not in mapping"]),
    ("no content type", _no_content_type, ["conversation 1", "bbbb0000-0000-4000-8000-000000000002"]),
]


@pytest.mark.parametrize("why, spoil, named", CHATGPT_BAD, ids=[c[0] for c in CHATGPT_BAD])
def test_a_malformed_chatgpt_record_is_named_and_nothing_is_imported(rt, tmp_path, why, spoil, named):  # type: ignore[no-untyped-def]
    imp(rt, "claude", FIXTURES / "claude")  # something already there
    before = counts(rt)
    data = chatgpt_data()
    spoil(data)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(errors.InvalidParams) as err:
        imp(rt, "chatgpt", path)
    for part in named:
        assert part in err.value.message, err.value.message
    assert "nothing was imported" in err.value.message
    assert counts(rt) == before


@pytest.mark.parametrize("content, named", [
    ('{"title": "not a list"}', "JSON list of conversations"),
    ('[{"title": "x"', "is not JSON"),
    ('[{"title": "no id", "mapping": {}}]', "conversation 0 is not a ChatGPT conversation: it has no id"),
])
def test_a_file_that_is_not_a_chatgpt_export_is_invalid_params(rt, tmp_path, content, named):  # type: ignore[no-untyped-def]
    path = tmp_path / "conversations.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(errors.InvalidParams, match=named):
        imp(rt, "chatgpt", path)
    (tmp_path / "folder").mkdir()
    with pytest.raises(errors.InvalidParams, match="the folder holds no conversations.json"):
        imp(rt, "chatgpt", tmp_path / "folder")  # a folder that is no export
    with pytest.raises(errors.InvalidParams, match="cannot read export"):
        imp(rt, "claude", tmp_path / "missing.zip")


# -- Claude --------------------------------------------------------------------------------------------------
def test_claude_export_imports_text_not_thinking_or_tools(rt, tmp_path):  # type: ignore[no-untyped-def]
    res = imp(rt, "claude", FIXTURES / "claude" / "conversations.json")
    assert (res.conversations, res.created, res.skipped) == (2, 4, 1)
    got = notes(rt, "claude")
    assert [n.content for n in got] == [
        "user: When does the ferry to Zanzibar leave on Fridays?\n[attachment: timetable.pdf]",
        "assistant: On Fridays the ferry leaves at 7:00 and 15:30.",
        "user: Remind me: Ada prefers tea over coffee.\n[attachment: notes.txt]",
        "assistant: Noted: Ada prefers tea.",
    ]
    assert [n.thread for n in got] == ["Ferry timetable for Zanzibar (c1a2b3c4)"] * 2 + \
        ["c1a2b3c4-0000-4a00-9000-000000000002"] * 2  # an unnamed chat: its id
    assert got[1].occurred_at == datetime(2026, 3, 4, 9, 0, 9)
    archive = tmp_path / "data-2026-03-06.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(FIXTURES / "claude" / "conversations.json", "conversations.json")
        z.writestr("users.json", "[]")
    assert imp(rt, "claude", archive).replayed == 4


@pytest.mark.parametrize("field, value, named", [
    ("sender", "system", "sender 'system' is neither"),
    ("created_at", "last Tuesday", "Invalid isoformat"),
    ("uuid", None, "it has no uuid"),
])
def test_a_malformed_claude_message_is_named_and_nothing_is_imported(rt, tmp_path, field, value, named):  # type: ignore[no-untyped-def]
    imp(rt, "chatgpt", FIXTURES / "chatgpt")
    before = counts(rt)
    data = json.loads((FIXTURES / "claude" / "conversations.json").read_text(encoding="utf-8"))
    data[1]["chat_messages"][1][field] = value
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(errors.InvalidParams) as err:
        imp(rt, "claude", path)
    assert "conversation 1 (c1a2b3c4-0000-4a00-9000-000000000002) message" in err.value.message
    assert named in err.value.message and "nothing was imported" in err.value.message
    assert counts(rt) == before


# -- Markdown ------------------------------------------------------------------------------------------------
@pytest.fixture
def vault(tmp_path) -> Path:  # type: ignore[no-untyped-def]
    dst = tmp_path / "vault"
    shutil.copytree(FIXTURES / "vault", dst)
    os.utime(dst / "people" / "Ada.md", (1767261600, 1767261600))  # 2026-01-01 10:00 UTC: no date in the file
    return dst


def test_markdown_folder_imports_files_sections_tags_dates_and_links(rt, vault):  # type: ignore[no-untyped-def]
    res = imp(rt, "markdown", vault)
    assert (res.created, res.skipped, res.links, res.unresolved) == (6, 1, 4, 2)  # empty.md; Budget, diagram
    got = {n.source_id: n for n in notes(rt, "vault")}
    assert sorted(got) == ["Harbour office.md", "Harbour office.md#Furniture", "Harbour office.md#Lease",
                           "Harbour office.md#Network", "Orion.md", "people/Ada.md"]
    orion = got["Orion.md"]
    assert orion.tags == ["project", "db", "decision"] and orion.occurred_at == datetime(2026, 3, 1)
    assert orion.thread == "Orion" and orion.content.startswith("# Orion\n\nWe chose Postgres")
    net = got["Harbour office.md#Network"]
    assert net.content.startswith("## Network\n") and "# not a heading" in net.content  # code is not cut
    assert net.occurred_at == datetime(2026, 2, 20, 8, 30) and net.tags == ["office", "move"]
    assert got["people/Ada.md"].occurred_at == datetime(2026, 1, 1, 10, 0)  # the file's mtime

    def targets(note_id: int) -> set[int]:
        return {e.target_id for e in rt.call("memory.edges", {"memory_id": note_id, "direction": "out"}).edges}
    assert targets(orion.id) == {got["Harbour office.md"].id, net.id}  # [[Harbour office#Network]]: the section
    assert targets(got["people/Ada.md"].id) == {orion.id}  # through Orion's alias
    assert targets(net.id) == {got["people/Ada.md"].id}
    before = counts(rt)
    again = imp(rt, "markdown", vault)
    assert (again.created, again.replayed, again.links) == (0, 6, 4) and counts(rt) == before


@pytest.mark.parametrize("name, text, named", [
    ("bad date.md", "---\ndate: next week\n---\nbody", "bad date.md: the file front matter date"),
    ("bad kind.md", "---\nkind: whim\n---\nbody", "bad kind.md: kind"),
    ("not yaml.md", "---\njust words\n---\nbody", "not yaml.md: the file front matter line"),
])
def test_a_bad_markdown_file_is_named_and_nothing_is_imported(rt, vault, name, text, named):  # type: ignore[no-untyped-def]
    imp(rt, "chatgpt", FIXTURES / "chatgpt")
    before = counts(rt)
    (vault / "zz").mkdir()
    (vault / "zz" / name).write_text(text, encoding="utf-8")  # read last: every other file was fine
    with pytest.raises(errors.InvalidParams) as err:
        imp(rt, "markdown", vault)
    assert named in err.value.message and "nothing was imported" in err.value.message, err.value.message
    assert counts(rt) == before


def test_markdown_not_utf8_and_edited_files_are_refused_whole(rt, vault):  # type: ignore[no-untyped-def]
    (vault / "latin.md").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(errors.InvalidParams, match="latin.md: the file is not UTF-8"):
        imp(rt, "markdown", vault)
    (vault / "latin.md").unlink()
    imp(rt, "markdown", vault)
    before = counts(rt)
    orion = vault / "Orion.md"
    orion.write_text(orion.read_text(encoding="utf-8").replace("Postgres", "MySQL"), encoding="utf-8")
    (vault / "new.md").write_text("A new note.", encoding="utf-8")
    with pytest.raises(errors.Conflict, match="markdown:vault:Orion.md"):  # edited since: not stored twice
        imp(rt, "markdown", vault)
    assert counts(rt) == before  # not even new.md


def test_markdown_needs_a_folder(rt):  # type: ignore[no-untyped-def]
    with pytest.raises(errors.InvalidParams, match="is not a folder"):
        imp(rt, "markdown", FIXTURES / "chatgpt" / "conversations.json")


def test_front_matter_subset():  # type: ignore[no-untyped-def]
    from palimpsest_memory.packs.memory.importers.markdown import split_front_matter

    fm, body = split_front_matter('---\ntitle: "A \\"quoted\\" title"\ntags:\n  - a\n  - \'b c\'\n'
                                  'aliases: [x, "y"]\nnested:\n  deep: 1\n---\ntext')
    assert fm == {"title": 'A "quoted" title', "tags": ["a", "b c"], "aliases": ["x", "y"], "nested": None}
    assert body == "text"
    assert split_front_matter("---\nno end\n")[0] == {}  # a rule at the top, not front matter

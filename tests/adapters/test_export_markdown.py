"""`pal export markdown DIR` writes an Obsidian folder that `pal import markdown` reads back (issue 42, item 5),
and the new import formats work through the CLI as a real process: typed errors, exit codes, the store unchanged.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from palimpsest_memory.runtime import errors
from palimpsest_memory.runtime.adapters.export_markdown import export_markdown
from palimpsest_memory.runtime.adapters.serving import result_data

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "imports"
HASHING = {"packs": {"memory": {"embedder": "hashing"}}}


def caller(rt):  # type: ignore[no-untyped-def]
    return lambda verb, params: result_data(rt.call(verb, params))


def shape(rt) -> tuple[Counter, Counter]:  # type: ignore[no-untyped-def]
    """The live notes (what a note says and where it belongs) and their edges, ids left out."""
    notes = rt.call("memory.list", {"limit": 1000}).notes
    by_id = {n.id: n.content for n in notes}
    kept = Counter((n.content, n.scope, n.thread, tuple(n.tags), n.kind, n.memory_type, n.occurred_at, n.key)
                   for n in notes)
    edges = Counter((by_id[int(e.src[2:])], e.relation, by_id[int(e.dst[2:])])
                    for e in rt.call("kg.list_edges", {"node_prefix": "m:", "limit": 1000}).edges)
    return kept, edges


@pytest.fixture
def filled(make_pal_runtime, tmp_path):  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config=HASHING)
    vault = tmp_path / "vault"
    shutil.copytree(FIXTURES / "vault", vault)
    rt.call("memory.import_file", {"path": str(vault), "format": "markdown"}, internal=True)
    rt.call("memory.import_file", {"path": str(FIXTURES / "chatgpt"), "format": "chatgpt"}, internal=True)
    a = rt.call("memory.remember", {"content": "Orion's launch moved to June.", "scope": "orion",
                                    "tags": ["launch", "a, b"], "kind": "milestone", "memory_type": "semantic"}).note
    b = rt.call("memory.remember", {"content": "The supplier was late.", "scope": "orion"}).note
    rt.call("memory.remember", {"content": "A note of no scope, no thread."})
    rt.call("memory.link", {"source_id": b.id, "target_id": a.id, "relation": "supports"})
    rt.call("kg.assert_fact", {"subject": "Orion", "predicate": "uses_database", "object": "Postgres",
                               "object_kind": "technology", "valid_from": "2026-03-01"})
    return rt


def test_markdown_export_round_trips_notes_and_edges(filled, make_pal_runtime, tmp_path):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    counts = export_markdown(caller(filled), str(out), False, filled.store.owns_file)
    notes, edges = shape(filled)
    assert counts["notes"] == sum(notes.values()) == len(list((out / "notes").rglob("*.md")))
    assert counts["edges"] == sum(edges.values()) >= 5  # the vault's 4 links and `supports`
    orion = (out / "entities" / "orion.md").read_text(encoding="utf-8")
    assert "palimpsest: entity" in orion and "- uses_database:: [[postgres|Postgres]] (2026-03-01 → …)" in orion
    launch = next((out / "notes" / "orion").glob("orion-s-launch-moved-to-june-*.md")).read_text(encoding="utf-8")
    assert launch.startswith("---\nid: ") and 'scope: "orion"' in launch and "kind: milestone" in launch
    assert '  - "a, b"' in launch and launch.endswith("---\nOrion's launch moved to June.\n")
    other = make_pal_runtime(config=HASHING)
    res = other.call("memory.import_file", {"path": str(out), "format": "markdown"}, internal=True)
    assert res.skipped == counts["entities"]  # the kg's pages are not notes
    back_notes, back_edges = shape(other)
    # keys: a note that had one keeps it; one without gets the folder's (markdown:<scope>:<file>)
    assert Counter({k[:-1]: v for k, v in back_notes.items()}) == Counter({k[:-1]: v for k, v in notes.items()})
    assert back_edges == edges


def test_markdown_export_refuses_a_full_folder_and_the_stores_own(make_pal_runtime, tmp_path):  # type: ignore[no-untyped-def]
    rt = make_pal_runtime(config=HASHING, path=str(tmp_path / "db" / "s.duckdb"))
    rt.call("memory.remember", {"content": "One note."})
    full = tmp_path / "full"
    full.mkdir()
    (full / "mine.md").write_text("my own note", encoding="utf-8")
    with pytest.raises(errors.Conflict, match="is not empty"):
        export_markdown(caller(rt), str(full), False, rt.store.owns_file)
    assert [p.name for p in full.iterdir()] == ["mine.md"]
    export_markdown(caller(rt), str(full), True, rt.store.owns_file)  # --force: beside, nothing deleted
    assert (full / "mine.md").read_text(encoding="utf-8") == "my own note" and (full / "notes").is_dir()
    for force in (False, True):
        with pytest.raises(errors.InvalidParams, match="of the store"):
            export_markdown(caller(rt), str(tmp_path / "db"), force, rt.store.owns_file)
    assert sorted(p.name for p in (tmp_path / "db").iterdir() if p.suffix == ".md") == []
    with pytest.raises(errors.InvalidParams, match="is a file"):
        export_markdown(caller(rt), str(full / "mine.md"), True, rt.store.owns_file)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert export_markdown(caller(rt), str(empty), False, rt.store.owns_file)["notes"] == 1


# -- the CLI as a real process --------------------------------------------------------------------------------
def pal(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST__packs__memory__embedder="hashing", COLUMNS="200",
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db",
                           str(tmp / "db" / "s.duckdb"), "--json", *args], capture_output=True, text=True, env=env,
                          cwd=str(tmp), timeout=300)


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_pal_import_and_export_markdown_as_a_process(tmp_path):  # type: ignore[no-untyped-def]
    (tmp_path / "db").mkdir()
    done = pal(tmp_path, "import", "chatgpt", str(FIXTURES / "chatgpt" / "conversations.json"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"conversations": 2, "created": 7, "replayed": 0, "seen_again": 0,
                                       "skipped": 3}
    done = pal(tmp_path, "import", "claude", str(FIXTURES / "claude"), "--scope", "assistant-chats")
    assert json.loads(done.stdout)["created"] == 4, done.stderr
    done = pal(tmp_path, "import", "markdown", str(FIXTURES / "vault"))
    assert json.loads(done.stdout) == {"conversations": 1, "created": 6, "replayed": 0, "seen_again": 0, "links": 4,
                                       "unresolved": 2, "skipped": 1}, done.stderr
    bad = tmp_path / "bad.json"
    data = json.loads((FIXTURES / "claude" / "conversations.json").read_text(encoding="utf-8"))
    data[0]["chat_messages"][1]["sender"] = "robot"
    bad.write_text(json.dumps(data), encoding="utf-8")
    before = digest(tmp_path / "db")
    refused = pal(tmp_path, "import", "claude", str(bad))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    err = json.loads(refused.stdout or refused.stderr)["error"]
    assert err["code"] == "invalid_params" and "message c1a2b3c4-0000-4a00-9000-0000000000m2" in err["message"]
    assert digest(tmp_path / "db") == before
    out = tmp_path / "vault-out"
    done = pal(tmp_path, "export", "markdown", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["notes"] == 17 and len(list(out.rglob("*.md"))) == 17 + 2  # user, assistant
    again = pal(tmp_path, "export", "markdown", str(out))
    assert again.returncode == 4 and json.loads(again.stdout or again.stderr)["error"]["code"] == "conflict"
    assert pal(tmp_path, "export", "markdown", str(out), "--force").returncode == 0
    own = pal(tmp_path, "export", "markdown", str(tmp_path / "db"), "--force")
    assert own.returncode == 2 and "of the store" in json.loads(own.stdout or own.stderr)["error"]["message"]
    assert not list((tmp_path / "db").glob("notes"))
    unknown = pal(tmp_path, "export", "html", str(out))
    assert unknown.returncode == 2 and "unknown export format" in (unknown.stdout + unknown.stderr)

"""Every `pal` command through `--server` reaches a real `pal serve` subprocess and never a local file; output is
JSON with `--json` wherever it stands, text otherwise (plain when piped); timestamps say UTC (issue 20, item 3)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from conftest import REPO, ServerProcess, child_env  # noqa: E402

HASHING = {"PALIMPSEST__packs__memory__embedder": "hashing"}
UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")
CHAT = [
    {"speaker": "Ada", "text": "We go with Postgres because the team already knows it.", "timestamp": "2026-03-02T10:15:00",
     "thread": "kickoff"},
    {"speaker": "Ben", "text": "Then I will write the migration plan.", "timestamp": "2026-03-02T10:16:00",
     "thread": "kickoff"},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    db = tmp_path_factory.mktemp("srv") / "served.duckdb"
    proc = ServerProcess(db, "http", env=child_env(**HASHING),
                         argv=[sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--db", str(db), "serve", "--port", "0"])
    yield proc
    proc.stop()


def pal(tmp: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a LOCAL default database in tmp (it must never be created when --server is given)."""
    e = child_env(PALIMPSEST_DB=str(tmp / "local.duckdb"), COLUMNS="80", **HASHING, **env)
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], capture_output=True, text=True,
                          env=e, cwd=str(REPO), input=stdin, timeout=120)


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc.stdout


def timestamps(value: object) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k.endswith(("_at", "_from", "_to")) and isinstance(v, str):
                found.append(v)
            found += timestamps(v)
    elif isinstance(value, list):
        for v in value:
            found += timestamps(v)
    return found


def test_every_command_goes_to_the_server_and_no_local_file_is_made(server: ServerProcess, tmp_path: Path) -> None:
    s = ("--server", server.url)
    # stdin with '-', comma-split tags, --json after the command
    note = json.loads(ok(pal(tmp_path, *s, "memory", "remember", "-", "--tags", "db, decision", "--scope", "orion",
                             "--json", stdin="We chose Postgres for Orion: invoices need strict transactions.\n")))
    assert note["note"]["content"] == "We chose Postgres for Orion: invoices need strict transactions."
    assert note["note"]["tags"] == ["db", "decision"]
    found = json.loads(ok(pal(tmp_path, "--json", *s, "memory", "recall", "Postgres Orion")))
    assert found["results"][0]["note"]["id"] == note["note"]["id"]
    ok(pal(tmp_path, *s, "kg", "assert-fact", "Orion", "uses_database", "MySQL", "--valid-from", "2020"))
    ok(pal(tmp_path, *s, "kg", "assert-fact", "Orion", "uses_database", "Postgres", "--valid-from", "2023-03-01"))
    history = ok(pal(tmp_path, *s, "kg", "history", "Orion", "uses_database"))
    assert re.search(r"MySQL\s+2020-01-01 → 2023-03-01", history), history
    assert re.search(r"Postgres\s+2023-03-01 → now", history), history
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps(line) + "\n" for line in CHAT), encoding="utf-8")
    first = json.loads(ok(pal(tmp_path, *s, "--json", "import", "jsonl", str(chat))))
    assert first == {"conversations": 1, "created": 2, "replayed": 0, "seen_again": 0}
    again = json.loads(ok(pal(tmp_path, *s, "--json", "import", "jsonl", str(chat))))
    assert again == {"conversations": 1, "created": 0, "replayed": 2, "seen_again": 0}
    called = json.loads(ok(pal(tmp_path, *s, "call", "memory.count", "--params", "{}", "--json")))
    assert called == {"count": 3}
    piped = json.loads(ok(pal(tmp_path, *s, "--json", "call", "memory.count", "--params", "-", stdin='{"scope": "orion"}')))
    assert piped == {"count": 1}
    verbs = {v["verb"] for v in json.loads(ok(pal(tmp_path, *s, "verbs", "--json")))}
    assert {"memory.recall", "kg.fact_history"} <= verbs
    packs = {p["pack"] for p in json.loads(ok(pal(tmp_path, *s, "packs", "--json")))}
    assert {"memory", "kg"} <= packs
    info = json.loads(ok(pal(tmp_path, *s, "info", "--json")))
    assert server.url in info["database"] and info["embedder"] == "hashing"
    default = next(n for n in info["namespaces"] if n["namespace"] == "default")
    assert default["notes"] == 3 and default["facts"] >= 2 and default["entities"] >= 3
    assert not (tmp_path / "local.duckdb").exists()  # nothing ever opened locally


def test_timestamps_say_utc_in_json_and_text(server: ServerProcess, tmp_path: Path) -> None:
    s = ("--server", server.url)
    out = json.loads(ok(pal(tmp_path, *s, "--json", "kg", "assert-fact", "Ada", "works_at", "Acme",
                            "--valid-from", "2024-05-01T09:30:00")))
    stamps = timestamps(out)
    assert stamps and all(UTC.match(t) for t in stamps), stamps
    assert out["fact"]["valid_from"] == "2024-05-01T09:30:00Z"
    text = ok(pal(tmp_path, *s, "kg", "history", "Ada", "works_at"))
    assert "2024-05-01 09:30Z" in text
    note = json.loads(ok(pal(tmp_path, *s, "--json", "memory", "remember", "Lunch moved to Thursday",
                             "--occurred-at", "2026-01-12T12:00:00+02:00")))
    assert note["note"]["occurred_at"] == "2026-01-12T10:00:00Z"  # stored in UTC, printed with its zone


def test_piped_text_is_plain_and_recall_reads_at_80_columns(server: ServerProcess, tmp_path: Path) -> None:
    s = ("--server", server.url)
    long = ("We chose Postgres for Orion because of strict transactions across invoices and payments, and because "
            "the whole team already knows how to run it in production")
    ok(pal(tmp_path, *s, "memory", "remember", long, "--scope", "orion", "--kind", "decision"))
    out = ok(pal(tmp_path, *s, "memory", "recall", "strict transactions invoices", "--include-breakdown"))
    assert max(len(line) for line in out.splitlines()) <= 80, out
    assert "production" in out and "orion" in out and "decision" in out  # the whole text, wrapped
    assert re.search(r"relevance \d\.\d\d · salience \d\.\d\d", out), out  # the breakdown, compact
    assert not re.search(r"[┃│┏━╭\x1b]", out), out  # piped: no borders, no colour codes
    table = ok(pal(tmp_path, *s, "verbs"))
    assert "memory.recall" in table and not re.search(r"[┃│┏━\x1b]", table)


def test_commands_that_run_in_process_refuse_server(tmp_path: Path) -> None:
    proc = pal(tmp_path, "--server", "http://127.0.0.1:9", "--json", "serve")
    assert proc.returncode == 5
    assert json.loads(proc.stdout)["error"]["code"] == "config_error"
    assert not (tmp_path / "local.duckdb").exists()


def test_chat_exports_import_through_the_server_and_markdown_says_it_cannot(server: ServerProcess,
                                                                          tmp_path: Path) -> None:
    """Issue 42.5: `pal --server URL import chatgpt|claude` parses the export here and imports it there in one
    call, with the counts a local import prints; a Markdown folder (its edges need the notes' ids inside the
    import's transaction) is refused before anything is sent."""
    s = ("--server", server.url, "-n", "chats")
    export = REPO / "tests" / "fixtures" / "imports" / "chatgpt" / "conversations.json"
    first = json.loads(ok(pal(tmp_path, *s, "--json", "import", "chatgpt", str(export))))
    assert first == {"conversations": 2, "created": 7, "replayed": 0, "seen_again": 0, "skipped": 3}
    again = json.loads(ok(pal(tmp_path, *s, "--json", "import", "chatgpt", str(export))))
    assert (again["created"], again["replayed"]) == (0, 7)
    refused = pal(tmp_path, *s, "--json", "import", "markdown", str(REPO / "tests" / "fixtures" / "imports" / "vault"))
    assert refused.returncode == 2 and "local store" in (refused.stdout + refused.stderr)
    assert json.loads(ok(pal(tmp_path, *s, "--json", "call", "memory.count", "--params", "{}"))) == {"count": 7}
    assert not (tmp_path / "local.duckdb").exists()

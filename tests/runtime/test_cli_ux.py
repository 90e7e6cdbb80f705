"""`pal` as a person uses it, locally: --version, info, --help without loading packs, stdin, --json anywhere,
--params under `call` (issue 20)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def pal(tmp: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(tmp / "u.duckdb"), COLUMNS="80",
               PALIMPSEST__packs__memory__embedder="hashing")
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], capture_output=True, text=True,
                          env=env, cwd=str(tmp), input=stdin, timeout=120)


def test_version_and_help_load_no_pack_and_no_database(tmp_path: Path) -> None:
    from palimpsest_memory.runtime import DISTRIBUTION, __version__

    out = pal(tmp_path, "--version")
    assert out.returncode == 0 and out.stdout.strip() == f"{DISTRIBUTION} {__version__}"
    code = ("import sys; from palimpsest_memory.runtime.adapters.cli import main; rc = main(['--help']); "
            "heavy = sorted(m for m in ('duckdb', 'numpy', 'scipy', 'palimpsest_memory.packs', 'pydantic', 'palimpsest_memory.runtime.engine') "
            "if m in sys.modules); print(json.dumps([rc, heavy]), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True,
                          cwd=str(ROOT), env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}, timeout=60)
    rc, heavy = json.loads(proc.stderr.strip().splitlines()[-1])
    assert rc == 0 and heavy == [], heavy
    for word in ("memory", "kg", "info", "mcp"):  # packs listed by their entry points, without loading them
        assert f" {word} " in proc.stdout, proc.stdout
    assert not (tmp_path / "u.duckdb").exists()


def test_info_names_the_database_backend_packs_namespaces_and_embedder(tmp_path: Path) -> None:
    assert pal(tmp_path, "-n", "work", "memory", "remember", "Ship the release on Friday").returncode == 0
    data = json.loads(pal(tmp_path, "info", "--json").stdout)
    assert data["database"] == str(tmp_path / "u.duckdb") and data["backend"] == "duckdb"
    assert data["size_bytes"] > 0 and data["embedder"] == "hashing"
    assert {"memory", "kg", "brain"} <= {p["pack"] for p in data["packs"]}
    work = next(n for n in data["namespaces"] if n["namespace"] == "work")
    assert (work["notes"], work["archived"], work["superseded"], work["facts"]) == (1, 0, 0, 0)
    text = pal(tmp_path, "info").stdout
    assert str(tmp_path / "u.duckdb") in text and "hashing" in text and "work" in text


def test_stdin_dash_is_read_once_and_a_second_dash_is_refused(tmp_path: Path) -> None:
    out = json.loads(pal(tmp_path, "memory", "remember", "-", "--json", stdin="multi\nline note\n").stdout)
    assert out["note"]["content"] == "multi\nline note"
    twice = pal(tmp_path, "--json", "memory", "update", "1", "--content", "-", "--scope", "-", stdin="x")
    assert twice.returncode == 2 and json.loads(twice.stdout)["error"]["code"] == "invalid_params"


def test_call_takes_params_and_json_means_output(tmp_path: Path) -> None:
    pal(tmp_path, "memory", "remember", "alpha note", "--tags", "a,b", "--tags", "c")
    got = json.loads(pal(tmp_path, "call", "memory.list", "--params", '{"limit": 5}', "--json").stdout)
    assert got["notes"][0]["tags"] == ["a", "b", "c"]
    got = json.loads(pal(tmp_path, "call", "memory.list", "-p", "limit=5", "--json").stdout)
    assert got["notes"][0]["content"] == "alpha note"
    bad = pal(tmp_path, "call", "memory.list", "--params", "[1]", "--json")
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid_params"
    err = pal(tmp_path, "memory", "recall", "   ", "--json")  # --json after the command: errors as JSON too
    assert err.returncode == 2 and json.loads(err.stdout)["error"]["code"] == "invalid_params"


def test_recall_answers_short_queries_from_the_command_line(tmp_path: Path) -> None:
    pal(tmp_path, "memory", "remember", "hello there, the kettle is broken")
    for query in ("hello", "what", "a"):
        out = pal(tmp_path, "--json", "memory", "recall", query)
        assert out.returncode == 0, out.stdout + out.stderr
        assert isinstance(json.loads(out.stdout)["results"], list)


def test_stats_verbs_count_one_namespace_and_info_lists_them_all(tmp_path: Path) -> None:
    pal(tmp_path, "-n", "a", "memory", "remember", "note in a")
    pal(tmp_path, "-n", "b", "kg", "assert-fact", "Ada", "works_at", "Acme")
    empty = json.loads(pal(tmp_path, "--json", "-n", "b", "memory", "stats").stdout)
    assert (empty["notes"], empty["archived"], empty["last_write"]) == (0, 0, None)
    graph = json.loads(pal(tmp_path, "--json", "-n", "b", "kg", "stats").stdout)
    assert (graph["entities"], graph["facts"], graph["versions"]) == (2, 1, 1)
    assert json.loads(pal(tmp_path, "--json", "-n", "a", "kg", "stats").stdout)["facts"] == 0  # b's stays in b
    pal(tmp_path, "-n", "b", "memory", "remember", "note in b")
    info = json.loads(pal(tmp_path, "--json", "info").stdout)["namespaces"]
    assert [n["namespace"] for n in info] == ["a", "b"]  # namespaces that hold notes (memory.namespaces)
    assert (info[0]["notes"], info[0]["facts"]) == (1, 0) and (info[1]["notes"], info[1]["facts"]) == (1, 1)
    pal(tmp_path, "-n", "c", "kg", "assert-fact", "Bo", "lives_in", "Oslo")  # facts, no notes: still listed
    info = json.loads(pal(tmp_path, "--json", "info").stdout)["namespaces"]
    assert [(n["namespace"], n["notes"], n["facts"]) for n in info] == [("a", 1, 0), ("b", 1, 1), ("c", 0, 1)]

"""The CLI bugs a new user met in the first hour (issue 42, bugs 1, 4 and 8), each through the real `pal`:
`pal info` on the default store, help text shown as written, and `pal memory get` taking ids as arguments and
exiting 3 (not found) when one is missing."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, child_env, run_cli
from rawmcp import HASHING
from test_adapters_both_backends import target  # noqa: F401 - the both-backends store fixture

pytestmark = pytest.mark.both_backends  # `target` is a store of each backend (the test plugin parametrises it)

SENTENCE_END = (".", "!", "?", ")", "…")  # what a whole summary ends with (a mid-sentence cut ends with "," or a word)
BOX = re.compile(r"[│╭╮╰╯─]")


def test_pal_info_on_the_default_store_names_its_absolute_path_and_size(tmp_path: Path) -> None:
    """No --db: the default store lies under ~ (config: ~/.local/share/palimpsest/…); `pal info` printed
    `<cwd>/~/.local/...` and no size. Run from another folder so a cwd-relative path would show."""
    env = child_env(**HASHING, HOME=str(tmp_path))
    expected = tmp_path / ".local" / "share" / "palimpsest" / "palimpsest.duckdb"
    work = tmp_path / "elsewhere"
    work.mkdir()
    info = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "--json", "info"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=300)
    assert info.returncode == 0, info.stderr
    data = json.loads(info.stdout)
    assert data["database"] == str(expected) and expected.exists()
    assert isinstance(data["size_bytes"], int) and data["size_bytes"] > 0  # taken while open: before the checkpoint
    text = subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", "info"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert f"database: {expected}" in text.stdout and re.search(r"^size: \d", text.stdout, re.M), text.stdout
    assert "~" not in text.stdout


def test_pal_serve_help_keeps_its_placeholders() -> None:
    proc = run_cli("serve", "--help", env=child_env(COLUMNS="200"))
    assert proc.returncode == 0, proc.stderr
    assert "Interface (default [adapters] host, loopback)." in proc.stdout, proc.stdout
    assert "Port (default [adapters] http_port; 0 = any free)." in proc.stdout


# Renders every command's help once, in one child process, over the same command tree `pal` builds (its
# get_command + literal_help): one process instead of eighty.
DUMP_HELP = """
import contextlib, io, json, sys
import typer
from palimpsest_memory.runtime.adapters import cli

try:
    from palimpsest_memory.runtime.adapters.cli_help import literal_help
except ImportError:  # the code before the fix had no such step: render what it rendered
    literal_help = lambda tree: None
tree = typer.main.get_command(cli.build_cli())
literal_help(tree)
out = {}
def walk(cmd, path):
    helps = {p.name: p.help for p in cmd.params if getattr(p, "help", None)}
    subs = {n: (s.short_help or "") for n, s in (getattr(cmd, "commands", None) or {}).items()}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            tree.main(args=[*path, "--help"], prog_name="pal", standalone_mode=False)
        except SystemExit:
            pass
    out[" ".join(path)] = {"text": buf.getvalue(), "params": helps, "subs": subs, "help": cmd.help or ""}
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        walk(sub, path + [name])
walk(tree, [])
json.dump(out, sys.stdout)
"""


def _flat(text: str) -> str:
    """Help as plain words: the boxes and the line wrapping taken out, Rich's escapes undone."""
    return " ".join(BOX.sub(" ", text).replace("\\[", "[").split())


def test_every_command_help_shows_its_text_as_written_and_whole_summaries() -> None:
    proc = subprocess.run([sys.executable, "-c", DUMP_HELP], cwd=REPO, env=child_env(COLUMNS="400"),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    commands = json.loads(proc.stdout)
    assert {"serve", "mcp", "memory get", "kg facts", "kg timeline", "memory recall"} <= set(commands)
    lost, cut = [], []
    for path, c in commands.items():
        shown = _flat(c["text"])
        for name, help_ in c["params"].items():
            if _flat(help_) not in shown:
                lost.append(f"pal {path} --{name}: {_flat(help_)!r}")
        for token in re.findall(r"\[[^\]\s]+\]", c["help"].replace("\\[", "[")):
            if token not in shown:
                lost.append(f"pal {path}: {token} missing from the help")
        for sub, short in c["subs"].items():
            short = _flat(short)
            if short and not short.endswith(SENTENCE_END):
                cut.append(f"pal {path} {sub}: {short!r}")
            if short and short not in shown:
                lost.append(f"pal {path}: the summary of {sub} is not shown whole: {short!r}")
    assert not lost, "\n".join(lost)
    assert not cut, "summaries stop mid-sentence:\n" + "\n".join(cut)


def test_pal_memory_get_takes_ids_as_arguments_and_exits_3_for_a_missing_one(target: str) -> None:
    def pal(*args: str) -> subprocess.CompletedProcess:
        return run_cli("--db", target, *args, env=child_env(**HASHING))

    made = pal("--json", "memory", "remember", "Orion runs on Postgres")
    assert made.returncode == 0, made.stderr
    note_id = json.loads(made.stdout)["note"]["id"]
    got = pal("--json", "memory", "get", str(note_id))
    assert got.returncode == 0, got.stderr
    assert [n["content"] for n in json.loads(got.stdout)["notes"]] == ["Orion runs on Postgres"]
    assert json.loads(pal("--json", "memory", "get", "--ids", str(note_id)).stdout)["missing"] == []  # still works

    missing = pal("--json", "memory", "get", "999")
    assert missing.returncode == 3, (missing.stdout, missing.stderr)
    assert json.loads(missing.stdout) == {"notes": [], "missing": [999]}  # stdout: the answer, one document
    err = json.loads(missing.stderr)
    assert err["ok"] is False and err["error"]["code"] == "not_found" and err["error"]["details"] == {"missing": [999]}

    some = pal("memory", "get", str(note_id), "999")  # found and missing: the found note shows, the exit says 3
    assert some.returncode == 3 and "Orion runs on Postgres" in some.stdout and "999" in some.stderr
    assert pal("memory", "get").returncode == 2  # no id at all: invalid params

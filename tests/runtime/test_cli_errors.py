"""`pal` answers bad input with a typed error and its exit code, never a traceback (issue 16, items 6 and 7)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def pal(tmp: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(tmp / "c.duckdb"), COLUMNS="200", **env_extra)
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], capture_output=True, text=True,
                          env=env, cwd=str(tmp), timeout=120)


def error_of(proc: subprocess.CompletedProcess[str]) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    body = json.loads(proc.stdout or proc.stderr)
    assert body["ok"] is False
    return body["error"]


@pytest.mark.parametrize("env, key", [
    ({"PALIMPSEST__runtime": "3"}, "runtime"),
    ({"PALIMPSEST_PACKS": "no_such_pack"}, None),
])
def test_a_config_error_is_reported_by_pack_commands_not_no_such_command(tmp_path, env, key) -> None:  # type: ignore[no-untyped-def]
    proc = pal(tmp_path, "--json", "memory", "recall", "coffee", **env)
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    err = error_of(proc)
    assert err["code"] in ("config_error", "pack_load_error") and "No such command" not in err["message"]
    if key:
        assert err["details"]["key"] == key


def test_deeply_nested_json_params_are_invalid_params(tmp_path) -> None:  # type: ignore[no-untyped-def]
    deep = "[" * 20_000 + "]" * 20_000
    proc = pal(tmp_path, "--json", "call", "kg.entities", "--params", '{"kind": ' + deep + "}")
    assert proc.returncode == 2 and error_of(proc)["code"] == "invalid_params"
    proc = pal(tmp_path, "--json", "call", "kg.entities", "-p", f"kind={deep}")
    assert proc.returncode == 2 and error_of(proc)["code"] == "invalid_params"


def test_a_database_path_under_a_regular_file_is_a_storage_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    proc = pal(tmp_path, "--json", "--db", str(blocker / "x.duckdb"), "kg", "entities")
    assert proc.returncode == 6 and error_of(proc)["code"] == "storage_error"


@pytest.mark.parametrize("url", ["not a url", "ftp://host/", "http://", "http://host:port/"])
def test_a_malformed_server_url_is_a_config_error(tmp_path, url) -> None:  # type: ignore[no-untyped-def]
    proc = pal(tmp_path, "--json", "--server", url, "kg", "entities")
    assert proc.returncode == 5 and error_of(proc)["code"] == "config_error"

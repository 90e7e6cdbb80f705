"""One writer per database: a server process holds a database; the CLI names the holder, and --server reaches it."""
from __future__ import annotations

import json
import os
import signal

import pytest

pytest.importorskip("fastapi", reason="the 'http' extra is not installed")

from conftest import ServerProcess, child_env, run_cli  # noqa: E402

from palimpsest_memory.runtime import errors  # noqa: E402
from palimpsest_memory.runtime.adapters.remote import RemoteClient, error_from_dict  # noqa: E402
from palimpsest_memory.runtime.adapters import serving  # noqa: E402
from palimpsest_memory.runtime.storage.duck_store import announce_file  # noqa: E402

TOKEN = "lock-test-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("held") / "pal.db"
    proc = ServerProcess(db, "http", fakes=True, env=child_env(PALIMPSEST_TOKEN=TOKEN))
    yield proc
    proc.stop()


def test_server_publishes_who_holds_the_database(server):
    assert server.info["kind"] == "http" and server.info["pid"] == server.proc.pid
    assert server.url.startswith("http://127.0.0.1:")
    assert TOKEN not in server.info_file.read_text()  # the token is never written down


def test_cli_on_a_held_database_names_the_holder_and_the_way_in(server):
    proc = run_cli("--db", str(server.db), "call", "example.notes")
    assert proc.returncode == 6, proc.stderr
    assert f"held by process {server.proc.pid}" in proc.stderr
    assert f"--server {server.url}" in proc.stderr
    proc = run_cli("--db", str(server.db), "--json", "call", "example.notes")
    err = json.loads(proc.stdout)["error"]  # --json: the one error shape, with the holder in the details
    assert err["code"] == "storage_error" and err["details"]["reason"] == "locked"
    assert err["details"]["holder"]["url"] == server.url and err["details"]["holder"]["pid"] == server.proc.pid


def test_cli_server_option_sends_the_call_to_the_server(server):
    env = child_env(PALIMPSEST_TOKEN=TOKEN)
    proc = run_cli("--server", server.url, "--json", "call", "example.note", "-p", "text=via server", env=env)
    assert proc.returncode == 0, proc.stderr
    note = json.loads(proc.stdout)
    assert note["text"] == "via server"
    proc = run_cli("--json", "call", "example.notes", env={**env, "PALIMPSEST_SERVER": server.url})
    assert proc.returncode == 0, proc.stderr
    assert note in json.loads(proc.stdout)["notes"]
    proc = run_cli("--server", server.url, "--json", "-n", "ns1", "call", "memory.remember", "-p", "content=scoped",
                   env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["namespace"] == "ns1", proc.stderr


def test_remote_errors_come_back_as_the_same_class_and_exit_code(server):
    env = child_env(PALIMPSEST_TOKEN=TOKEN)
    proc = run_cli("--server", server.url, "call", "example.note", "-p", "text=", env=env)
    assert proc.returncode == 2 and "invalid_params" in proc.stderr, proc.stderr
    proc = run_cli("--server", server.url, "call", "nope.verb", env=env)
    assert proc.returncode == 3 and "verb_not_found" in proc.stderr, proc.stderr
    proc = run_cli("--server", server.url, "call", "example.shout", "-p", "text=a", "--internal", env=env)
    assert proc.returncode == 4, proc.stderr
    proc = run_cli("--server", server.url, "call", "example.notes", env=child_env())  # no token
    assert proc.returncode == 4 and "bearer token" in proc.stderr, proc.stderr

    client = RemoteClient(server.url, token=TOKEN, timeout=60)
    with pytest.raises(errors.NotFound) as caught:
        client.call("memory.unlink", {"edge_id": 404})
    assert caught.value.code == "not_found" and caught.value.verb == "memory.unlink"
    with pytest.raises(errors.Conflict):
        client.call("memory.remember", {"content": "!no", "key": "k"})
    with pytest.raises(errors.LimitExceeded):
        client.call("memory.recall", {"query": "q" * 101})
    with pytest.raises(errors.InternalError):
        client.call("zeta.explode", {})
    with pytest.raises(errors.Forbidden):
        client.call("zeta.secret", {})
    assert client.call("zeta.ping", {"message": "x"}) == {"echo": "x"}
    assert "zeta.ping" in {v["verb"] for v in client.verbs()}


def test_unreachable_server_is_a_clear_error(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(errors.StorageError, match="cannot reach") as caught:
        RemoteClient(f"http://127.0.0.1:{port}", token="", timeout=30).call("example.notes", {})
    assert caught.value.details["reason"] == "server_unreachable"


def test_error_from_dict_round_trips_every_class():
    for cls in errors.ALL_ERRORS:
        if cls is errors.PalimpsestError:
            continue
        back = error_from_dict(cls("m", verb="a.b", details={"x": 1}).to_dict())
        assert type(back) is cls and back.to_dict() == cls("m", verb="a.b", details={"x": 1}).to_dict()
    unknown = error_from_dict({"ok": False, "error": {"code": "brand_new", "message": "m"}})
    assert unknown.code == "brand_new" and isinstance(unknown, errors.PalimpsestError)


def test_explain_locked_ignores_stale_info(tmp_path):
    db = tmp_path / "pal.db"
    locked = errors.StorageError("locked", details={"path": str(db), "reason": "locked"})
    assert serving.explain_locked(locked) is locked  # no info file
    (tmp_path / "pal.db.server.json").write_text(json.dumps({"pid": 2 ** 22 + 12345, "kind": "http", "url": "x"}))
    assert serving.explain_locked(locked) is locked  # the holder is gone: do not send anyone to a dead server
    other = errors.StorageError("corrupt", details={"path": str(db)})
    assert serving.explain_locked(other) is other


def test_server_stops_cleanly_and_frees_the_database(tmp_path):
    server = ServerProcess(tmp_path / "pal.db", "http")
    server.stop()
    assert server.proc.returncode == 0, server.stderr
    assert not server.info_file.exists()
    proc = run_cli("--db", str(server.db), "--json", "call", "example.notes")
    assert "held by" not in proc.stderr and "locked" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("stop_after", ["write", "replace"])
def test_a_stop_as_the_info_file_appears_still_removes_it(tmp_path, monkeypatch, stop_after):
    """SIGTERM can land between the info file being written and the server starting (a CI run left one behind)."""
    real_replace = os.replace

    def replace_then_stop(src, dst):
        if stop_after == "replace":
            real_replace(src, dst)
        raise serving.Stopped(signal.SIGTERM)

    monkeypatch.setattr(os, "replace", replace_then_stop)
    with serving.stop_on_signals(), announce_file(str(tmp_path / "pal.db"), "http", "http://127.0.0.1:1"):
        raise AssertionError("the stop must end the block before it starts")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_pal_serve_refuses_a_public_bind_without_a_token(tmp_path):
    proc = run_cli("--db", str(tmp_path / "pal.db"), "serve", "--host", "0.0.0.0", "--port", "0")
    assert proc.returncode == 5, proc.stderr
    assert "without a token" in proc.stderr
    assert not (tmp_path / "pal.db.server.json").exists()


def test_missing_extra_is_named(tmp_path):
    blocker = tmp_path / "blocked" / "fastapi"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'fastapi'\", name='fastapi')\n")
    env = child_env()
    env["PYTHONPATH"] = f"{blocker.parent}:{env['PYTHONPATH']}"
    proc = run_cli("--db", str(tmp_path / "pal.db"), "serve", env=env)
    assert proc.returncode == 5, proc.stderr
    assert "optional extra 'http'" in proc.stderr and "pip install fastapi uvicorn" in proc.stderr

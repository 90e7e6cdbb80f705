"""``pal mcp install CLIENT`` (issue 42, item 2), run as a real process with its home, config folders and working
folder in private temporary folders: each client's file written fresh, merged into, rewritten idempotently,
printed only, refused when it is not JSON; the options in effect passed through; and the command line written
into a configuration starts an MCP server that answers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import child_env
from rawmcp import HASHING, RawMcp

CLI = "palimpsest_memory.runtime.adapters.cli"
KEYS = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "cursor": "mcpServers", "vscode": "servers"}
TYPED = {"claude-code", "vscode"}  # entries that say "type": "stdio"
CASES = [("claude-desktop", "user"), ("claude-code", "user"), ("claude-code", "project"), ("cursor", "user"),
         ("cursor", "project"), ("vscode", "user"), ("vscode", "project")]


class Box:
    """A private home, config folders and project folder, and ``pal`` run inside them."""

    def __init__(self, root: Path) -> None:
        self.home, self.xdg, self.appdata, self.project = (root / n for n in ("home", "xdg", "appdata", "project"))
        for folder in (self.home, self.xdg, self.appdata, self.project):
            folder.mkdir()
        self.env = {k: v for k, v in child_env().items() if k not in ("CLAUDE_CONFIG_DIR", "USERPROFILE")}
        self.env.update(HOME=str(self.home), XDG_CONFIG_HOME=str(self.xdg), APPDATA=str(self.appdata))

    def app_data(self) -> Path:
        if sys.platform == "win32":
            return self.appdata
        return self.home / "Library" / "Application Support" if sys.platform == "darwin" else self.xdg

    def file(self, client: str, scope: str) -> Path:
        """Where the client reads its servers (as the clients' documentation says, not as the code computes)."""
        if scope == "project":
            return self.project / {"claude-code": ".mcp.json", "cursor": ".cursor/mcp.json",
                                   "vscode": ".vscode/mcp.json"}[client]
        return {"claude-desktop": self.app_data() / "Claude" / "claude_desktop_config.json",
                "claude-code": self.home / ".claude.json", "cursor": self.home / ".cursor" / "mcp.json",
                "vscode": self.app_data() / "Code" / "User" / "mcp.json"}[client]

    def pal(self, *args: str, command: list[str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*(command or [sys.executable, "-m", CLI]), *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, timeout=300)

    def install(self, client: str, scope: str, *more: str) -> subprocess.CompletedProcess:
        return self.pal("mcp", "install", client, "--scope", scope, *more)

    def all_files(self) -> list[Path]:
        return [p for p in self.everything() if p.is_file()]

    def everything(self) -> list[Path]:
        """Every file and folder made inside the box's folders."""
        return sorted(p for d in (self.home, self.xdg, self.appdata, self.project) for p in d.rglob("*"))


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box(tmp_path)


def expected_entry(client: str, args: list[str]) -> dict:
    # run as `python -m`, pal is not a file: the entry starts this Python with the CLI's module
    entry = {"command": os.path.abspath(sys.executable), "args": ["-m", CLI, *args]}
    return {"type": "stdio", **entry} if client in TYPED else entry


@pytest.mark.parametrize("client,scope", CASES)
def test_a_fresh_file_gets_the_server_and_says_where(box: Box, client: str, scope: str) -> None:
    proc = box.install(client, scope)
    assert proc.returncode == 0, proc.stderr
    path = box.file(client, scope)
    assert json.loads(path.read_text()) == {KEYS[client]: {"palimpsest": expected_entry(client, ["mcp"])}}
    assert str(path) in proc.stdout and "wrote MCP server 'palimpsest'" in proc.stdout
    assert box.all_files() == [path]  # no .bak of a file that was not there, no temporary file left


@pytest.mark.parametrize("client,scope", CASES)
def test_merging_keeps_other_servers_and_keys_and_a_rerun_changes_nothing(box: Box, client: str, scope: str) -> None:
    path = box.file(client, scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    key = KEYS[client]
    before = {"theme": "dark", key: {"other": {"command": "other-server", "args": ["--x"]},
                                     "palimpsest": {"command": "old-pal", "args": [], "env": {"K": "v"}}},
              "zzz": [1, {"nested": True}]}
    original = json.dumps(before, indent=4).encode()
    path.write_bytes(original)
    proc = box.install(client, scope, "--actor", "bob")
    assert proc.returncode == 0, proc.stderr
    after = json.loads(path.read_text())
    assert list(after) == ["theme", key, "zzz"] and after["theme"] == "dark" and after["zzz"] == before["zzz"]
    assert after[key]["other"] == before[key]["other"]
    # our entry is updated in place; a key we do not write (its env) stays
    assert after[key]["palimpsest"] == {**expected_entry(client, ["mcp", "--actor", "bob"]), "env": {"K": "v"}}
    backup = Path(str(path) + ".bak")
    assert backup.read_bytes() == original and str(backup) in proc.stdout

    written = path.read_bytes()
    again = box.install(client, scope, "--actor", "bob")
    assert again.returncode == 0, again.stderr
    assert "nothing written" in again.stdout
    assert path.read_bytes() == written and backup.read_bytes() == original

    changed = box.install(client, scope, "--actor", "carol")  # one entry, updated
    assert changed.returncode == 0, changed.stderr
    final = json.loads(path.read_text())
    assert list(final[key]) == ["other", "palimpsest"]
    assert final[key]["palimpsest"]["args"][-2:] == ["--actor", "carol"]
    assert backup.read_bytes() == written
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, backup.name])


@pytest.mark.parametrize("client,scope", CASES)
def test_print_writes_nothing(box: Box, client: str, scope: str) -> None:
    proc = box.install(client, scope, "--print", "--name", "memory")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {KEYS[client]: {"memory": expected_entry(client, ["mcp"])}}
    assert str(box.file(client, scope)) in proc.stderr
    assert box.everything() == []  # not even the file's folder


@pytest.mark.parametrize("client,scope", CASES)
@pytest.mark.parametrize("content", ["{\"mcpServers\": {", "// a comment\n{}", "[1, 2]", "{\"KEY\": []}",
                                     "{\"KEY\": \"text\"}", "{\"name\": \"caf\xe9\"}"])
def test_a_file_that_is_not_json_or_not_the_right_shape_is_refused_unchanged(box: Box, client: str, scope: str,
                                                                             content: str) -> None:
    path = box.file(client, scope)
    path.parent.mkdir(parents=True, exist_ok=True)
    original = content.replace("KEY", KEYS[client]).encode("latin-1")  # the last one: not UTF-8
    path.write_bytes(original)
    proc = box.install(client, scope, "--json")
    assert proc.returncode == 5, proc.stdout + proc.stderr  # ConfigError (ADR 0003)
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "config_error" and str(path) in error["message"] and "left as it is" in error["message"]
    assert path.read_bytes() == original and box.all_files() == [path]


def test_db_namespace_actor_and_tools_pass_through_wherever_they_are_given(box: Box) -> None:
    first = box.pal("--db", "mem/pal.duckdb", "-n", "work", "mcp", "install", "cursor", "--actor", "bob",
                    "--tools", "all", "--name", "mem")
    assert first.returncode == 0, first.stderr
    args = ["--db", str(box.project / "mem" / "pal.duckdb"), "-n", "work", "mcp", "--actor", "bob", "--tools", "all"]
    path = box.file("cursor", "user")
    assert json.loads(path.read_text())["mcpServers"]["mem"] == expected_entry("cursor", args)
    # the global options after the command, and --actor before it: the same entry
    after = box.pal("--actor", "bob", "mcp", "install", "cursor", "--name", "mem", "--tools", "all",
                    "--db", "mem/pal.duckdb", "-n", "work")
    assert after.returncode == 0 and "nothing written" in after.stdout, after.stdout + after.stderr
    # the server's options given before `install` count too; serving options have no place there
    before = box.pal("--db", "mem/pal.duckdb", "-n", "work", "mcp", "--actor", "bob", "--tools", "all", "install",
                     "cursor", "--name", "mem")
    assert before.returncode == 0 and "nothing written" in before.stdout, before.stdout + before.stderr
    serving = box.pal("mcp", "--http", "install", "cursor", "--name", "web")
    assert serving.returncode == 2 and "stdio server" in serving.stderr
    assert set(json.loads(path.read_text())["mcpServers"]) == {"mem"}
    # a PostgreSQL URL is written as given; PALIMPSEST_DB and PALIMPSEST_ACTOR count as given
    box.env.update(PALIMPSEST_DB="postgresql://pal@db.internal/memory", PALIMPSEST_ACTOR="eve")
    env_given = box.install("vscode", "project", "--print")
    assert json.loads(env_given.stdout)["servers"]["palimpsest"]["args"][2:] == [
        "--db", "postgresql://pal@db.internal/memory", "mcp", "--actor", "eve"]


def test_an_unknown_client_or_scope_is_a_usage_error_that_writes_nothing(box: Box) -> None:
    proc = box.pal("mcp", "install", "emacs")
    assert proc.returncode == 2
    assert "unknown MCP client 'emacs'" in proc.stderr
    assert all(name in proc.stderr for name in KEYS)
    scope = box.install("claude-desktop", "project")
    assert scope.returncode == 2 and "no 'project' scope" in scope.stderr
    empty = box.install("cursor", "user", "--name", " ")
    assert empty.returncode == 2 and "--name is empty" in empty.stderr
    assert box.all_files() == []


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")
def test_a_linked_file_is_written_through_its_link(box: Box) -> None:
    real = box.home / "dotfiles" / "mcp.json"
    real.parent.mkdir()
    real.write_text('{"mcpServers": {"other": {"command": "x"}}}')
    link = box.file("cursor", "user")
    link.parent.mkdir()
    link.symlink_to(real)
    proc = box.install("cursor", "user")
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and set(json.loads(real.read_text())["mcpServers"]) == {"other", "palimpsest"}


pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")


def test_the_written_command_line_starts_a_working_mcp_server(box: Box) -> None:
    """`pal` found on PATH by its bare name: the entry names that script by its absolute path, and the app starting
    the entry's command and args gets a server that lists the tools and remembers in the namespace given."""
    bin_dir = box.home / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pal"
    script.write_text(f"#!{sys.executable}\nfrom {CLI} import run\nrun()\n")
    script.chmod(0o755)
    box.env.update(PATH=f"{bin_dir}{os.pathsep}{box.env.get('PATH', '')}", **HASHING)
    db = box.project / "agent.duckdb"
    proc = box.pal("--db", str(db), "-n", "work", "mcp", "install", "claude-desktop", "--actor", "claude",
                   command=["pal"])
    assert proc.returncode == 0, proc.stderr
    entry = json.loads(box.file("claude-desktop", "user").read_text())["mcpServers"]["palimpsest"]
    assert entry == {"command": str(script), "args": ["--db", str(db), "-n", "work", "mcp", "--actor", "claude"]}

    server = RawMcp("", command=[entry["command"], *entry["args"]], env=box.env)
    try:
        assert server.initialize()["result"]["serverInfo"]["name"] == "palimpsest"
        tools = {t["name"] for t in server.request(2, "tools/list")["result"]["tools"]}
        assert {"memory_remember", "memory_recall", "kg_assert_fact"} <= tools
        answer = server.call(3, "memory_remember", {"content": "Orion runs on Postgres", "scope": "orion"})
        assert not answer["result"].get("isError"), answer
    finally:
        server.close()
    counts = {ns: box.pal("--db", str(db), "-n", ns, "memory", "count", "--json") for ns in ("work", "default")}
    assert all(c.returncode == 0 for c in counts.values()), [c.stderr for c in counts.values()]
    assert [json.loads(counts[ns].stdout)["count"] for ns in ("work", "default")] == [1, 0]


def test_a_second_pal_mcp_on_the_file_forwards_in_the_namespace_given(tmp_path: Path) -> None:
    """The second `pal -n work mcp` on a held DuckDB file forwards its calls to the first (issue 42, item 1): the
    namespace goes with them."""
    db = str(tmp_path / "shared.duckdb")
    servers = [RawMcp(db, "-n", "work")]
    try:
        assert "result" in servers[0].initialize()  # the first holds the file once it answers
        servers.append(RawMcp(db, "-n", "work"))
        assert "result" in servers[1].initialize()
        for i, server in enumerate(servers):
            answer = server.call(2, "memory_remember", {"content": f"note from server {i}"})
            assert not answer["result"].get("isError"), answer
    finally:
        for server in reversed(servers):
            server.close()
    counts = [subprocess.run([sys.executable, "-m", CLI, "--db", db, "-n", ns, "memory", "count", "--json"],
                             env=child_env(**HASHING), capture_output=True, text=True, timeout=300)
              for ns in ("work", "default")]
    assert [json.loads(c.stdout)["count"] for c in counts] == [2, 0], [c.stderr for c in counts]

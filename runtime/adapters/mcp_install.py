"""``pal mcp install CLIENT``: put this ``pal mcp`` into an agent app's MCP configuration (ADR 0038).

Each client keeps its servers in a JSON file of its own, under a key of its own: Claude Desktop, Claude Code and
Cursor under ``mcpServers``, VS Code under ``servers`` (with ``"type": "stdio"``, which Claude Code's own
``claude mcp add`` writes too). :data:`CLIENTS` says where each file is, per scope: ``user`` (every project of this
user; the default) and, where the client reads one, ``project`` (the file in the current folder).

The entry starts the ``pal`` that runs this command, by its absolute path (an app does not start a login shell,
so ``PATH`` may not find it), or this Python with ``-m`` and the CLI's module when that ``pal`` is not a file;
``--db`` (made absolute: the app's working folder is not yours), ``-n``, ``--actor`` and ``--tools`` follow.

Writing merges: the file's other keys and other servers stay as they were, an entry of the same name is updated
(keys we do not write, such as its ``env``, stay), nothing is written when nothing would change. The old file is
kept as ``FILE.bak``, the new one replaces it in one rename (:func:`newfile.write_new`), through a symbolic link
to its target. A file that is not a JSON object, or whose server key is not an object, is refused as a
ConfigError and left as it is; so is one that changed while we wrote (run again).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from palimpsest_memory.runtime import errors, is_store_file
from palimpsest_memory.runtime.newfile import write_new

CLI_MODULE = __name__.rsplit(".", 1)[0] + ".cli"  # the module the ``pal`` console script runs
USER, PROJECT = "user", "project"


def app_data() -> Path:
    """Where desktop apps built on Electron (Claude Desktop, VS Code) keep a user's settings on this system."""
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    return Path(xdg) if os.path.isabs(xdg) else Path.home() / ".config"  # a relative XDG value is to be ignored


def claude_code_user_file() -> Path:
    """Claude Code keeps user-scope servers in ``.claude.json``, in ``CLAUDE_CONFIG_DIR`` when that is set."""
    folder = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(folder).expanduser() / ".claude.json" if folder else Path.home() / ".claude.json"


@dataclass(frozen=True)
class Client:
    """An agent app: its name on the command line, how it is called, the key of its server table, whether an
    entry says ``"type": "stdio"``, and its configuration file per scope (``project`` ones relative to the
    current folder)."""

    name: str
    title: str
    key: str
    typed: bool
    files: dict[str, Callable[[], Path]]


CLIENTS = {c.name: c for c in (
    Client("claude-desktop", "Claude Desktop", "mcpServers", False,
           {USER: lambda: app_data() / "Claude" / "claude_desktop_config.json"}),
    Client("claude-code", "Claude Code", "mcpServers", True,
           {USER: claude_code_user_file, PROJECT: lambda: Path(".mcp.json")}),
    Client("cursor", "Cursor", "mcpServers", False,
           {USER: lambda: Path.home() / ".cursor" / "mcp.json", PROJECT: lambda: Path(".cursor") / "mcp.json"}),
    Client("vscode", "VS Code", "servers", True,
           {USER: lambda: app_data() / "Code" / "User" / "mcp.json", PROJECT: lambda: Path(".vscode") / "mcp.json"}),
)}


def client_of(name: str, scope: str | None) -> tuple[Client, str]:
    """The client and scope asked for; an unknown one is a usage error that lists the known ones."""
    client = CLIENTS.get(name.strip().lower())
    if client is None:
        raise errors.InvalidParams(f"unknown MCP client {name!r}; known: {', '.join(CLIENTS)}",
                                   details={"errors": [{"loc": ["CLIENT"], "msg": "unknown client"}],
                                            "known": list(CLIENTS)})
    scope = (scope or USER).strip().lower()
    if scope not in client.files:
        raise errors.InvalidParams(f"{client.title} has no {scope!r} scope; use {' or '.join(client.files)}",
                                   details={"errors": [{"loc": ["--scope"], "msg": "unknown scope"}]})
    return client, scope


def pal_command() -> list[str]:
    """This ``pal`` as an app can start it: the absolute path of the script running (found on ``PATH`` when it
    was started by a bare name), else this Python running the CLI's module (``python -m``, a zipapp...)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name.lower() in ("pal", "pal.exe"):
        named = argv0 if os.sep in argv0 or (os.altsep and os.altsep in argv0) else shutil.which(argv0)
        for path in (named, f"{named}.exe" if named and sys.platform == "win32" else None):
            if path and os.path.isfile(path) and os.access(path, os.X_OK):
                return [os.path.abspath(path)]  # not resolved: a pipx link keeps working across upgrades
    return [os.path.abspath(sys.executable), "-m", CLI_MODULE]


def server_line(db: str | None, namespace: str | None, actor: str | None, tools: str | None) -> list[str]:
    """The command line of the server: this ``pal``, the global options in effect, ``mcp`` and its own."""
    line = pal_command()
    if db:
        line += ["--db", os.path.abspath(os.path.expanduser(db)) if is_store_file(db) and db != ":memory:" else db]
    if namespace:
        line += ["-n", namespace]
    line.append("mcp")
    if actor:
        line += ["--actor", actor]
    if tools:
        line += ["--tools", tools]
    return line


def entry_of(client: Client, line: list[str]) -> dict[str, Any]:
    return {**({"type": "stdio"} if client.typed else {}), "command": line[0], "args": line[1:]}


def read_config(path: Path, client: Client) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes (None when there is none) and its JSON object; refused unless both it and its server key
    are JSON objects. An empty file counts as ``{}`` (some guides say to create it with ``touch``)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise errors.StorageError(f"cannot read {path}: {exc.strerror or exc}", details={"file": str(path)}) from None
    try:
        text = raw.decode("utf-8-sig")  # JSON is UTF-8; a byte-order mark (Notepad's) is dropped
        data = json.loads(text) if text.strip() else {}
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise errors.ConfigError(f"{path} is not valid JSON ({exc}); it is left as it is: fix it (comments are "
                                 f"not JSON), or add the entry `pal mcp install {client.name} --print` shows by "
                                 "hand", details={"file": str(path)}) from None
    if not isinstance(data, dict):
        raise errors.ConfigError(f"{path} holds a JSON {type(data).__name__}, not an object; it is left as it is",
                                 details={"file": str(path)})
    if not isinstance(data.get(client.key, {}), dict):
        raise errors.ConfigError(f"{path}: {client.key!r} is not an object; the file is left as it is",
                                 details={"file": str(path), "key": client.key})
    return raw, data


def merged(data: dict[str, Any], key: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``entry`` as server ``name``: other keys and servers kept, in their order; an existing entry
    of that name keeps the keys we do not write (its ``env``, say)."""
    servers = dict(data.get(key) or {})
    old = servers.get(name)
    servers[name] = {**old, **entry} if isinstance(old, dict) else entry
    return {**data, key: servers}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def install(client_name: str, scope: str | None, name: str, line: list[str], *, print_only: bool) -> dict[str, Any]:
    """Merge the server into the client's file (or, with ``print_only``, only say what would be merged); what was
    done, as data: ``file``, ``entry``, ``changed``, ``backup``."""
    client, scope = client_of(client_name, scope)
    name = name.strip()
    if not name:
        raise errors.InvalidParams("--name is empty: name the server entry (default palimpsest)",
                                   details={"errors": [{"loc": ["--name"], "msg": "empty"}]})
    path = client.files[scope]().expanduser().absolute()
    entry = entry_of(client, line)
    report = {"client": client.name, "title": client.title, "scope": scope, "file": str(path), "key": client.key,
              "name": name, "entry": entry, "changed": False, "backup": None}
    if print_only:
        return report
    raw, data = read_config(path, client)
    new = merged(data, client.key, name, entry)
    if raw is not None and new == data:
        return report  # already there as asked: nothing written, no backup
    target = Path(os.path.realpath(path))  # through a symbolic link (dotfile managers): the link stays
    mode = target.stat().st_mode & 0o777 if raw is not None else None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise errors.StorageError(f"cannot create {target.parent}: {exc.strerror or exc}",
                                  details={"file": str(path)}) from None
    if raw is not None:
        report["backup"] = str(path) + ".bak"
        write_new(Path(str(target) + ".bak"), True, lambda tmp: _fill(tmp, raw, mode))

    def fill(tmp: Path) -> None:
        _fill(tmp, dumps(new).encode("utf-8"), mode)
        if _current(target) != raw:  # the app (or you) saved it meanwhile: keep that, do not overwrite it
            raise errors.Conflict(f"{path} changed while pal was writing it; it is left as it is: run the command "
                                  "again", details={"file": str(path)})

    write_new(target, True, fill)
    report["changed"] = True
    return report


def _fill(tmp: Path, content: bytes, mode: int | None) -> None:
    tmp.write_bytes(content)
    if mode is not None:
        os.chmod(tmp, mode)  # the temporary file is private; the replaced file keeps the mode it had


def _current(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def describe(report: dict[str, Any]) -> str:
    """What was done, in words, for the terminal."""
    entry = report["entry"]
    line = " ".join([entry["command"], *entry["args"]])
    where = f"{report['file']} ({report['title']}, {report['scope']} scope)"
    if not report["changed"]:
        return f"{where} already has MCP server {report['name']!r} as given; nothing written\n  {line}"
    said = f"wrote MCP server {report['name']!r} to {where}\n  {line}"
    if report["backup"]:
        said += f"\n  the previous file is kept as {report['backup']}"
    return said + f"\n  restart {report['title']} (or reload its MCP servers) to use it"


def snippet(report: dict[str, Any]) -> str:
    """``--print``: the part of the file the entry goes into, as JSON to paste."""
    return dumps({report["key"]: {report["name"]: report["entry"]}})

"""``pal export``, ``pal backup`` and ``pal restore``: a user's data out of and back into a store (ADR 0018).

Registered by :func:`register` from ``cli.py``; ``pal import palimpsest FILE`` sits beside the memory pack's other
import formats. Export and import page through the portable packs' sub-handlers (runtime/portable.py), so they
run against a local store; backup goes through the server when one holds the database.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from palimpsest_memory.runtime import errors, portable
from palimpsest_memory.runtime.compact import copy_database

PROG = "palimpsest"


def register(app: typer.Typer, session: Callable[[], Any]) -> None:
    @app.command("export")
    def export_cmd(file: str = typer.Argument(..., help="The JSONL file to write ('-' for stdout)."),
                   ) -> None:
        """Export a namespace (--namespace, default the configured one) as versioned JSONL: notes, vectors,
        audit trail, tombstones, the kg with its full history, the brain's posteriors, events and serves."""
        s = session()
        if s.server:
            raise errors.InvalidParams("export reads the store directly: stop the server or use `pal backup`, "
                                       "which goes through it")
        rt = s.runtime()
        if file == "-":
            n = portable.export_namespace(rt, sys.stdout, s.namespace)
            print(f"{n} records", file=sys.stderr)
            return
        tmp = Path(file + ".part")
        with tmp.open("w", encoding="utf-8") as out:
            n = portable.export_namespace(rt, out, s.namespace)
        tmp.replace(file)
        print(json.dumps({"records": n, "file": file}) if s.as_json else f"{n} records written to {file}")

    @app.command("backup")
    def backup_cmd(dest: str = typer.Argument(..., help="The file to write the copy to (must not exist).")) -> None:
        """Copy the whole store consistently, also while `pal serve` holds it (through --server)."""
        s = session()
        target = Path(dest).expanduser()
        if target.exists():
            raise errors.Conflict(f"{target} exists: back up into a new file")
        if s.server:
            from palimpsest_memory.runtime.adapters.remote import RemoteClient

            made = Path(RemoteClient(s.server).call("memory.backup", {"name": target.name}, actor=s.actor)["path"])
        else:
            made = Path(s.runtime().call("memory.backup", {"name": target.name}, actor=s.actor).path)
        if made.exists():  # the server's copy is on this machine: move it where it was asked for
            shutil.move(str(made), target)
            made = target
        size = made.stat().st_size if made.exists() else None
        print(json.dumps({"path": str(made), "bytes": size}) if s.as_json else
              f"backup written to {made}" + (f" ({size} bytes)" if size is not None else " (on the server's host)"))

    @app.command("restore")
    def restore_cmd(src: str = typer.Argument(..., help="A file made by `pal backup`."),
                    force: bool = typer.Option(False, "--force", help="Replace an existing database.")) -> None:
        """Replace the database (--db) with a backup; the running server must be stopped first."""
        s = session()
        if s.server:
            raise errors.InvalidParams("restore replaces the database file: stop the server that holds it first")
        from palimpsest_memory.runtime import Runtime

        source = Path(src).expanduser()
        if not source.is_file():
            raise errors.NotFound(f"no backup file {source}")
        probe = Runtime.open(source)  # a store palimpsest can open (and migrate): refuse anything else
        probe.close()
        if s.db:
            target = Path(s.db).expanduser()
        else:
            from palimpsest_memory.runtime import load_catalog

            target = Path(str(load_catalog()[1].get("runtime", {}).get("database", ":memory:"))).expanduser()
        if str(target) == ":memory:":
            raise errors.InvalidParams("restore needs a database file: pass --db PATH")
        if target.exists() and not force:
            raise errors.Conflict(f"{target} exists: pass --force to replace it with the backup")
        tmp = target.with_name(target.name + ".restore")
        copy_database(source, tmp)
        tmp.replace(target)
        Path(f"{target}.wal").unlink(missing_ok=True)
        print(json.dumps({"restored": str(target)}) if s.as_json else f"{target} restored from {source}")


def import_palimpsest(session: Any, file: str, namespace: Optional[str]) -> dict[str, Any]:
    """``pal import palimpsest FILE``: see runtime/portable.py."""
    return portable.import_file(session.runtime(), file, namespace)

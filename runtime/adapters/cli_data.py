"""``pal export``, ``pal backup`` and ``pal restore``: a user's data out of and back into a store (ADR 0018).

Registered by :func:`register` from ``cli.py``. ``pal import palimpsest FILE`` is the memory pack's command,
beside its other import formats. Export and import page through the portable packs' sub-handlers
(runtime/exportfile.py), so they run against a local store; backup goes through the server when one holds the database.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from palimpsest_memory.runtime import errors

PROG = "palimpsest"


def register(app: typer.Typer, session: Callable[[], Any]) -> None:
    @app.command("export")
    def export_cmd(file: str = typer.Argument(..., help="The JSONL file to write ('-' for stdout), or a format "
                                                        "followed by its target: `markdown DIR`."),
                   dest: Optional[str] = typer.Argument(None, help="After `markdown`: the folder to write."),
                   force: bool = typer.Option(False, "--force", help="Replace FILE if it exists (never the store's "
                                                                      "own files); write into a non-empty DIR."),
                   ) -> None:
        """Export a namespace (--namespace, default the configured one) as versioned JSONL: notes, vectors,
        audit trail, tombstones, the kg with its full history, the brain's posteriors, events and serves.
        `pal export markdown DIR` writes an Obsidian-friendly folder instead: one file per note, kg facts per
        entity."""
        from palimpsest_memory.runtime.newfile import check_target, write_new

        s = session()
        if dest is not None:  # `pal export FORMAT TARGET`
            if file == "markdown":
                export_markdown_cmd(s, dest, force)
                return
            if file != "palimpsest":
                raise errors.InvalidParams(f"unknown export format {file!r}: `pal export FILE`, `pal export "
                                           "palimpsest FILE` or `pal export markdown DIR`")
            file = dest
        if s.server:  # the server that holds the database writes the export (GET /v1/export)
            if file == "-":
                raise errors.InvalidParams("export through --server writes a file: name one instead of '-'")
            target = check_target(file, force, files_of(s.db))
            size = write_new(target, force, lambda tmp: s.client().export_to(str(tmp), s.namespace))
            print(json.dumps({"bytes": size, "file": file}) if s.as_json else f"{size} bytes written to {file}")
            return
        if file == "-":
            n = exportfile().export_namespace(s.runtime(), sys.stdout, s.namespace)
            print(f"{n} records", file=sys.stderr)
            return
        # checked before the store opens when --db names it (a refused export then leaves no trace), and always by
        # the open store itself (a database named by the config file is known only once it is open)
        if s.db:
            check_target(file, force, files_of(s.db))
        rt = s.runtime()
        target = check_target(file, force, rt.store.owns_file)

        def write(tmp: Path) -> int:
            with tmp.open("w", encoding="utf-8") as out:
                return int(exportfile().export_namespace(rt, out, s.namespace))

        n = write_new(target, force, write)
        print(json.dumps({"records": n, "file": file}) if s.as_json else f"{n} records written to {file}")

    @app.command("copy")
    def copy_cmd(src: str = typer.Argument(..., help="The store to copy from: a DuckDB file or a postgresql:// URL."),
                 dst: str = typer.Argument(..., help="The empty store to copy into: a new DuckDB file or an empty "
                                                     "PostgreSQL database (postgresql:// URL)."),
                 ) -> None:
        """Copy every namespace of every pack from SRC into the empty store DST, between a DuckDB file and a
        PostgreSQL database in either direction (or file to file), through the export/import format."""
        copy_stores(session(), src, dst)

    @app.command("grants")
    def grants_cmd(role: str = typer.Argument(..., help="The PostgreSQL role to let in (it must exist)."),
                   read_only: bool = typer.Option(False, "--read-only", help="Reading only: recall, list, export.")
                   ) -> None:
        """Print the SQL that lets a database role other than the owner open this PostgreSQL store (run it as the
        owner, e.g. with psql). The owner opens the store first: it creates and migrates the schemas."""
        s = session()
        statements = s.runtime().grants(role, read_only=read_only)
        print(json.dumps({"role": role, "read_only": read_only, "statements": statements}) if s.as_json
              else "\n".join(statements))

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
        from palimpsest_memory.runtime import describe_store, is_store_file, load_catalog, restore_file

        target = describe_store(s.db or str(load_catalog()[1].get("runtime", {}).get("database", ":memory:")))
        if target == ":memory:":
            raise errors.InvalidParams("restore needs a database file: pass --db PATH")
        if is_store_file(target) and Path(target).exists() and not force:
            raise errors.Conflict(f"{target} exists: pass --force to replace it with the backup")
        restore_file(source, target)
        print(json.dumps({"restored": str(target)}) if s.as_json else f"{target} restored from {source}")



def export_markdown_cmd(s: Any, dest: str, force: bool) -> None:
    """``pal export markdown DIR`` (runtime/adapters/export_markdown.py), locally or through --server."""
    from palimpsest_memory.runtime.adapters.export_markdown import export_markdown

    owner = None if s.server else s.runtime().store.owns_file  # the store, its WAL, snapshots, backups
    out = export_markdown(lambda verb, params: s.call(verb, params), dest, force, owner)
    print(json.dumps(out) if s.as_json else f"{out['notes']} notes, {out['edges']} links and {out['facts']} facts "
          f"of {out['entities']} entities written to {out['folder']}")


def files_of(db: Optional[str]) -> Optional[Callable[[Path], Optional[str]]]:
    """What a path is to the store ``--db`` names (see Store.owns_file); None without --db. DuckDB is imported
    only when there is a store to ask about (``pal --server URL export F`` needs none)."""
    if not db:
        return None
    from palimpsest_memory.runtime import store_file_of

    return lambda path: store_file_of(db, path)


def exportfile() -> Any:
    """runtime/exportfile.py, imported when a command runs: `pal --help` loads no DuckDB or pydantic (issue 20)."""
    from palimpsest_memory.runtime import exportfile as module

    return module


def copy_stores(s: Any, src: str, dst: str) -> None:
    """``pal copy``: see runtime/storecopy.py. A DuckDB DST this command created is removed again if the copy
    fails; a PostgreSQL DST keeps what was written (it says so)."""
    from palimpsest_memory.runtime import Runtime
    from palimpsest_memory.runtime.storecopy import copy_store, describe, is_file

    if s.server:
        raise errors.InvalidParams("copy opens both stores itself: stop the server that holds SRC, or copy from "
                                   "a PostgreSQL URL, which many processes may open at once")

    def local(target: str) -> Optional[Path]:
        return Path(target).expanduser().resolve() if is_file(target) else None

    if src == ":memory:" or dst == ":memory:":
        raise errors.InvalidParams("copy needs two stored databases, not :memory:")
    if (local(src) or describe(src)) == (local(dst) or describe(dst)):
        raise errors.InvalidParams("SRC and DST are the same store")
    src_path, dst_path = local(src), local(dst)
    if src_path is not None and not src_path.is_file():
        raise errors.NotFound(f"no store at {src_path}")
    created = dst_path is not None and not dst_path.exists()
    source = target = None
    try:
        source = Runtime.open(str(src_path or src))
        target = Runtime.open(str(dst_path or dst))
        report = copy_store(source, target, spool_dir=str(dst_path.parent) if dst_path else None,
                            progress=None if s.as_json else
                            lambda ns, n: print(f"  {ns}: {n} records", file=sys.stderr))
    except BaseException as exc:
        if target is not None:
            target.close()
            target = None
        if created and dst_path is not None:
            for leftover in (dst_path, Path(f"{dst_path}.wal")):
                leftover.unlink(missing_ok=True)
        elif dst_path is None and not isinstance(exc, errors.Conflict):
            print(f"palimpsest: the copy stopped part way; {describe(dst)} may hold part of it: "
                  "drop and create that database again before retrying", file=sys.stderr)
        raise
    finally:
        for rt in (source, target):
            if rt is not None:
                rt.close()
    out = {"source": describe(src), "destination": describe(dst), "records": report.records,
           "namespaces": {ns: sum(sum(t.values()) for t in packs.values()) for ns, packs in report.namespaces.items()},
           "not_copied": report.not_copied, "seconds": round(report.seconds, 3)}
    if s.as_json:
        print(json.dumps(out))
    else:
        print(f"{report.records} records in {len(report.namespaces)} namespaces copied from {out['source']} to "
              f"{out['destination']} in {out['seconds']} s")
        if report.not_copied:
            print(f"not copied (packs without export/import): {', '.join(report.not_copied)}")

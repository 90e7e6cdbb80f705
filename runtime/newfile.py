"""A file the user names, written whole or not at all, never over something by surprise (issue 46, F7).

``pal export FILE`` used to write ``FILE.part`` and rename it over ``FILE``, whatever ``FILE`` was: another
export, a document, or the store itself (``pal --db s.duckdb export s.duckdb`` replaced the database with JSONL).
:func:`check_target` refuses, before anything is written, an existing file without ``force`` and, even with it,
any of the store's own files (the caller says which those are: :meth:`Store.owns_file`); :func:`write_new` writes
to a temporary file beside the target and then publishes it: without ``force`` through a hard link, which fails
if the name was taken meanwhile (no check-then-write window), with ``force`` by rename. Stdlib only: the
``--server`` client uses it too.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Optional, TypeVar

from palimpsest_memory.runtime.errors import Conflict, InvalidParams

T = TypeVar("T")
Owner = Callable[[Path], Optional[str]]


def check_target(file: str | Path, force: bool, owner: Optional[Owner] = None) -> Path:
    """The path to write, or a typed error: the store's own files never (InvalidParams), an existing file only
    with ``force`` (Conflict), a folder never (InvalidParams)."""
    target = Path(file).expanduser()
    what = owner(target) if owner is not None else None
    if what is not None:
        raise InvalidParams(f"{target} is {what} of the store (--db): write the export somewhere else; "
                            "--force never replaces the store's own files", details={"path": str(target)})
    if target.is_dir():
        raise InvalidParams(f"{target} is a folder: name a file", details={"path": str(target)})
    if not force and (target.exists() or target.is_symlink()):
        raise Conflict(f"{target} exists: pass --force to replace it", details={"path": str(target)})
    return target


def write_new(target: Path, force: bool, write: Callable[[Path], T]) -> T:
    """``write(tmp)`` fills a temporary file beside ``target``; then it takes ``target``'s name (see the module).
    On any failure the temporary file is removed and ``target`` is as it was."""
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as exc:
        raise InvalidParams(f"cannot write {target}: {exc.strerror or exc}", details={"path": str(target)}) from None
    os.close(fd)
    tmp = Path(name)
    try:
        result = write(tmp)
        if force:
            os.replace(tmp, target)
        else:
            try:
                os.link(tmp, target)  # fails if the name exists, atomically
            except FileExistsError:
                raise Conflict(f"{target} exists: pass --force to replace it", details={"path": str(target)}) from None
            except OSError:  # a file system without hard links: the check before is the best there is
                if target.exists():
                    raise Conflict(f"{target} exists: pass --force to replace it",
                                   details={"path": str(target)}) from None
                os.replace(tmp, target)
    except OSError as exc:
        raise InvalidParams(f"cannot write {target}: {exc.strerror or exc}", details={"path": str(target)}) from None
    finally:
        tmp.unlink(missing_ok=True)
    return result

"""``pal copy SRC DST``: every portable pack's data from one store into another, across backends (issue 14 item 5,
ADR 0018).

One mechanism, the export/import path of :mod:`palimpsest_memory.runtime.exportfile`: for each namespace of SRC (the
union of what every portable pack holds), the namespace is exported as the versioned JSONL format into a spool file and
imported into DST by :func:`palimpsest_memory.runtime.exportfile.import_file` — the same records, the same checks (the
whole namespace is checked against DST before anything of it is written), ids preserved. The spool gives both import
passes (check, then write) the same records even when other processes keep writing SRC.

DST must be empty: no portable pack may hold a row of any namespace there (a fresh DuckDB file, or a PostgreSQL
database palimpsest never wrote, or one emptied with ``memory.forget everything``); anything else is a Conflict
before a byte is written. Packs that are loaded but not portable are not copied and are named in the result.
Derived data (the full-text snapshot) is rebuilt by DST; the change log and idempotency keys of SRC are
operational state and are not copied.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from palimpsest_memory.runtime import exportfile, storage
from palimpsest_memory.runtime.errors import Conflict, InvalidParams

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime


@dataclass
class CopyReport:
    namespaces: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # ns -> pack -> type -> rows
    records: int = 0
    not_copied: list[str] = field(default_factory=list)  # loaded packs that are not portable
    seconds: float = 0.0


def is_file(target: str) -> bool:
    """Whether a store target names a file (else a database server's URL)."""
    return storage.is_store_file(target)


def describe(target: str) -> str:
    """The store as it may be printed: a URL without its credentials, or the path."""
    return storage.describe_store(target)


def store_namespaces(rt: "Runtime") -> list[str]:
    """Every namespace that holds rows of any portable pack of ``rt`` (asked of each pack: the runtime never reads
    a pack's tables itself)."""
    found: set[str] = set()
    for pack in exportfile.portable_packs(rt):
        res = rt.call(f"{pack}.export_records", {"namespaces": True}, internal=True)
        found.update(res.namespaces or [])
    return sorted(found)


def copy_store(src: "Runtime", dst: "Runtime", *, spool_dir: Optional[str] = None,
               progress: Optional[Callable[[str, int], None]] = None) -> CopyReport:
    """Copy every namespace of every portable pack from ``src`` into the empty store ``dst``."""
    start = time.perf_counter()
    packs = exportfile.portable_packs(src)
    missing = [p for p in packs if p not in exportfile.portable_packs(dst)]
    if missing:
        raise InvalidParams(f"the destination does not load the portable packs {missing}: load the same packs on "
                            "both sides")
    held = store_namespaces(dst)
    if held:
        raise Conflict(f"the destination is not empty: it holds the namespaces {held[:10]}"
                       f"{' …' if len(held) > 10 else ''}; copy into an empty store (a new file or database)",
                       details={"namespaces": held[:100]})
    report = CopyReport(not_copied=sorted(p for p in src.catalog.packs if p not in packs))
    with tempfile.TemporaryDirectory(prefix="pal-copy-", dir=spool_dir) as folder:
        spool = Path(folder) / "namespace.jsonl"
        for ns in store_namespaces(src):
            with spool.open("w", encoding="utf-8") as out:
                n = exportfile.export_namespace(src, out, ns)
            report.namespaces[ns] = exportfile.import_file(dst, spool, ns)
            report.records += n
            if progress is not None:
                progress(ns, n)
    report.seconds = time.perf_counter() - start
    return report

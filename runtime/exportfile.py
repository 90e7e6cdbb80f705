"""The export file: a namespace as versioned JSONL, written and read by the runtime (issue 17, item 4; ADR 0018).

:func:`export_namespace` writes the file by paging every portable pack's ``export_records`` (packs in dependency
order); :func:`import_file` writes it into an empty namespace in one transaction (every pack's ``import_records``
calls share it: all or nothing). The packs' half, the rows each pack pages out and writes back, is
:mod:`palimpsest_memory.runtime.portable`.

The file (format ``palimpsest-export``, version 1): a header line ``{"format", "version", "namespace",
"exported_at", "packs": {name: {"version", "schema"}}}``, then one line per row ``{"pack", "type", "data"}``
(``data``: the row's columns; timestamps ISO 8601, blobs base64, JSON columns as JSON text), then a trailer
``{"end": true, "records": N}`` so a truncated file is refused. Ids are preserved: the target namespace must be
empty and the ids free in the target store (a fresh store, or another store's unused ids); the namespace may
be renamed.
"""
from __future__ import annotations

import json
import re
from array import array
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterator, Optional

import numpy as np

from palimpsest_memory.runtime.errors import InvalidParams, PackLoadError
from palimpsest_memory.runtime.portable import PAGE

if TYPE_CHECKING:
    from palimpsest_memory.runtime.engine import Runtime

FORMAT = "palimpsest-export"
VERSION = 1


def portable_packs(rt: "Runtime") -> list[str]:
    """The packs that declare ``portable=True``, in dependency order (a pack after those it requires)."""
    packs = rt.catalog.packs
    out: list[str] = []

    def visit(name: str) -> None:
        if name in out or name not in packs:
            return
        for req in packs[name].requires:
            visit(req)
        if getattr(packs[name], "portable", False):
            for verb in ("export_records", "import_records"):
                if f"{name}.{verb}" not in {v.full_name for v in rt.verbs(include_subhandlers=True)}:
                    raise PackLoadError(f"pack {name!r} is portable but has no {name}.{verb} verb")
            out.append(name)

    for name in sorted(packs):
        visit(name)
    return out


def export_namespace(rt: "Runtime", out: IO[str], namespace: Optional[str] = None,
                     exported_at: Optional[datetime] = None) -> int:
    """Write the namespace as JSONL to ``out``; returns the number of records."""
    ns = namespace or rt.default_namespace
    packs = portable_packs(rt)
    versions = rt.schema_versions()
    header = {"format": FORMAT, "version": VERSION, "namespace": ns,
              "exported_at": (exported_at or rt.clock()).isoformat(),
              "packs": {p: {"version": rt.catalog.packs[p].version, "schema": versions.get(p, 0)} for p in packs}}
    out.write(json.dumps(header) + "\n")
    n = 0
    for pack in packs:
        cursor: Optional[str] = None
        while True:
            page = rt.call(f"{pack}.export_records", {"cursor": cursor, "limit": PAGE}, namespace=ns, internal=True)
            for r in page.records:
                out.write(json.dumps({"pack": pack, "type": r.type, "data": r.data}, ensure_ascii=False) + "\n")
            n += len(page.records)
            cursor = page.next_cursor
            if cursor is None:
                break
    out.write(json.dumps({"end": True, "records": n}) + "\n")
    return n


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line as a JSON object; a line that is not UTF-8, not JSON, nested too deeply for the parser
    or not an object is an InvalidParams naming it (issue 46, item 6: these were tracebacks)."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise InvalidParams(f"cannot read {path}: {exc.strerror or exc}") from None
    with f:
        for no, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8-sig" if no == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidParams(f"{path}:{no}: not UTF-8 (byte {exc.start} of the line)",
                                    details={"line": no}) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidParams(f"{path}:{no}: not JSON ({exc.msg})", details={"line": no}) from None
            except RecursionError:
                raise InvalidParams(f"{path}:{no}: nested too deeply to be a record", details={"line": no}) from None
            if not isinstance(obj, dict):
                raise InvalidParams(f"{path}:{no}: a line must be a JSON object", details={"line": no})
            yield no, obj


def read_header(path: Path) -> dict[str, Any]:
    for no, obj in _lines(path):
        if obj.get("format") != FORMAT:
            raise InvalidParams(f"{path}:{no}: not a palimpsest export (no format {FORMAT!r} header)",
                                details={"line": no})
        if obj.get("version") != VERSION:
            raise InvalidParams(f"{path}:{no}: export format version {obj.get('version')!r}; this palimpsest "
                                f"reads version {VERSION}", details={"line": no})
        if not isinstance(obj.get("packs", {}), dict) or not isinstance(obj.get("namespace", ""), (str, type(None))):
            raise InvalidParams(f"{path}:{no}: the header's packs must be an object and its namespace a string",
                                details={"line": no})
        return obj
    raise InvalidParams(f"{path}: empty file")


def _batches(path: Path, packs: list[str]) -> Iterator[tuple[str, list[dict[str, Any]], list[int]]]:
    """(pack, records, their line numbers) in file order, at most PAGE per batch; the trailer must close the file."""
    seen, ended, pack, batch, lines = 0, False, None, [], []
    for no, obj in _lines(path):
        if "format" in obj:
            continue
        if ended:
            raise InvalidParams(f"{path}:{no}: a line after the end marker", details={"line": no})
        if obj.get("end") is True:
            if obj.get("records") != seen:
                raise InvalidParams(f"{path}:{no}: the end marker counts {obj.get('records')} records, the file "
                                    f"holds {seen}", details={"line": no})
            ended = True
            continue
        if obj.get("pack") not in packs or not isinstance(obj.get("type"), str) or \
                not isinstance(obj.get("data"), dict):
            raise InvalidParams(f"{path}:{no}: a record needs pack (one of {packs}), type and data",
                                details={"line": no})
        if (obj["pack"] != pack or len(batch) >= PAGE) and batch:
            yield pack, batch, lines  # type: ignore[misc]
            batch, lines = [], []
        pack = obj["pack"]
        batch.append({"type": obj["type"], "data": obj["data"]})
        lines.append(no)
        seen += 1
    if not ended:
        raise InvalidParams(f"{path}: no end marker: the file is truncated")
    if batch:
        yield pack, batch, lines  # type: ignore[misc]


def _line_of(message: str, batch: list[dict[str, Any]], lines: list[int]) -> str:
    """The file line a batch error is about ("<type> record j": the j-th record of that type), else the range."""
    m = re.search(r"(?:^|: )(?:(\w+) )?record (\d+)", message)
    if m:
        kind, j = m.group(1), int(m.group(2))
        picked = [ln for r, ln in zip(batch, lines) if kind is None or r["type"] == kind]
        if j < len(picked):
            return str(picked[j])
    return f"{lines[0]}-{lines[-1]}"


def import_file(rt: "Runtime", path: str | Path, namespace: Optional[str] = None) -> dict[str, dict[str, int]]:
    """Import an export into ``namespace`` (default: the one it was exported from), all or nothing: every pack's
    ``import_records`` calls share ONE transaction (``Runtime.call_all``) — each pack first checks that the
    namespace is empty, then the whole file is checked (:func:`check_file`: nothing is written until the last line
    has been read), then every batch is written, then each pack advances its sequences past the imported ids and
    reloads its mirrors — and it commits only once the whole file is in. A bad line, a key repeated anywhere in the
    file, an id already used in the store, or a process killed part way leaves the store as it was: no partial
    namespace, no imported id a sequence could hand out again, no other process's mirror behind the tables (issue
    41), and the same import retried once the file is right succeeds (issue 46, F5)."""
    path = Path(path)
    header = read_header(path)
    ns = namespace or header.get("namespace") or rt.default_namespace
    packs = portable_packs(rt)
    missing = [p for p in header.get("packs") or {} if p not in packs]
    if missing:
        raise InvalidParams(f"the export holds data of packs that are not loaded here: {missing}")

    def write(call: Any) -> dict[str, dict[str, int]]:
        keys: dict[str, dict[str, list[str]]] = {}
        for pack in packs:  # before a row is written: every pack finds the namespace empty, and says its keys
            keys[pack] = call(f"{pack}.import_records", {"records": [], "first": True}).keys
        check_file(path, packs, keys)
        counts: dict[str, dict[str, int]] = {}
        for pack, batch, lines in _batches(path, packs):
            try:
                res = call(f"{pack}.import_records", {"records": batch})
            except InvalidParams as exc:  # name the line: "record 3" / "<type> record 3" of this batch
                where = _line_of(exc.message, batch, lines)
                raise InvalidParams(f"{path}:{where}: {exc.message}", details={"line": where}) from None
            for k, v in res.imported.items():
                counts.setdefault(pack, {})[k] = counts.get(pack, {}).get(k, 0) + v
        for pack in packs:
            call(f"{pack}.import_records", {"finish": True})
        return counts

    return rt.call_all(write, namespace=ns, internal=True)


def check_file(path: Path, packs: list[str], keys: dict[str, dict[str, list[str]]]) -> int:
    """Pass 1 of an import, which writes nothing: every line is a record of a loaded pack and a type it knows, the
    end marker closes the file, and no two records of a type share its key (a repeated id in a later batch used to
    be found only once the batches before it were written). Keys are kept as 64-bit hashes (8 bytes a record, not
    a Python set of millions of tuples); hashes seen twice are confirmed by a second read that keeps only those
    keys, so a collision of hashes is never reported as a repeat. Returns the number of records."""
    hashes = array("q")
    for pack, batch, lines in _batches(path, packs):
        known = keys.get(pack, {})
        for r, no in zip(batch, lines):
            if r["type"] not in known:
                raise InvalidParams(f"{path}:{no}: {pack} has no record type {r['type']!r} (known: {sorted(known)})",
                                    details={"line": no})
            hashes.append(hash(_key(pack, r, known)))
    if len(hashes) < 2:
        return len(hashes)
    h = np.sort(np.frombuffer(hashes, dtype=np.int64))
    twice = set(h[1:][h[1:] == h[:-1]].tolist())
    if twice:
        first: dict[tuple[Any, ...], int] = {}
        for pack, batch, lines in _batches(path, packs):
            for r, no in zip(batch, lines):
                key = _key(pack, r, keys[pack])
                if hash(key) not in twice:
                    continue
                if key in first:
                    cols = ", ".join(keys[pack][r["type"]])
                    raise InvalidParams(f"{path}:{no}: {pack} {r['type']} ({cols}) {_shown(key[2])} repeats line "
                                        f"{first[key]}: a key is imported once (nothing was imported)",
                                        details={"line": no, "first_line": first[key]})
                first[key] = no
    return len(hashes)


def _key(pack: str, record: dict[str, Any], known: dict[str, list[str]]) -> tuple[Any, ...]:
    values = (record["data"].get(c) for c in known[record["type"]])
    return pack, record["type"], tuple(v if isinstance(v, (str, int, float, bool, type(None))) else
                                       json.dumps(v, sort_keys=True) for v in values)


def _shown(values: tuple[Any, ...]) -> str:
    return repr(values[0]) if len(values) == 1 else repr(values)

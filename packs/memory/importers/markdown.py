"""A Markdown (or Obsidian) folder → notes, and its ``[[links]]`` → memory edges (issue 42, item 5). Pure parsing.

One note per file: a note is what recall returns whole, and a file is what its author wrote as one thing. A file
whose text is longer than :data:`SPLIT_CHARS` and has headings is cut at its shallowest heading level instead,
one note per section (the heading kept as the section's first line), so a 40-page document does not come back
whole for one sentence in it; a file ``pal export markdown`` wrote (front matter ``id``) is never cut, it was one
note. ``*.md`` and ``*.markdown`` files are read; folders whose name starts with a dot (``.obsidian``, ``.trash``,
``.git``) are not, nor files whose front matter says ``palimpsest: entity`` (the kg pages ``pal export
markdown`` writes: facts, not notes).

YAML front matter, a small subset read without a YAML library (the project has none): ``key: value``,
``key: [a, b]`` and ``- item`` lists; nested maps are ignored. Used keys: ``tags`` (plus inline ``#tags``),
``time``/``date``/``created`` (else the file's mtime), ``title`` and ``aliases`` (link targets), ``scope``,
``thread``, ``kind``, ``memory_type``, ``key``, and one key per memory relation (``supports: ["[[Other]]"]``).
Scope: front matter, else ``--scope``, else the folder's name; thread: front matter, else the file's path in the
folder without its extension.

Links: ``[[Target]]``, ``[[Target|shown]]``, ``[[Target#Heading]]`` in a section become ``related_to`` edges from
its note to the target's note (the section under that heading when the target was cut), the relation keys of the
front matter edges of that relation. A target is found as Obsidian does: by path, then by file name, title or
alias (the shortest path wins a tie). Links to nothing (notes not written yet, images) are counted, not errors.

Idempotency key: front matter ``key``, else ``markdown:<scope>:<path>`` (``#<n>`` for the n-th section):
importing the folder again replays it; a file edited since is refused as a conflict naming it (a key with other
content), never stored twice.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from palimpsest_memory.packs.memory.importers.conversations import DEFAULT_CONTENT_CHARS, _bad, file_bound
from palimpsest_memory.packs.memory.models.notes import utc_naive
from palimpsest_memory.runtime import errors

SPLIT_CHARS = 4000  # longer files with headings are cut into sections (about a page of text)
SUFFIXES = (".md", ".markdown")
RELATIONS = ("supports", "contradicts", "supersedes", "triggered_by", "related_to")
TIME_KEYS = ("time", "date", "created")
LINK = re.compile(r"!?\[\[([^\]|#]*)(?:#([^\]|]*))?(?:\|[^\]]*)?\]\]")
TAG = re.compile(r"(?<![\w/#&\[])#([A-Za-z_][\w/-]*)")  # not a heading ("# x"), an anchor, an entity
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)


@dataclass
class Section:
    where: str  # "notes/a.md" or "notes/a.md section 'Plan'"
    loc: list[Any]
    path: str  # the file's path in the folder (posix)
    heading: str | None
    note: dict[str, Any]
    links: list[tuple[str, str, str | None]] = field(default_factory=list)  # (relation, target, heading)
    names: list[str] = field(default_factory=list)  # the file's title and aliases (link targets too)


@dataclass
class Vault:
    sections: list[Section]
    links: list[tuple[int, int, str]]  # (source section, target section, relation), by index into sections
    skipped: int = 0  # files with nothing to import (empty, kg pages)
    unresolved: int = 0  # links to no file of the folder


def _scalar(v: str) -> Any:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] == '"':
        try:
            return json.loads(v)  # what `pal export markdown` writes: a JSON string, YAML's double-quoted form
        except ValueError:
            return v[1:-1]
    if len(v) >= 2 and v[0] == v[-1] == "'":
        return v[1:-1].replace("''", "'")
    return None if v in ("", "~", "null") else v


def parse_front_matter(lines: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    key = None
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t-":
            item = line.strip()
            if key is not None and item.startswith("-"):
                prev = out.get(key)
                out[key] = (prev if isinstance(prev, list) else []) + [_scalar(item[1:])]
            continue  # a nested map's line: not a key this importer reads
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"front matter line {line.strip()!r} is not 'key: value'")
        key, value = name.strip(), value.strip()
        if value.startswith("[") and value.endswith("]") and not value.startswith("[["):
            out[key] = [_scalar(v) for v in value[1:-1].split(",") if v.strip()]
        else:
            out[key] = _scalar(value)
    return out


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, text
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return parse_front_matter([ln.rstrip("\r") for ln in lines[1:i]]), "\n".join(lines[i + 1:])
    return {}, text  # no closing line: a thematic break at the top, not front matter


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value))
    return [str(v).strip().lstrip("#") for v in items if v is not None and str(v).strip().lstrip("#")]


def _given(fm: dict[str, Any], key: str, default: str) -> str | None:
    if key not in fm:
        return default
    return None if fm[key] is None else str(fm[key])


def _time(fm: dict[str, Any], mtime: float) -> datetime:
    for k in TIME_KEYS:
        if fm.get(k) is not None:
            value = str(fm[k])
            try:
                return utc_naive(datetime.fromisoformat(value.replace("Z", "+00:00")))
            except ValueError:
                raise ValueError(f"front matter {k}: {value!r} is not an ISO 8601 date or time") from None
    return datetime.fromtimestamp(mtime, timezone.utc).replace(tzinfo=None)


def _cut(body: str) -> list[tuple[str | None, str]]:
    """(heading, text) sections at the body's shallowest heading level; fenced code is never cut."""
    masked = FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), body)  # same offsets, no headings inside
    heads = list(HEADING.finditer(masked))
    if not heads:
        return [(None, body)]
    level = min(len(m.group(1)) for m in heads)
    cuts = [m for m in heads if len(m.group(1)) == level]
    out = [(None, body[: cuts[0].start()])]
    for m, nxt in zip(cuts, cuts[1:] + [None]):
        out.append((m.group(2), body[m.start(): nxt.start() if nxt else len(body)]))
    return [(h, t) for h, t in out if t.strip()]


def _key(scope: str, path: str, n: int | None) -> str:
    key = f"markdown:{scope}:{path}" + (f"#{n}" if n is not None else "")
    if len(key) <= 256:
        return key
    return f"markdown:{hashlib.sha256(key.encode()).hexdigest()}"  # a deep path: still stable, still unique


def read_file(root: Path, file: Path, scope: str, max_bytes: int) -> tuple[list[Section], bool]:
    """The sections of one file (and whether it was skipped as having nothing to import)."""
    rel = file.relative_to(root).as_posix()
    try:
        with open(file, "rb") as f:
            raw = f.read(max_bytes + 1)
        mtime = file.stat().st_mtime
    except OSError as exc:
        raise errors.InvalidParams(f"cannot read {file}: {exc}") from None
    if len(raw) > max_bytes:
        raise _bad(rel, "the file", f"is larger than {max_bytes} bytes", ["file", rel])
    try:
        fm, body = split_front_matter(raw.decode("utf-8-sig").replace("\r\n", "\n"))
        if fm.get("palimpsest") == "entity" or not body.strip():
            return [], True
        # a key given as null (`pal export markdown` of a note without scope or thread) stays null
        sc = _given(fm, "scope", scope)
        common = {"occurred_at": _time(fm, mtime), "scope": sc,
                  "thread": _given(fm, "thread", rel.rsplit(".", 1)[0]),
                  "tags": list(dict.fromkeys(_strings(fm.get("tags")) + TAG.findall(FENCE.sub("", body)))),
                  **{k: fm[k] for k in ("kind", "memory_type") if fm.get(k) is not None}}
        cut = len(body) > SPLIT_CHARS and fm.get("id") is None
        parts = _cut(body) if cut else [(None, body)]
    except UnicodeDecodeError as exc:
        raise _bad(rel, "the file", f"is not UTF-8 (byte {exc.start})", ["file", rel]) from None
    except ValueError as exc:
        raise _bad(rel, "the file", str(exc), ["file", rel]) from None
    out = []
    for n, (heading, text) in enumerate(parts):
        one = len(parts) == 1
        key = str(fm["key"]) if one and fm.get("key") else _key(sc or "", rel, None if one else n)
        where = rel if heading is None else f"{rel} section {heading!r}"
        sec = Section(where, ["file", rel] + ([] if heading is None else ["section", heading]), rel, heading,
                      {**common, "content": text.strip(), "key": key,
                       "source_id": rel if heading is None else f"{rel}#{heading}"})
        sec.links = [("related_to", m.group(1).strip(), m.group(2)) for m in LINK.finditer(FENCE.sub("", text))]
        if n == 0:  # the front matter's title, aliases and relations belong to the file's first note
            aliases = fm.get("aliases")
            sec.names = [str(v) for v in [fm.get("title"), *(aliases if isinstance(aliases, list) else [aliases])]
                         if v is not None and str(v).strip()]
            sec.links += [(r, m.group(1).strip(), m.group(2)) for r in RELATIONS
                          for m in LINK.finditer(str(fm.get(r) or ""))]
        out.append(sec)
    return out, False


def parse_vault(root: str | Path, scope: str | None = None, max_bytes: int | None = None) -> Vault:
    """Every note of the folder (files in path order) and the links between them, resolved."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise errors.InvalidParams(f"{root} is not a folder: `pal import markdown` reads a folder of .md files",
                                   details={"errors": [{"loc": ["path"], "msg": "not a folder"}]})
    limit = file_bound(DEFAULT_CONTENT_CHARS) if max_bytes is None else max_bytes
    files = []
    for folder, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        files += [Path(folder) / n for n in names if n.lower().endswith(SUFFIXES) and not n.startswith(".")]
    vault = Vault([], [])
    default_scope = scope or base.resolve().name or "markdown"
    for file in sorted(files, key=lambda p: p.relative_to(base).as_posix()):
        sections, skipped = read_file(base, file, default_scope, limit)
        vault.sections += sections
        vault.skipped += skipped
    _resolve(vault)
    return vault


def _resolve(vault: Vault) -> None:
    """Links → (source, target, relation) by section index, as Obsidian finds a link's file."""
    first: dict[str, int] = {}  # path → its first section
    names: dict[str, list[str]] = {}  # lower-cased name, title, alias or path (no extension) → paths
    for i, sec in enumerate(vault.sections):
        if sec.path in first:
            continue
        first[sec.path] = i
        stem = sec.path.rsplit(".", 1)[0]
        for name in {stem, stem.rsplit("/", 1)[-1]}:
            names.setdefault(name.lower(), []).append(sec.path)
    for path, i in first.items():  # titles and aliases rank after paths and file names
        for name in vault.sections[i].names:
            names.setdefault(name.strip().lower(), [path])
    heads = {(s.path, (s.heading or "").lower()): i for i, s in enumerate(vault.sections)}
    seen: set[tuple[int, int, str]] = set()
    for i, sec in enumerate(vault.sections):
        for relation, target, heading in sec.links:
            target = target.rsplit(".md", 1)[0] if target.lower().endswith(".md") else target
            paths = names.get(target.lower()) if target else [sec.path]
            if not paths:
                vault.unresolved += 1
                continue
            path = min(paths, key=lambda p: (p.count("/"), p))
            j = heads.get((path, heading.strip().lower()), first[path]) if heading else first[path]
            if j != i and (i, j, relation) not in seen:
                seen.add((i, j, relation))
                vault.links.append((i, j, relation))

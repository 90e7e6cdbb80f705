"""``pal export markdown DIR``: a namespace as a folder Obsidian opens (issue 42, item 5).

One file per live note, ``notes/<scope>/<slug of the text>-<id>.md``: YAML front matter (id, time, scope, thread,
tags, kind, memory_type, key, source) and the text, word for word, as the body; the note's memory edges as front
matter lists of ``"[[file]]"`` links, one list per relation (``related_to: ["[[…]]"]``), which Obsidian shows as
links and ``pal import markdown`` reads back as edges. The kg's current facts, grouped by subject, one page per
entity: ``entities/<name>.md`` with ``predicate:: [[object]]`` lines (Dataview's inline fields), marked
``palimpsest: entity`` so that importing the folder back does not take facts for notes.

Archived and superseded notes are left out (this is a folder to read; ``pal export FILE`` keeps everything). The
folder is read through verb calls page by page (so it works through ``--server`` too), not as one snapshot: a
note remembered meanwhile may be missing, never half written. An existing non-empty DIR is refused unless
``--force`` (which writes over files of the same name and deletes nothing), a folder holding any of the store's
own files always; a new folder is written beside DIR and renamed into place, so a failed export leaves none.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from palimpsest_memory.runtime.errors import Conflict, InvalidParams

PAGE = 1000
RELATIONS = ("supports", "contradicts", "supersedes", "triggered_by", "related_to")
Call = Callable[[str, dict[str, Any]], Any]


def slug(text: str, most: int = 50) -> str:
    """A file-name-safe, readable stem: words (any script) joined by '-', none of Obsidian's forbidden marks."""
    words = re.findall(r"\w+", text.lower())
    out = "-".join(words)[:most].strip("-_")
    return out or "note"


def _q(value: Any) -> str:
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _time(value: str) -> str:
    return value if value.endswith("Z") else value + "Z"


def check_folder(folder: Path, force: bool, owner: Optional[Callable[[Path], Optional[str]]]) -> None:
    if folder.exists() and not folder.is_dir():
        raise InvalidParams(f"{folder} is a file: name a folder for the Markdown export", details={"path": str(folder)})
    if not folder.exists():
        return
    if owner is not None:
        for dirpath, _, names in os.walk(folder):
            for name in names:
                what = owner(Path(dirpath) / name)
                if what is not None:
                    raise InvalidParams(f"{folder} holds {what} of the store ({Path(dirpath) / name}): write the "
                                        "export somewhere else; --force never writes among the store's files",
                                        details={"path": str(folder)})
    if not force and any(folder.iterdir()):
        raise Conflict(f"{folder} is not empty: pass --force to write into it (files of the same name are "
                       "replaced, nothing is deleted)", details={"path": str(folder)})


def _pages(call: Call, verb: str, params: dict[str, Any], items: str, cursor: str, after: str) -> Iterator[dict]:
    token: Any = None
    while True:
        page = call(verb, {**params, **({after: token} if token is not None else {})})
        yield from page[items]
        token = page.get(cursor)
        if token is None:
            return


def _note_file(note: dict[str, Any], links: dict[str, list[str]]) -> str:
    lines = ["---", f"id: {note['id']}", f"time: {_time(note['occurred_at'])}"]
    for field in ("scope", "thread"):  # null said, or an import would give the folder's name, the file's path
        lines.append(f"{field}: {_q(note[field]) if note.get(field) is not None else 'null'}")
    if note.get("tags"):
        lines += ["tags:"] + [f"  - {_q(t)}" for t in note["tags"]]
    lines.append(f"kind: {note.get('kind') or 'none'}")  # 'none' said, or an import would guess one
    lines.append(f"memory_type: {note['memory_type']}")
    for field, name in (("key", "key"), ("source_id", "source")):
        if note.get(field) is not None:
            lines.append(f"{name}: {_q(note[field])}")
    for relation in RELATIONS:
        if links.get(relation):
            lines.append(f"{relation}: [{', '.join(_q(f'[[{t}]]') for t in links[relation])}]")
    return "\n".join(lines + ["---", note["content"].strip(), ""])


def _entity_file(name: str, facts: list[dict[str, Any]], stems: dict[str, str]) -> str:
    lines = ["---", "palimpsest: entity", f"name: {_q(name)}", "---", f"# {name}", ""]
    for f in facts:
        obj = f"[[{stems.get(f['object'], slug(f['object'], 80))}|{f['object']}]]" \
            if f.get("object_id") is not None else f["object"]  # an entity: a link (a page to create if none)
        window = " → ".join(w[:10] if w else "…" for w in (f.get("valid_from"), f.get("valid_to"))) \
            if f.get("valid_from") or f.get("valid_to") else ""
        lines.append(f"- {f['predicate']}:: {obj}" + (f" ({window})" if window else ""))
    return "\n".join(lines + [""])


def write_markdown(call: Call, folder: Path) -> dict[str, int]:
    """Write the notes and entity pages into ``folder`` (which exists); returns counts."""
    notes = list(_pages(call, "memory.list", {"limit": PAGE}, "notes", "next_cursor", "cursor"))
    stems = {n["id"]: f"{slug(n['content'])}-{n['id']}" for n in notes}
    links: dict[int, dict[str, list[str]]] = {}
    edges = 0
    for e in _pages(call, "kg.list_edges", {"node_prefix": "m:", "limit": PAGE}, "edges", "next_after_id",
                    "after_id"):
        src, dst = int(e["src"][2:]), int(e["dst"][2:])
        if src in stems and dst in stems and e["relation"] in RELATIONS:
            links.setdefault(src, {}).setdefault(e["relation"], []).append(stems[dst])
            edges += 1
    for n in notes:
        sub = folder / "notes" / (slug(n["scope"]) if n.get("scope") else "_no-scope")
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"{stems[n['id']]}.md").write_text(_note_file(n, links.get(n["id"], {})), encoding="utf-8")
    by_subject: dict[str, list[dict[str, Any]]] = {}
    for f in _pages(call, "kg.facts", {"limit": PAGE}, "facts", "next_cursor", "cursor"):
        by_subject.setdefault(f["subject"]["name"], []).append(f)
    entity_stems: dict[str, str] = {}
    for name in sorted(by_subject):
        stem = slug(name, 80)
        taken = stem in entity_stems.values()
        entity_stems[name] = f"{stem}-{by_subject[name][0]['subject']['id']}" if taken else stem
    if by_subject:
        (folder / "entities").mkdir(exist_ok=True)
    for name, facts in by_subject.items():
        (folder / "entities" / f"{entity_stems[name]}.md").write_text(
            _entity_file(name, facts, entity_stems), encoding="utf-8")
    return {"notes": len(notes), "edges": edges, "entities": len(by_subject),
            "facts": sum(len(v) for v in by_subject.values())}


def export_markdown(call: Call, dest: str, force: bool,
                    owner: Optional[Callable[[Path], Optional[str]]] = None) -> dict[str, Any]:
    folder = Path(dest).expanduser()
    check_folder(folder, force, owner)
    if folder.exists() and any(folder.iterdir()):  # --force: into the folder itself
        return {**write_markdown(call, folder), "folder": str(folder)}
    parent = folder.parent if str(folder.parent) else Path(".")
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".part", dir=parent))
    except OSError as exc:
        raise InvalidParams(f"cannot write {folder}: {exc.strerror or exc}", details={"path": str(folder)}) from None
    try:
        counts = write_markdown(call, tmp)
        if folder.exists():
            folder.rmdir()  # empty (checked): the new folder takes its place
        os.replace(tmp, folder)
    except OSError as exc:
        raise InvalidParams(f"cannot write {folder}: {exc.strerror or exc}", details={"path": str(folder)}) from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return {**counts, "folder": str(folder)}

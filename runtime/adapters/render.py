"""How results and errors look on a terminal: JSON with --json, readable tables otherwise."""
from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from runtime import PalimpsestError

MAX_CELL = 120


def to_jsonable(result: Any) -> Any:
    return result.model_dump(mode="json") if hasattr(result, "model_dump") else result


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and ISO_TIME.match(value):
        return ISO_TIME.sub(r"\1 \2", value)  # a timestamp to the minute: --json has the rest
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


MAX_COLUMNS = 8
# Rows that carry a text (a note's content, a fact's object…) are read for that text: it comes last and takes the
# width left by at most TEXT_COMPANIONS short columns, chosen in this order when present.
TEXT_COLUMNS = ("content", "text", "note.content")
COMPANIONS = ("id", "note.id", "score", "occurred_at", "note.occurred_at", "kind", "note.kind", "scope",
              "note.scope", "tags", "note.tags", "salience")
TEXT_COMPANIONS = 5
ISO_TIME = __import__("re").compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(\.\d+)?)?$")


def _flatten(row: dict[str, Any]) -> dict[str, Any]:
    """Top-level scalars first, then nested objects one level down as ``parent.key``."""
    flat = {k: v for k, v in row.items() if not isinstance(v, dict)}
    for k, v in row.items():
        if isinstance(v, dict):
            flat.update({f"{k}.{kk}": vv for kk, vv in v.items() if not isinstance(vv, dict)})
    return flat


def print_table(rows: list[dict[str, Any]], title: str | None = None, console: Console | None = None) -> None:
    """A table of the rows: empty and (past two rows) constant columns are dropped and at most 8 shown.

    ``--json`` shows everything.
    """
    console = console or Console(soft_wrap=True)
    rows = [_flatten(r) for r in rows]
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    cols = [c for c in cols if any(r.get(c) not in (None, "", [], {}) for r in rows)]
    if len(rows) > 2:  # a column with one value for every row says nothing a table needs to repeat
        cols = [c for c in cols if len({json.dumps(r.get(c), default=str) for r in rows}) > 1]
    text = next((c for c in TEXT_COLUMNS if c in cols), None)
    if text is not None:
        cols = [c for c in COMPANIONS if c in cols][:TEXT_COMPANIONS] + [text]
    cols = cols[:MAX_COLUMNS]
    table = Table(title=title, show_lines=False)
    for c in cols:
        head = c.split(".", 1)[1] if c.startswith("note.") else c  # recall's hits: the note's fields, unprefixed
        if text is None:
            table.add_column(head, overflow="fold")
        elif c == text:
            table.add_column(head, overflow="fold", ratio=1, min_width=20)
        else:
            table.add_column(head, no_wrap=True, overflow="ellipsis", max_width=16)
    for row in rows:
        table.add_row(*[_cell(row.get(c, "")) for c in cols])
    console.print(table)


def print_result(data: Any) -> None:
    """Lists of objects become tables; everything else ``key: value`` lines."""
    console = Console(soft_wrap=True)
    if not isinstance(data, dict):
        console.print(_cell(data))
        return
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            print_table(value, title=key, console=console)
        elif isinstance(value, list) and not value:
            console.print(f"[bold]{key}[/bold]: (none)")
        else:
            console.print(f"[bold]{key}[/bold]: {escape(_cell(value))}", highlight=False)


def print_error(err: PalimpsestError, as_json: bool) -> None:
    if as_json:
        print_json(err.to_dict())
        return
    console = Console(stderr=True, soft_wrap=True)
    console.print(f"[red]error[/red] ({err.code}): {escape(err.message)}", highlight=False)
    for e in (err.details or {}).get("errors", []) if isinstance(err.details, dict) else []:
        loc = ".".join(str(p) for p in e.get("loc", [])) or "(params)"
        console.print(f"  {escape(loc)}: {escape(str(e.get('msg', '')))}", highlight=False)

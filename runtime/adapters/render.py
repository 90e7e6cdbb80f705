"""How results and errors look on a terminal: JSON with --json, readable text otherwise.

- Rows that carry a text (a note's ``content``…) print as cards: one compact header line (id, score, time, kind,
  scope, tags), the text wrapped to the terminal, and a score breakdown on one line when there is one. They read at
  80 columns.
- Rows that are facts (``object`` with ``valid_from``/``valid_to``) print as a timeline, one line per fact, grouped
  by subject and predicate, as the demo prints them.
- Other lists of objects are tables; a single object is ``key: value`` lines.
- On a terminal tables have borders and keys are bold; piped (not a terminal), the same text comes without colour,
  borders or box-drawing characters, so it greps and diffs.
Timestamps are UTC and say so (``2026-01-12 09:30Z``; whole days print as the date); ``--json`` has the full value.
rich is imported only when something is printed (``pal --help`` never pays for it).
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
from typing import Any

from palimpsest_memory.runtime.errors import PalimpsestError

MAX_CELL = 120
MAX_COLUMNS = 8
# Rows that carry a text are read for that text (cards).
TEXT_COLUMNS = ("content", "text", "note.content")
CARD_HEADER = ("id", "note.id", "score", "occurred_at", "note.occurred_at", "kind", "note.kind", "scope",
               "note.scope", "tags", "note.tags")
ISO_TIME = re.compile(r"^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)(:\d\d(\.\d+)?)?(Z|[+-]00:00)?$")
MIDNIGHT = re.compile(r"^(\d{4}-\d\d-\d\d)T00:00(:00(\.0+)?)?(Z|[+-]00:00)?$")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def when(value: Any) -> str:
    """A UTC timestamp to the minute with its zone (``2026-01-12 09:30Z``), a whole day as its date."""
    if not isinstance(value, str):
        return "now" if value is None else str(value)
    if MIDNIGHT.match(value):
        return value[:10]
    m = ISO_TIME.match(value)
    return f"{m.group(1)} {m.group(2)}Z" if m else value


def _cell(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and ISO_TIME.match(value):
        return when(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        text = ", ".join(str(v) for v in value)
    else:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = text.replace("\n", " ")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def _flatten(row: dict[str, Any]) -> dict[str, Any]:
    """Top-level scalars first, then nested objects one level down as ``parent.key``."""
    flat = {k: v for k, v in row.items() if not isinstance(v, dict)}
    for k, v in row.items():
        if isinstance(v, dict):
            flat.update({f"{k}.{kk}": vv for kk, vv in v.items() if not isinstance(vv, dict)})
    return flat


class Out:
    """Where text goes: a rich console on a terminal, plain lines otherwise."""

    def __init__(self, stderr: bool = False) -> None:
        stream = sys.stderr if stderr else sys.stdout
        self.stream = stream
        self.terminal = bool(getattr(stream, "isatty", lambda: False)())
        self.width = max(40, shutil.get_terminal_size((80, 24)).columns)
        self._console: Any = None

    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stream, soft_wrap=True, width=self.width,
                                    force_terminal=self.terminal, no_color=not self.terminal,
                                    highlight=False)
        return self._console

    def line(self, text: str = "", style: str | None = None) -> None:
        if self.terminal and style:
            from rich.markup import escape

            self.console.print(f"[{style}]{escape(text)}[/{style}]")
        else:
            self.stream.write(text + "\n")

    def pair(self, key: str, value: str, indent: str = "") -> None:
        if self.terminal:
            from rich.markup import escape

            self.console.print(f"{indent}[bold]{escape(key)}[/bold]: {escape(value)}")
        else:
            self.stream.write(f"{indent}{key}: {value}\n")


# -- tables ---------------------------------------------------------------------------------------------------
def print_table(rows: list[dict[str, Any]], title: str | None = None, out: Out | None = None,
                keep: tuple[str, ...] = ()) -> None:
    """A table of the rows: empty and (past two rows) constant columns are dropped and at most 8 shown.

    ``--json`` shows everything.
    """
    out = out or Out()
    rows = [_flatten(r) for r in rows]
    cols: list[str] = []
    for row in rows:
        cols.extend(k for k in row if k not in cols)
    cols = [c for c in cols if any(r.get(c) not in (None, "", [], {}) for r in rows)]
    if len(rows) > 2:  # a column with one value for every row says nothing a table needs to repeat
        cols = [c for c in cols if c in keep or len({json.dumps(r.get(c), default=str) for r in rows}) > 1]
    cols = cols[:MAX_COLUMNS]
    if not out.terminal:  # plain, aligned columns: no borders, no colour
        cells = [[_cell(r.get(c, "")) for c in cols] for r in rows]
        widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
        if title:
            out.line(title)
        for row in [cols] + cells:
            out.line("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
        return
    from rich.table import Table

    table = Table(title=title, show_lines=False, title_justify="left")
    for c in cols:
        table.add_column(c, overflow="fold")
    for row in rows:
        table.add_row(*[_cell(row.get(c, "")) for c in cols])
    out.console.print(table)


# -- cards: rows read for their text --------------------------------------------------------------------------
def _text_column(rows: list[dict[str, Any]]) -> str | None:
    keys = set().union(*(r.keys() for r in rows)) if rows else set()
    return next((c for c in TEXT_COLUMNS if c in keys), None)


def _compact(breakdown: dict[str, Any]) -> str:
    """A score breakdown on one line: its numbers, short names, two decimals; nested numbers one level down."""
    parts = []
    for key, value in breakdown.items():
        if isinstance(value, bool) or key in ("formula", "score", "weights"):
            continue
        if key == "age_days" and isinstance(value, (int, float)):
            parts.append(f"age {value:.1f} d")
        elif isinstance(value, (int, float)):
            parts.append(f"{key.replace('effective_', '').replace('_match', '')} {value:.2f}")
        elif isinstance(value, dict):
            inner = [f"{k} {v:.2f}" for k, v in value.items() if isinstance(v, (int, float)) and v]
            if inner:
                parts.append(f"{key} ({', '.join(inner)})")
    return " · ".join(parts)


def print_cards(rows: list[dict[str, Any]], title: str | None = None, out: Out | None = None) -> None:
    out = out or Out()
    text_col = _text_column([_flatten(r) for r in rows]) or "content"
    if title:
        out.line(f"{title} ({len(rows)})", "bold")
    indent = "    "
    for raw in rows:
        row = _flatten(raw)
        head = []
        for c in CARD_HEADER:
            v = row.get(c)
            if v in (None, "", []):
                continue
            if c.endswith("id"):
                head.append(f"#{v}")
            elif c == "score":
                head.append(f"{v:.3f}" if isinstance(v, float) else str(v))
            elif c.endswith("tags"):
                head.append(" ".join(f"#{t}" for t in v) if isinstance(v, list) else str(v))
            else:
                head.append(_cell(v))
        if row.get("superseded_by") or row.get("note.superseded_by"):
            head.append(f"(superseded by #{row.get('superseded_by') or row.get('note.superseded_by')})")
        out.line("  ".join(head), "bold cyan")
        text = str(row.get(text_col) or "")
        for para in text.splitlines() or [""]:
            for line in textwrap.wrap(para, width=max(20, out.width - len(indent))) or [""]:
                out.line(indent + line)
        breakdown = raw.get("breakdown")
        if isinstance(breakdown, dict):
            for line in textwrap.wrap(_compact(breakdown), width=max(20, out.width - len(indent))):
                out.line(indent + line, "dim")


# -- facts: a timeline ----------------------------------------------------------------------------------------
def _is_fact(row: dict[str, Any]) -> bool:
    return "object" in row and "predicate" in row and "valid_from" in row and "valid_to" in row


def print_timeline(rows: list[dict[str, Any]], title: str | None = None, out: Out | None = None) -> None:
    """Facts grouped by (subject, predicate), one line each: object, from → until, and where it came from."""
    out = out or Out()
    if title:
        out.line(f"{title} ({len(rows)})", "bold")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        subject = row.get("subject")
        name = subject.get("name") if isinstance(subject, dict) else str(subject or "")
        groups.setdefault((name, str(row.get("predicate"))), []).append(row)
    for (subject, predicate), facts in groups.items():
        out.line(f"{subject} {predicate}".strip(), "bold cyan")
        width = min(24, max(len(str(f.get("object"))) for f in facts))
        for f in facts:
            obj = str(f.get("object"))
            obj = obj if len(obj) <= width else obj[: width - 1] + "…"
            start = when(f.get("valid_from")) if f.get("valid_from") else "always"
            line = f"  {obj:<{width}}  {start:<10} → {when(f.get('valid_to')):<10}"
            extra = []
            if f.get("fact_id") is not None:
                extra.append(f"fact {f['fact_id']}")
            if f.get("source_id"):
                extra.append(f"source {f['source_id']}")
            if f.get("superseded_by"):
                extra.append(f"superseded by fact {f['superseded_by']}")
            if f.get("retracted_at"):
                extra.append(f"retracted {when(f['retracted_at'])}")
            out.line(line + ("   " + ", ".join(extra) if extra else ""))


# -- results --------------------------------------------------------------------------------------------------
def print_rows(rows: list[dict[str, Any]], title: str | None = None, out: Out | None = None) -> None:
    out = out or Out()
    if all(_is_fact(r) for r in rows):
        print_timeline(rows, title, out)
    elif _text_column([_flatten(r) for r in rows]):
        print_cards(rows, title, out)
    else:
        print_table(rows, title, out)


def print_result(data: Any, out: Out | None = None) -> None:
    """Lists of objects become cards, timelines or tables; a nested object its own block; the rest
    ``key: value`` lines."""
    out = out or Out()
    if not isinstance(data, dict):
        out.line(_cell(data))
        return
    if _is_fact(data) or _text_column([_flatten(data)]) in ("content", "text"):
        print_rows([data], None, out)
        return
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            print_rows(value, key, out)
        elif isinstance(value, list) and not value:
            out.pair(key, "(none)")
        elif isinstance(value, dict) and (_is_fact(value) or _text_column([value])):
            out.line(f"{key}:", "bold")
            print_rows([value], None, out)
        elif isinstance(value, dict):
            out.line(f"{key}:", "bold")
            for k, v in value.items():
                if v not in (None, "", [], {}):
                    out.pair(k, _cell(v), indent="  ")
        else:
            out.pair(key, _cell(value))


def print_error(err: PalimpsestError, as_json: bool) -> None:
    if as_json:
        print_json(err.to_dict())
        return
    out = Out(stderr=True)
    out.line(f"error ({err.code}): {err.message}", "red")
    for e in (err.details or {}).get("errors", []) if isinstance(err.details, dict) else []:
        loc = ".".join(str(p) for p in e.get("loc", [])) or "(params)"
        out.line(f"  {loc}: {e.get('msg', '')}")

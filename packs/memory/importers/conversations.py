"""Importers: conversations → notes (one note per turn). Pure parsing, bounded and streaming; the import verbs
(``packs/memory/import_verbs.py``) write what they yield in one transaction.

LoCoMo format (a list of samples with ``conversation.session_N`` turn lists and ``session_N_date_time``) and a
generic JSONL chat format, one JSON object per line::

    {"speaker": "Ada", "text": "We go with Postgres.", "timestamp": "2026-03-02T10:15:00", "thread": "kickoff"}

(``thread`` and ``scope`` optional; ``timestamp`` ISO 8601). Each turn becomes ``"<speaker>: <text>"`` plus
`` [image: <caption>]`` when an image was shared, with ``occurred_at`` from the session date/timestamp,
``scope`` = the conversation, ``thread`` = the session, ``source_id`` = the turn id, and an idempotency key so
re-importing a file adds nothing.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

from palimpsest_memory.packs.memory.engine.dates import MONTH_NAMES
from palimpsest_memory.packs.memory.models.notes import utc_naive
from palimpsest_memory.runtime import errors

LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
MONTHS = {m.lower(): i for i, m in enumerate(MONTH_NAMES) if m}  # lower-cased month name → its number


@dataclass
class Turn:
    speaker: str
    text: str
    occurred_at: datetime
    thread: str
    turn_id: str
    caption: str | None = None

    def content(self) -> str:
        base = f"{self.speaker}: {self.text}"
        return f"{base} [image: {self.caption}]" if self.caption else base


@dataclass
class Conversation:
    scope: str
    speakers: list[str]
    turns: list[Turn] = field(default_factory=list)

    def notes(self, key_prefix: str) -> list[dict[str, Any]]:
        return [{"content": t.content(), "occurred_at": t.occurred_at.isoformat(), "scope": self.scope,
                 "thread": t.thread, "source_id": t.turn_id, "key": f"{key_prefix}:{self.scope}:{t.turn_id}"}
                for t in self.turns]


def parse_locomo_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → datetime(2023, 5, 8, 13, 56)."""
    m = LOCOMO_DATE.match(text or "")
    if not m or m.group(5).lower() not in MONTHS:
        raise errors.InvalidParams(f"not a LoCoMo session date: {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    if not 1 <= int(hour) <= 12:  # a 12-hour clock: "13:56 pm" or "0:15 am" is not a time
        raise errors.InvalidParams(f"not a LoCoMo session date: {text!r} (hour {hour} on a 12-hour clock)")
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    try:
        return datetime(int(year), MONTHS[month.lower()], int(day), h, int(minute))
    except ValueError as exc:  # minute 75, 31 June, 29 February 2023
        raise errors.InvalidParams(f"not a LoCoMo session date: {text!r} ({exc})") from None


def _session_numbers(conv: dict[str, Any]) -> list[int]:
    return sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))


def line_bound(max_content_chars: int) -> int:
    """The longest JSONL line (bytes, newline excluded) an import reads: a note of ``max_content_chars``
    characters written with ``\\uXXXX`` escapes (6 bytes each) plus room for the other fields. A longer line is an
    error naming it, never an unbounded read (``/dev/zero`` has no newline)."""
    return 6 * max_content_chars + 65_536


def file_bound(max_content_chars: int) -> int:
    """The largest LoCoMo file (bytes) an import reads: such a file is one JSON document, read whole."""
    return 2_000 * max_content_chars


DEFAULT_CONTENT_CHARS = 100_000  # [packs.memory] max_content_chars as shipped: the bound of callers without a runtime


def _bad(path: str | Path, where: str, msg: str, loc: list[Any]) -> errors.InvalidParams:
    return errors.InvalidParams(f"{path}: {where} {msg}", details={"errors": [{"loc": loc, "msg": msg}]})


def parse_locomo(path: str | Path, max_bytes: int | None = None) -> list[Conversation]:
    """Every conversation of a LoCoMo-format file (turns whose session has no date are an error)."""
    limit = file_bound(DEFAULT_CONTENT_CHARS) if max_bytes is None else max_bytes
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as exc:
        raise errors.InvalidParams(f"cannot read LoCoMo file {path}: {exc}") from None
    if len(raw) > limit:
        raise _bad(path, "the file", f"is larger than {limit} bytes, the most a LoCoMo file may hold (it is read "
                   "whole); convert it to JSONL, which is read line by line", ["file"])
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise _bad(path, "the file", f"is not UTF-8 (byte {exc.start})", ["file"]) from None
    except json.JSONDecodeError as exc:
        raise errors.InvalidParams(f"cannot read LoCoMo file {path}: {exc}") from None
    except RecursionError:
        raise _bad(path, "the file", "is nested too deeply to be a LoCoMo file", ["file"]) from None
    if not isinstance(data, list):
        raise errors.InvalidParams(f"{path}: a LoCoMo file is a JSON list of samples")
    out = []
    for i, sample in enumerate(data):
        try:
            conv = sample["conversation"]
            c = Conversation(scope=str(sample["sample_id"]), speakers=[conv["speaker_a"], conv["speaker_b"]])
            for n in _session_numbers(conv):
                when = parse_locomo_date(conv[f"session_{n}_date_time"])
                for turn in conv[f"session_{n}"]:
                    c.turns.append(Turn(speaker=turn["speaker"], text=turn["text"], occurred_at=when,
                                        thread=f"session_{n}", turn_id=turn["dia_id"],
                                        caption=turn.get("blip_caption")))
        except (KeyError, TypeError, AttributeError) as exc:  # a malformed sample: say which, not a traceback
            raise errors.InvalidParams(f"{path}: sample {i} is not a LoCoMo conversation: missing or bad {exc}",
                                       details={"errors": [{"loc": ["sample", i], "msg": str(exc)}]}) from None
        out.append(c)
    return out


def iter_jsonl(path: str | Path, scope: str | None = None,
               max_line_bytes: int | None = None) -> Iterator[tuple[int, str, Turn]]:
    """``(line number, scope, turn)`` for each non-blank line of a JSONL chat log, read line by line (the file is
    never held whole). A line that is too long, not UTF-8, not JSON, nested too deeply, or not a chat turn is an
    :class:`errors.InvalidParams` naming it. Scope: the line's ``scope``, else ``scope``, else the file's stem."""
    limit = line_bound(DEFAULT_CONTENT_CHARS) if max_line_bytes is None else max_line_bytes
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise errors.InvalidParams(f"cannot read {path}: {exc}") from None
    t0 = datetime.now(timezone.utc).replace(tzinfo=None)  # the time of turns whose line gives none
    with f:
        n = lineno = 0  # turns so far: default turn ids ("L<n>") count turns, errors name the file's line number
        while True:
            try:
                raw = f.readline(limit + 1)
            except OSError as exc:
                raise errors.InvalidParams(f"cannot read {path}: {exc}") from None
            if not raw:
                return
            lineno += 1
            if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
                raise _bad(path, f"line {lineno}", f"is longer than {limit} bytes, the most an import reads in one "
                           "line (6 × [packs.memory] max_content_chars + 64 KiB)", ["line", lineno])
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise _bad(path, f"line {lineno}", f"is not UTF-8 (byte {exc.start} of the line)",
                           ["line", lineno]) from None
            if not line.strip():
                continue
            n += 1
            yield lineno, *_turn(path, lineno, line, n, scope, t0)


def _text_of(content: Any) -> str:
    """OpenAI-style content: a string, or a list of parts of which the ``text`` ones are kept."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p["text"]) for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise ValueError("content is neither text nor a list of parts")


def _when(obj: dict, n: int, t0: datetime) -> datetime:
    """The line's ``timestamp`` (or ``created_at``); a chat log without times (OpenAI-style messages) gets the
    import's clock, one millisecond apart per turn, so the order of the file is the order of the notes."""
    stamp = obj.get("timestamp") or obj.get("created_at")
    if stamp is None:
        return t0 + timedelta(milliseconds=n)
    return utc_naive(datetime.fromisoformat(str(stamp)))


def _turn(path: str | Path, lineno: int, line: str, n: int, scope: str | None, t0: datetime) -> tuple[str, Turn]:
    """One chat turn: ``{speaker, text, timestamp?}`` lines, or OpenAI-style ``{role, content, name?}`` messages."""
    try:
        obj = json.loads(line)
        sc = str(obj.get("scope") or scope or Path(path).stem)
        if "role" in obj and "content" in obj and "text" not in obj:  # an OpenAI-style chat message
            speaker, text = str(obj.get("name") or obj["role"]), _text_of(obj["content"])
        else:
            speaker, text = str(obj["speaker"]), str(obj["text"])
        if not text.strip():
            raise ValueError("the turn has no text")
        turn = Turn(speaker=speaker, text=text, occurred_at=_when(obj, n, t0),
                    thread=str(obj.get("thread") or "main"), turn_id=str(obj.get("id") or f"L{n}"),
                    caption=obj.get("caption"))
    except RecursionError:
        raise _bad(path, f"line {lineno}", "is not a chat turn: nested too deeply", ["line", lineno]) from None
    except (json.JSONDecodeError, KeyError, ValueError, TypeError, AttributeError) as exc:
        raise errors.InvalidParams(f"{path}: line {lineno} is not a chat turn: {exc}",
                                   details={"errors": [{"loc": ["line", lineno], "msg": str(exc)}]}) from None
    return sc, turn


def parse_jsonl(path: str | Path, scope: str | None = None) -> list[Conversation]:
    """A JSONL chat log in memory, conversations grouped by scope (for tests and small files; an import streams
    with :func:`iter_jsonl` instead)."""
    convs: dict[str, Conversation] = {}
    for _, sc, turn in iter_jsonl(path, scope):
        conv = convs.setdefault(sc, Conversation(scope=sc, speakers=[]))
        if turn.speaker not in conv.speakers:
            conv.speakers.append(turn.speaker)
        conv.turns.append(turn)
    return list(convs.values())

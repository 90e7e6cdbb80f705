"""Importers: conversations → notes (one note per turn). Pure parsing; the CLI hook feeds remember_many.

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
from datetime import datetime
from pathlib import Path
from typing import Any

from packs.memory.models import utc_naive
from runtime import errors

LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)
MONTHS = {m: i for i, m in enumerate(["january", "february", "march", "april", "may", "june", "july", "august",
                                      "september", "october", "november", "december"], start=1)}


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


def parse_locomo(path: str | Path) -> list[Conversation]:
    """Every conversation of a LoCoMo-format file (turns whose session has no date are an error)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise errors.InvalidParams(f"cannot read LoCoMo file {path}: {exc}") from None
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


def parse_jsonl(path: str | Path, scope: str | None = None) -> list[Conversation]:
    """A JSONL chat log; conversations are grouped by each line's ``scope`` (default: the file's stem)."""
    convs: dict[str, Conversation] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise errors.InvalidParams(f"cannot read {path}: {exc}") from None
    n = 0  # turns so far: default turn ids ("L<n>") count turns, errors name the file's line number
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        n += 1
        try:
            obj = json.loads(line)
            sc = str(obj.get("scope") or scope or Path(path).stem)
            turn = Turn(speaker=str(obj["speaker"]), text=str(obj["text"]),
                        occurred_at=utc_naive(datetime.fromisoformat(obj["timestamp"])),
                        thread=str(obj.get("thread") or "main"), turn_id=str(obj.get("id") or f"L{n}"),
                        caption=obj.get("caption"))
        except (json.JSONDecodeError, KeyError, ValueError, TypeError, AttributeError) as exc:
            raise errors.InvalidParams(f"{path}: line {lineno} is not a chat turn: {exc}",
                                       details={"errors": [{"loc": ["line", lineno], "msg": str(exc)}]}) from None
        conv = convs.setdefault(sc, Conversation(scope=sc, speakers=[]))
        if turn.speaker not in conv.speakers:
            conv.speakers.append(turn.speaker)
        conv.turns.append(turn)
    return list(convs.values())

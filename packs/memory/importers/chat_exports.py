"""ChatGPT and Claude.ai data exports → chat turns (issue 42, item 5). Pure parsing; ``import_verbs.py`` writes.

Both services export a zip whose ``conversations.json`` is a JSON list of conversations; the argument may be
that file, the unzipped folder or the zip itself. Each conversation becomes one thread (``"<title> (<first 8
characters of its id>)"``: readable, yet two chats both called "New chat" stay apart), each visible message one
note ``"<speaker>: <text>"`` with the message's time. The speaker is ``user`` or ``assistant`` for both sources
(Claude's ``human`` is the user), so one query finds a person's words whatever app they used.

ChatGPT keeps every edit and regeneration in ``mapping`` (a tree); what the user saw is the branch from
``current_node`` up to the root, so only that branch is read. System, tool and hidden messages, content types
that are not prose or code (browsing displays, reasoning, execution output) and empty messages are skipped and
counted, never errors: they are the service's plumbing, not the user's history. Anything that does not have the
export's shape is an :class:`errors.InvalidParams` naming the file, the conversation and the message.

Idempotency keys (and source ids) are ``<source>:<conversation id>:<message id>``, independent of ``--scope``:
importing the same export again, or a later export that holds the same chats, replays the notes already there.
"""
from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from palimpsest_memory.packs.memory.importers.conversations import Turn, _bad, file_bound, DEFAULT_CONTENT_CHARS
from palimpsest_memory.packs.memory.models.notes import utc_naive
from palimpsest_memory.runtime import errors

EXPORT_FILE = "conversations.json"
CHATGPT_PROSE = ("text", "multimodal_text")  # content types whose string parts are what was said
CLAUDE_SENDERS = {"human": "user", "assistant": "assistant"}


@dataclass
class Message:
    """One visible message: where it is (for errors), its conversation's thread, its turn."""

    where: str
    loc: list[Any]
    conversation: str  # the conversation's id
    turn: Turn

    def note(self, source: str, scope: str) -> dict[str, Any]:
        sid = f"{source}:{self.conversation}:{self.turn.turn_id}"
        return {"content": self.turn.content(), "occurred_at": self.turn.occurred_at, "scope": scope,
                "thread": self.turn.thread, "source_id": sid, "key": sid}


def load_export(path: str | Path, max_bytes: int | None = None) -> Any:
    """The parsed ``conversations.json`` of an export given as the file, its folder or the zip."""
    limit = file_bound(DEFAULT_CONTENT_CHARS) if max_bytes is None else max_bytes
    p = Path(path).expanduser()
    try:
        if p.is_dir():
            if not (p / EXPORT_FILE).is_file():
                raise errors.InvalidParams(f"{path}: the folder holds no {EXPORT_FILE}: name the export's file, "
                                           "folder or zip",
                                           details={"errors": [{"loc": ["file"], "msg": "not an export"}]})
            p = p / EXPORT_FILE
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                names = sorted((n for n in z.namelist() if n.rsplit("/", 1)[-1] == EXPORT_FILE),
                               key=lambda n: (n.count("/"), n))  # the top-level one when there are several
                if not names:
                    raise errors.InvalidParams(f"{path}: the zip holds no {EXPORT_FILE}",
                                               details={"errors": [{"loc": ["file"], "msg": "not an export"}]})
                with z.open(names[0]) as f:
                    raw = f.read(limit + 1)  # bounded: a zip bomb stops here
        else:
            with open(p, "rb") as f:
                raw = f.read(limit + 1)
    except (OSError, zipfile.BadZipFile, RuntimeError) as exc:  # RuntimeError: an encrypted zip member
        raise errors.InvalidParams(f"cannot read export {path}: {exc}") from None
    if len(raw) > limit:
        raise _bad(path, "the file", f"is larger than {limit} bytes, the most an export's {EXPORT_FILE} may hold "
                   "(it is read whole)", ["file"])
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise _bad(path, "the file", f"is not UTF-8 (byte {exc.start})", ["file"]) from None
    except json.JSONDecodeError as exc:
        raise _bad(path, "the file", f"is not JSON: {exc}", ["file"]) from None
    except RecursionError:
        raise _bad(path, "the file", "is nested too deeply to be an export", ["file"]) from None
    if not isinstance(data, list):
        raise _bad(path, "the file", f"is not a chat export: {EXPORT_FILE} holds a JSON list of conversations",
                   ["file"])
    return data


def thread_of(title: Any, cid: str) -> str:
    title = str(title or "").strip()
    return f"{title} ({cid[:8]})" if title else cid


def _epoch(value: Any, fallback: datetime | None) -> datetime:
    if value is None:
        if fallback is None:
            raise ValueError("no create_time on the message nor on its conversation")
        return fallback
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"create_time {value!r} is not seconds since 1970")
    try:
        return datetime.fromtimestamp(value, timezone.utc).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"create_time {value!r} is outside the years 1-9999") from None


def _iso(value: Any, fallback: datetime | None) -> datetime:
    if value is None:
        if fallback is None:
            raise ValueError("no created_at on the message nor on its conversation")
        return fallback
    if not isinstance(value, str):
        raise ValueError(f"created_at {value!r} is not an ISO 8601 time")
    return utc_naive(datetime.fromisoformat(value))


def _visible_branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root down to ``current`` (the branch the user last saw)."""
    if current is None:  # an export without current_node: the newest leaf is the last thing shown
        leaves = [k for k, v in mapping.items() if not v.get("children")]
        current = max(leaves, key=lambda k: ((mapping[k].get("message") or {}).get("create_time") or 0), default=None)
    chain: list[str] = []
    seen: set[str] = set()
    node = current
    while node is not None:
        if node in seen:
            raise ValueError(f"node {node!r} is its own ancestor (a cycle in mapping)")
        if node not in mapping:
            raise ValueError(f"node {node!r} is not in mapping")
        chain.append(node)
        seen.add(node)
        node = mapping[node].get("parent")
    return chain[::-1]


def _chatgpt_text(content: dict[str, Any]) -> str | None:
    """What a message says, or None for content that is not prose or code."""
    ctype = content["content_type"]
    if ctype in CHATGPT_PROSE:
        pieces = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):  # an audio transcription
                pieces.append(part["text"])
            elif isinstance(part, dict) and "image" in str(part.get("content_type", "")):
                pieces.append("[image]")
        return "\n".join(p for p in pieces if p.strip())
    if ctype == "code":  # what the assistant ran: kept, fenced, so it reads as code
        lang = content.get("language")
        return f"```{lang if lang not in (None, 'unknown') else ''}\n{content['text']}\n```" \
            if str(content.get("text") or "").strip() else ""
    return None


def iter_chatgpt(path: str | Path, data: list[Any], skipped: list[int]) -> Iterator[Message]:
    """The visible messages of a ChatGPT ``conversations.json``, conversation by conversation."""
    for i, conv in enumerate(data):
        cid = conv.get("conversation_id") or conv.get("id") if isinstance(conv, dict) else None
        label = f"{path}: conversation {i}" + (f" ({cid})" if cid else "")
        try:
            if not isinstance(cid, str) or not cid:
                raise ValueError("it has no id")
            mapping = conv["mapping"]
            if not isinstance(mapping, dict):
                raise ValueError("mapping is not an object")
            start = _epoch(conv.get("create_time"), None) if conv.get("create_time") is not None else None
            branch = _visible_branch(mapping, conv.get("current_node"))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise errors.InvalidParams(f"{label} is not a ChatGPT conversation: {_why(exc)}",
                                       details={"errors": [{"loc": ["conversation", i], "msg": _why(exc)}]}) from None
        thread = thread_of(conv.get("title"), cid)
        prev = start  # a message without a time takes the one before it: the file's order stays the notes' order
        for node in branch:
            msg = mapping[node].get("message")
            if msg is None:  # the tree's root
                continue
            mid = str(msg.get("id") or node) if isinstance(msg, dict) else node
            where = f"{label} message {mid}"
            try:
                role = msg["author"]["role"]
                meta = msg.get("metadata") or {}
                text = _chatgpt_text(msg["content"])
                if role not in ("user", "assistant") or meta.get("is_visually_hidden_from_conversation") or \
                        text is None or not text.strip():
                    skipped[0] += 1
                    continue
                when = prev = _epoch(msg.get("create_time"), prev)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise errors.InvalidParams(f"{where} is not a ChatGPT message: {_why(exc)}", details={
                    "errors": [{"loc": ["conversation", i, "message", mid], "msg": _why(exc)}]}) from None
            yield Message(where, ["conversation", i, "message", mid], cid,
                          Turn(speaker=role, text=text, occurred_at=when, thread=thread, turn_id=mid))


def _claude_text(m: dict[str, Any]) -> str:
    parts = m.get("content")
    texts = [str(c["text"]) for c in parts or [] if isinstance(c, dict) and c.get("type") == "text" and c.get("text")]
    text = "\n\n".join(texts) if texts else str(m.get("text") or "")  # older exports: only "text"
    names = [a.get("file_name") for a in (m.get("attachments") or []) + (m.get("files") or [])
             if isinstance(a, dict) and a.get("file_name")]
    return "\n".join([text, *(f"[attachment: {n}]" for n in dict.fromkeys(names))]) if names and text.strip() \
        else text


def iter_claude(path: str | Path, data: list[Any], skipped: list[int]) -> Iterator[Message]:
    """The messages of a Claude.ai ``conversations.json`` (tool use, tool results and thinking left out)."""
    for i, conv in enumerate(data):
        cid = conv.get("uuid") if isinstance(conv, dict) else None
        label = f"{path}: conversation {i}" + (f" ({cid})" if cid else "")
        try:
            if not isinstance(cid, str) or not cid:
                raise ValueError("it has no uuid")
            start = _iso(conv["created_at"], None) if conv.get("created_at") is not None else None
            messages = conv["chat_messages"]
            if not isinstance(messages, list):
                raise ValueError("chat_messages is not a list")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise errors.InvalidParams(f"{label} is not a Claude conversation: {_why(exc)}",
                                       details={"errors": [{"loc": ["conversation", i], "msg": _why(exc)}]}) from None
        thread = thread_of(conv.get("name"), cid)
        prev = start
        for j, m in enumerate(messages):
            mid = str(m.get("uuid") or f"#{j}") if isinstance(m, dict) else f"#{j}"
            where = f"{label} message {mid}"
            try:
                if not isinstance(m.get("uuid"), str):
                    raise ValueError("it has no uuid")
                speaker = CLAUDE_SENDERS.get(m["sender"])
                if speaker is None:
                    raise ValueError(f"sender {m['sender']!r} is neither 'human' nor 'assistant'")
                text = _claude_text(m)
                when = prev = _iso(m.get("created_at"), prev)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise errors.InvalidParams(f"{where} is not a Claude message: {_why(exc)}", details={
                    "errors": [{"loc": ["conversation", i, "message", mid], "msg": _why(exc)}]}) from None
            if not text.strip():
                skipped[0] += 1
                continue
            yield Message(where, ["conversation", i, "message", mid], cid,
                          Turn(speaker=speaker, text=text, occurred_at=when, thread=thread, turn_id=mid))


def _why(exc: BaseException) -> str:
    return f"missing {exc}" if isinstance(exc, KeyError) else str(exc)


PARSERS = {"chatgpt": iter_chatgpt, "claude": iter_claude}

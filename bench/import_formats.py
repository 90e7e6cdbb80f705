"""Import throughput of `pal import chatgpt|claude|markdown` (issue 42, item 5) on generated exports.

Generates, in the shapes the services export (see tests/fixtures/imports), a ChatGPT ``conversations.json`` and a
Claude.ai ``conversations.json`` of N messages (conversations of 50 messages; ChatGPT's with a regenerated answer
per conversation off the visible branch and a hidden system message, which the import skips), and a Markdown
folder of N files, each linking to the next. Each is imported into a fresh DuckDB store through
``memory.import_file`` (the path `pal import` takes: parse, check every note, then one transaction), first with
the shipped embedder (wordllama), then with the tests' hashing embedder, each then imported again (a re-import
replays every note).

    python bench/import_formats.py [--messages 10000]

Writes bench/results/import_formats.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from report import write_report  # noqa: E402
from run_all import machine  # noqa: E402

from palimpsest_memory.runtime.testing import open_test_runtime  # noqa: E402

PER_CONVERSATION = 50
T0 = 1772445600.0  # 2026-03-02 10:00 UTC
TOPICS = ["the harbour office", "Orion's database", "the ferry timetable", "the supplier", "the launch date",
          "the VPN", "the budget", "tea and coffee", "the kickoff", "the schema"]


def said(i: int) -> str:
    return f"Message {i} is about {TOPICS[i % len(TOPICS)]} and detail {i % 997} of week {i % 52}."


def chatgpt(n: int) -> list:
    convs = []
    for c in range(0, n, PER_CONVERSATION):
        mapping: dict = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]}}
        mapping["sys"] = {"id": "sys", "parent": "root", "children": [], "message": {
            "id": "sys", "author": {"role": "system"}, "create_time": None, "content": {"content_type": "text",
            "parts": [""]}, "metadata": {"is_visually_hidden_from_conversation": True}, "recipient": "all"}}
        prev = "sys"
        for i in range(c, min(c + PER_CONVERSATION, n)):
            mid = f"m{i}"
            mapping[prev]["children"].append(mid)
            mapping[mid] = {"id": mid, "parent": prev, "children": [], "message": {
                "id": mid, "author": {"role": "user" if i % 2 == 0 else "assistant"}, "create_time": T0 + 60 * i,
                "content": {"content_type": "text", "parts": [said(i)]}, "metadata": {}, "recipient": "all"}}
            if i == c + 1:  # a regenerated answer the user did not keep: off the visible branch
                mapping[prev]["children"].append(f"alt{i}")
                mapping[f"alt{i}"] = {"id": f"alt{i}", "parent": prev, "children": [], "message": {
                    "id": f"alt{i}", "author": {"role": "assistant"}, "create_time": T0 + 60 * i,
                    "content": {"content_type": "text", "parts": ["an answer replaced"]}, "recipient": "all"}}
            prev = mid
        convs.append({"title": f"Chat {c // PER_CONVERSATION}", "create_time": T0 + 60 * c, "mapping": mapping,
                      "current_node": prev, "conversation_id": f"conv-{c}", "id": f"conv-{c}"})
    return convs


def claude(n: int) -> list:
    return [{"uuid": f"conv-{c}", "name": f"Chat {c // PER_CONVERSATION}",
             "created_at": datetime.fromtimestamp(T0 + 60 * c, timezone.utc).isoformat(),
             "chat_messages": [{"uuid": f"m{i}", "sender": "human" if i % 2 == 0 else "assistant", "text": said(i),
                                "content": [{"type": "text", "text": said(i)}],
                                "created_at": datetime.fromtimestamp(T0 + 60 * i, timezone.utc).isoformat()}
                               for i in range(c, min(c + PER_CONVERSATION, n))]}
            for c in range(0, n, PER_CONVERSATION)]


def vault(folder: Path, n: int) -> None:
    for i in range(n):
        sub = folder / f"area-{i % 20}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note {i}.md").write_text(f"---\ntags: [t{i % 30}]\ndate: 2026-03-{1 + i % 28:02d}\n---\n"
                                          f"{said(i)} See [[note {(i + 1) % n}]].\n", encoding="utf-8")


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def run(folder: str, fmt: str, path: Path, embedder: str) -> list[str]:
    config = {"packs": {"memory": {"embedder": embedder}}}
    rt = open_test_runtime(config=config, discover=True, path=f"{folder}/{fmt}-{embedder}.duckdb")
    rows = []
    try:
        for what in ("import", "re-import"):
            before = load()
            start = time.perf_counter()
            res = rt.call("memory.import_file", {"path": str(path), "format": fmt}, internal=True)
            took = time.perf_counter() - start
            edges = f", {res.links:,} edges" if fmt == "markdown" else ""
            rows.append(f"| {fmt} | {embedder} | {what} | {res.notes:,} ({res.created:,} new{edges}) | {took:.2f} s | "
                        f"{res.notes / took:,.0f} | {before} → {load()} |")
            print(rows[-1], flush=True)
    finally:
        rt.close()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--embedders", default="wordllama,hashing")
    args = ap.parse_args()
    folder = tempfile.mkdtemp(prefix="pal-import-formats-")
    n = args.messages
    sources = {"chatgpt": Path(folder) / "chatgpt.json", "claude": Path(folder) / "claude.json",
               "markdown": Path(folder) / "vault"}
    start = time.perf_counter()
    sources["chatgpt"].write_text(json.dumps(chatgpt(n)), encoding="utf-8")
    sources["claude"].write_text(json.dumps(claude(n)), encoding="utf-8")
    vault(sources["markdown"], n)
    made = time.perf_counter() - start
    sizes = {k: (p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*.md")))
             for k, p in sources.items()}
    lines = ["# Import throughput of the ChatGPT, Claude and Markdown importers (issue 42, item 5)", "",
             f"Command: `python bench/import_formats.py --messages {n} --embedders {args.embedders}` — "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {machine()}; load average (1/5/15 min) at the "
             f"start {load()}.", "",
             f"Inputs, generated in {made:.1f} s: a ChatGPT conversations.json of {n:,} visible messages "
             f"({sizes['chatgpt'] / 1e6:.1f} MB; per conversation of {PER_CONVERSATION} also a hidden system "
             f"message and a replaced answer, skipped), a Claude conversations.json of {n:,} messages "
             f"({sizes['claude'] / 1e6:.1f} MB), a Markdown folder of {n:,} files in 20 sub-folders, each with "
             f"front matter and a [[link]] to the next ({sizes['markdown'] / 1e6:.1f} MB; {n:,} edges).", "",
             "Each import is one `memory.import_file` call into a fresh DuckDB file: parse, check every note, then "
             "speakers, notes (embedded, indexed, entity mentions) and edges in one transaction. The re-import "
             "replays every note (nothing new is written; the edges are re-linked).", "",
             "| format | embedder | run | notes | time | notes/s | load before → after |", "|---|---|---|---|---|---|---|"]
    for embedder in args.embedders.split(","):
        for fmt, path in sources.items():
            lines += run(folder, fmt, path, embedder)
    lines += ["", "One run on a 2-core machine shared with other agents: read the figures as orders of magnitude. "
              "wordllama is what `pal import` uses as shipped; the hashing embedder (the tests') hashes every token "
              "with blake2b in Python, so its rows are slower, not a floor. A re-import reads and checks the whole "
              "export and looks its keys up; Markdown's re-import also re-links its edges (an update, no new edge)."]
    write_report(ROOT / "bench" / "results" / "import_formats.md", "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

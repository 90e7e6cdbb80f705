"""A full disk while a close writes the index snapshot (issue 46, low fault): the command that already succeeded
does not print a traceback after its answer, no temporary file is left (~1 GB at 1M notes), and the next open
rebuilds what was not saved. The disk is outside the process: its failure is raised where the file is renamed."""
from __future__ import annotations

import errno
import logging
from pathlib import Path

from palimpsest_memory.packs.memory.engine import snapshot_io
from palimpsest_memory.runtime import Runtime

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1", "PALIMPSEST__packs__memory__index_snapshot_min_notes": "1"}


def test_a_full_disk_at_close_is_one_warning_and_the_next_open_rebuilds(tmp_path: Path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "s.duckdb"
    rt = Runtime.open(db, env=ENV)
    rt.call("memory.remember_many", {"notes": [{"content": f"note {i} about the harbour"} for i in range(50)]})

    def full(src, dst):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(snapshot_io.os, "replace", full)
    with caplog.at_level(logging.WARNING, logger="palimpsest"):
        rt.close()
    monkeypatch.undo()
    said = [r for r in caplog.records if "No space left" in r.getMessage()]
    assert said, "the full disk is reported"
    assert all(r.exc_info is None and r.levelno == logging.WARNING for r in said), "one line, no traceback"
    assert not [r for r in caplog.records if r.exc_info], "no traceback printed at all"
    assert not list(tmp_path.rglob("*.tmp")), "no half-written snapshot left behind"
    with Runtime.open(db, env=ENV) as again:
        got = again.call("memory.recall", {"query": "note 7 harbour", "limit": 3})
        assert "note 7 " in got.results[0].note.content

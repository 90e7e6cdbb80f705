"""The memory ``Pack`` object; verb modules register on it (the entry point is
:mod:`palimpsest_memory.packs.memory.pack`)."""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.packs.memory import hookspecs
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.state import MemoryState
from palimpsest_memory.runtime import Pack
from palimpsest_memory.runtime.events import NotesForgotten, RecallServed

pack = Pack(
    "memory", version="0.1.0", requires=["kg"], settings=MemorySettings, state=MemoryState,
    migrations=Path(__file__).with_name("sql"), defaults=Path(__file__).with_name("defaults.toml"),
    hookspecs=hookspecs,
    # The recall score weights, settable per namespace by another pack (the brain) through the runtime.
    tunables={"relevance_weight": (0.0, 1.0), "salience_weight": (0.0, 1.0), "temporal_weight": (0.0, 1.0)},
    # recall_served: published by recall once it answered (the brain learns from it); notes_forgotten: by
    # memory.forget, so that packs keeping something about notes (the brain's serve ledger) erase it too
    events={"recall_served": RecallServed, "notes_forgotten": NotesForgotten},
    portable=True,  # memory.export_records / import_records (ADR 0018)
)

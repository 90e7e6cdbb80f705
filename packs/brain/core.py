"""The brain pack: learns the memory pack's recall score weights from feedback (ADR 0010).

Beta posteriors per (namespace, profile) over the three weights, persisted with an append-only event log;
a serve ledger filled from memory's declared ``recall_served`` event; the posterior means (or a Thompson sample)
projected into the memory pack's tunables. It never imports the memory pack.
"""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.packs.brain.settings import BrainSettings
from palimpsest_memory.packs.brain.state import BrainState
from palimpsest_memory.runtime import Pack

pack = Pack("brain", version="0.1.0", requires=["memory"], settings=BrainSettings, state=BrainState,
            migrations=Path(__file__).with_name("sql"), defaults=Path(__file__).with_name("defaults.toml"),
            portable=True)

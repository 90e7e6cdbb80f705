"""The kg ``Pack`` object; verb modules register on it (see :mod:`palimpsest_memory.packs.kg.pack`)."""
from __future__ import annotations

from pathlib import Path

from palimpsest_memory.runtime import Pack
from palimpsest_memory.runtime.events import EdgesChanged

from palimpsest_memory.packs.kg import hookspecs
from palimpsest_memory.packs.kg.settings import KgSettings
from palimpsest_memory.packs.kg.state import KgState

pack = Pack("kg", version="0.1.0", requires=[], settings=KgSettings, state=KgState,
            migrations=Path(__file__).with_name("sql"), defaults=Path(__file__).with_name("defaults.toml"),
            events={"edges_changed": EdgesChanged}, hookspecs=hookspecs, portable=True)

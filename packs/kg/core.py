"""The kg ``Pack`` object; verb modules register on it (see :mod:`packs.kg.pack`)."""
from __future__ import annotations

from pathlib import Path

from runtime import Pack
from runtime.events import EdgesChanged

from packs.kg import hookspecs
from packs.kg.settings import KgSettings
from packs.kg.state import KgState

pack = Pack("kg", version="0.1.0", requires=[], settings=KgSettings, state=KgState,
            migrations=Path(__file__).with_name("sql"), events={"edges_changed": EdgesChanged}, hookspecs=hookspecs,
            portable=True)

"""The kg pack's per-runtime state: its two mirrors (``ctx.state``), driven by the runtime's mirror seam."""
from __future__ import annotations

from dataclasses import dataclass, field

from palimpsest_memory.packs.kg.cache import FactCache
from palimpsest_memory.packs.kg.detect import EntityDetectors


@dataclass
class KgState:
    facts: FactCache = field(default_factory=FactCache)               # keys, cardinalities, current fact versions
    detectors: EntityDetectors = field(default_factory=EntityDetectors)  # entity keys → kg.detect_entities

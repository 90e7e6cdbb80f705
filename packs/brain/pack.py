"""The brain pack's entry point: the verb modules register on ``core.pack`` when imported (ADR 0010)."""
from __future__ import annotations

from palimpsest_memory.packs.brain import (feedback, forgetting, history, ledger,  # noqa: F401  (registration)
                                           portable, profiles, serves)
from palimpsest_memory.packs.brain import views
from palimpsest_memory.packs.brain.core import pack

pack.add_hooks(views)  # its web page; no core MCP tool (ADR 0035)

__all__ = ["pack"]

"""The brain pack's entry point: the verb modules register on ``core.pack`` when imported (ADR 0010)."""
from __future__ import annotations

from palimpsest_memory.packs.brain import feedback, forgetting, history, ledger, portable, profiles  # noqa: F401  (registration)
from palimpsest_memory.packs.brain.core import pack

__all__ = ["pack"]

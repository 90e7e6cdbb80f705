"""The memory index of one namespace, for tests that look inside it (ADR 0016: one index per namespace, loaded at
the namespace's first call, so a test that has made no call in the namespace yet loads it as that call would)."""
from __future__ import annotations

from typing import Any


def held_index(rt: Any, namespace: str = "default") -> Any:
    rt.hold(namespace)
    return rt.pack_state("memory").index.of(namespace)

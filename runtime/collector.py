"""Python's cycle collector paused while a bulk verb runs (ADR 0029).

A bulk call (``memory.remember_many``, ``kg.assert_facts``, an import page …) keeps thousands of short-lived
container objects alive until it returns — validated params, rows, bags, links. They survive the young
collections, so each batch pushes more objects into the oldest generation than a quarter of what it held, and
CPython then runs a *full* collection, which walks every tracked object of the process. Several per batch, each
~50 ms once a store holds a few hundred thousand notes, cost 5–13 % of an ingest's calling thread
(bench/results/speed.md). Those objects are freed by reference counting when the call returns; the collector
finds nothing among them.

So the runtime turns the collector off for a bulk verb's top-level call, from validating its batch (the models
built there live through the call) to its end, commit and mirror updates included. The pause is counted
process-wide: several runtimes in one process may each run a bulk call at once, and the collector comes back when
the last one ends. If it was already off when the first pause began (the host turned it off), it stays off.
Cycles created during a pause are collected by the next collection after it.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused", "pausing"]

_lock = threading.Lock()
_holders = 0  # pauses in progress, across threads and runtimes
_owned = False  # whether the first of them turned the collector off (it was on): then the last turns it on


@contextmanager
def paused(active: bool = True) -> Iterator[None]:
    """The cycle collector off while the block runs (a no-op when ``active`` is false)."""
    global _holders, _owned
    if not active:
        yield
        return
    with _lock:
        if _holders == 0:
            _owned = gc.isenabled()
            if _owned:
                gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _owned:
                _owned = False
                gc.enable()


def pausing() -> int:
    """How many pauses are in progress (for tests and diagnostics)."""
    return _holders

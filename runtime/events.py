"""Declared events, and the vocabulary packs share without importing each other (ADR 0015).

A pack declares the events it publishes (``Pack(events={"recall_served": RecallServed})``), publishes them from
a handler (``ctx.publish("recall_served", payload)``), and another pack subscribes
(``@pack.subscribe("memory.recall_served")``). The runtime checks at load time that every subscription names a
declared event of a pack the subscriber requires, delivers each event after the publishing call has ended
successfully (committed, or finished read-only), never for a call that failed, and runs each subscriber in a
write transaction of its own: a subscriber may record changes and call its own verbs, and its failure is
logged without failing the call it observed.

The payload types below are the contracts between the built-in packs. They live in the runtime, like hook
specs, so that neither side imports the other; third-party packs declare their own payload types.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal

# -- the relation vocabulary of typed edges (kg.link and memory.link) -------------------------------------------
Relation = Literal["supports", "contradicts", "supersedes", "triggered_by", "related_to", "mentions"]
RELATIONS: tuple[str, ...] = typing.get_args(Relation)
# edges between two notes: every relation but "mentions" (a note mentions an entity, not another note)
NoteRelation = Literal["supports", "contradicts", "supersedes", "triggered_by", "related_to"]
NOTE_RELATIONS: tuple[str, ...] = typing.get_args(NoteRelation)


# -- memory.recall_served -----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ScoreComponents:
    """The three weighted parts of a recall score, each in [0, 1] (ADR 0008): what the brain learns from."""

    relevance: float
    effective_salience: float
    recency: float


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    """The weights a recall ranked with (the memory pack's tunables ``*_weight``)."""

    relevance: float
    salience: float
    temporal: float


@dataclass(frozen=True, slots=True)
class ServedNote:
    note_id: int
    score: float
    components: ScoreComponents


@dataclass(frozen=True, slots=True)
class RecallServed:
    """A ``memory.recall`` call answered (nested calls too, since their caller may hand the recall id on for
    feedback): its id, query, the weights it ranked with and the notes served, in rank order."""

    recall_id: str
    query: str
    weights: ScoreWeights
    notes: tuple[ServedNote, ...]


# -- kg.edges_changed ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class EdgeLinked:
    """An edge created, or an active edge whose weight or window a new link of the same triple updated."""

    edge_id: int
    src: str  # a node reference: "entity:<id>", "note:<id>", ...
    dst: str
    relation: str
    weight: float


@dataclass(frozen=True, slots=True)
class EdgesChanged:
    """Typed edges were linked in, or removed from, one namespace's graph (by any caller)."""

    linked: tuple[EdgeLinked, ...] = ()
    removed: tuple[int, ...] = ()  # edge ids


@dataclass(frozen=True)
class Subscription:
    """One pack's subscription to another's (or its own) declared event."""

    pack: str
    event: str  # "<publisher>.<event>"
    handler: Callable[..., Any]
    namespace_lock: bool = True  # shared store: take the namespace's write lock first (Pack.subscribe says when not)


@dataclass(frozen=True, slots=True)
class NotesForgotten:
    """``memory.notes_forgotten``: notes were erased for real (memory.forget, ADR 0018); a pack that keeps
    anything about them (the brain's serve ledger) erases it. ``everything``: the whole namespace was erased."""

    note_ids: tuple[int, ...]
    everything: bool = False

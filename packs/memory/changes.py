"""What a memory verb records it changed (``ctx.record_change``), for the mirrors of :mod:`palimpsest_memory.packs.memory.state`.

Each change is a small frozen record whose ``KIND`` is the kind it is recorded under; the mirrors receive them
after commit, in commit order (runtime/mirror.py, ADR 0015), and apply the ones they hold. The data is owned
by the mirrors once recorded: a recorder never touches it again.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from palimpsest_memory.runtime import Context

    from palimpsest_memory.packs.memory.rowstore import NoteRow


@dataclass(frozen=True, slots=True)
class NotesAdded:
    """New notes (as stored) and their vectors per model."""

    KIND: ClassVar[str] = "notes_added"
    rows: list["NoteRow"]
    vectors: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class SupersededSet:
    """Notes superseded (``by`` a newer note) or un-superseded (``when`` and ``by`` None)."""

    KIND: ClassVar[str] = "superseded"
    note_ids: tuple[int, ...]
    when: datetime | None
    by: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Archived:
    KIND: ClassVar[str] = "archived"
    note_ids: tuple[int, ...]
    when: datetime


@dataclass(frozen=True, slots=True)
class MetadataEdited:
    """Metadata of one note edited in place (memory.update): field name -> new value."""

    KIND: ClassVar[str] = "metadata_edited"
    note_id: int
    fields: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class NotesErased:
    """Notes forgotten for real (memory.forget): the index drops their rows, postings and vectors."""

    KIND: ClassVar[str] = "notes_erased"
    note_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class VectorsReplaced:
    """Every note's vector of one model, recomputed (memory.reembed)."""

    KIND: ClassVar[str] = "vectors_replaced"
    model: str
    ids: np.ndarray
    matrix: np.ndarray


@dataclass(frozen=True, slots=True)
class SnapshotSaved:
    """The full-text index snapshot now matches the index (snapshot.py)."""

    KIND: ClassVar[str] = "snapshot_saved"


@dataclass(frozen=True, slots=True)
class NoteEdge:
    edge_id: int
    source_id: int
    target_id: int
    relation: str
    weight: float


@dataclass(frozen=True, slots=True)
class EdgesLinked:
    """Note edges the kg linked (new, or an update of the same edge id), from ``kg.edges_changed``."""

    KIND: ClassVar[str] = "edges_linked"
    edges: tuple[NoteEdge, ...]


@dataclass(frozen=True, slots=True)
class EdgesRemoved:
    """Edge ids the kg unlinked (any edge: the graph drops those it holds in the change's namespace)."""

    KIND: ClassVar[str] = "edges_removed"
    edge_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CentralitySet:
    """The namespace's stored centrality scores, replaced as a whole (memory.centrality)."""

    KIND: ClassVar[str] = "centrality"
    scores: dict[int, float]


def record(ctx: "Context", change: Any, namespace: str | None = None) -> None:
    """Record one of the changes above under its kind (about ``namespace``, by default the call's)."""
    ctx.record_change(change.KIND, change, namespace=namespace)

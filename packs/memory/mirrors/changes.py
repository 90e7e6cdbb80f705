"""What a memory verb records it changed (``ctx.record_change``), for the mirrors of
:mod:`palimpsest_memory.packs.memory.state`.

Each change is a small frozen record whose ``KIND`` is the kind it is recorded under; the mirrors receive them
after commit, in commit order (runtime/mirror.py, ADR 0015), and apply the ones they hold. The data is owned
by the mirrors once recorded: a recorder never touches it again.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from palimpsest_memory.packs.memory.engine.index_writes import IndexWrites
from palimpsest_memory.packs.memory.engine.rowstore import to_micros

if TYPE_CHECKING:
    from palimpsest_memory.runtime import Context

    from palimpsest_memory.packs.memory.engine.rowstore import NoteRow


# What ``tokens`` of a NotesAdded were made with (text.tokenize of index_writes.index_text): bump it whenever either
# changes what a note's tokens are, so a process running other code tokenises again instead of taking them
TOKENIZER = 1


@dataclass(frozen=True, slots=True)
class NotesAdded:
    """New notes (as stored), their vectors per model, and what the writer already computed for its own index.

    A writer records it with :func:`notes_added`; every process's index applies it (``mirrors/index.py``: ``take``): the
    writer's from memory, the others' decoded from the change log, so what the writer computes here once is not
    computed again by every follower (issue 41, item 7):

    - ``columns``: the notes as ``IndexWrites.FIELDS`` columns, what ``MemoryIndex.add_columns`` takes (ids,
      numbers and times as numpy arrays, texts and labels as lists): the log carries a few arrays and lists instead
      of a tagged object per note, and a follower builds no Python object per note;
    - ``tokens``: each note's own BM25 tokens (``MemoryIndex.tokens_of``: its dated text, tokenised) joined by
      spaces (a token never holds one), made by the tokeniser version ``tokenizer``; a process running another
      version (``TOKENIZER``) tokenises the text itself, as its own load would;
    - ``vectors``: the rows stored in ``memory.vectors``, per model name. No process embeds a note it did not
      write: a follower takes the vectors of the models its index holds (``MemorySettings.stored_models``) and
      ignores the others, as a load from the tables would;
    - ``rows``: the notes as :class:`NoteRow` s, in changes logged before ``columns`` existed (empty since): those
      are still applied, tokenised by the follower.
    """

    KIND: ClassVar[str] = "notes_added"
    rows: list["NoteRow"]
    vectors: dict[str, np.ndarray]
    columns: dict[str, Any] | None = None
    tokens: list[str] | None = None
    tokenizer: int = 0

    def token_lists(self) -> list[list[str]] | None:
        """Each note's tokens (in ``columns`` order), or None when the follower must tokenise the texts."""
        if self.tokens is None or self.tokenizer != TOKENIZER:
            return None
        return [t.split(" ") if t else [] for t in self.tokens]


def notes_added(rows: list["NoteRow"], vectors: dict[str, np.ndarray]) -> NotesAdded:
    """The change of notes just stored (in id order) with their vectors: as columns, with their tokens."""
    times = ("occurred_at", "created_at", "superseded_at", "archived_at")
    columns: dict[str, Any] = {}
    for f in IndexWrites.FIELDS:
        values = [getattr(r, f) for r in rows]
        if f == "id":
            columns[f] = np.array(values, dtype=np.int64)
        elif f == "namespace" and len(set(values)) == 1:
            columns[f] = values[0]  # (one namespace per call: add_columns takes it as one string)
        elif f in ("salience", "decay_factor"):
            columns[f] = np.array(values, dtype=np.float64)
        elif f in times:
            columns[f] = to_micros(values).astype("datetime64[us]")  # None -> NaT
        elif f == "superseded_by":
            columns[f] = np.array([-1 if v is None else v for v in values], dtype=np.int64)  # -1: none
        elif f == "tags":
            columns[f] = [list(v) if v else None for v in values]
        else:
            columns[f] = values
    tokens = [" ".join(IndexWrites.tokens_of(r)) for r in rows]
    return NotesAdded([], vectors, columns, tokens, TOKENIZER)


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

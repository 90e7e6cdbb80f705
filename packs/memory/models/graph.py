"""Params and results of the memory graph layer: edges, walk, centrality, beliefs, consolidation, archive.

Parameter names follow the HTTP resource routes (``runtime/adapters/http.py``): ``memory_id``, ``edge_id`` and
``fact_key`` are path placeholders there.
"""
from __future__ import annotations

from datetime import datetime
from typing import Literal, Optional

from pydantic import BaseModel, Field, field_validator

from palimpsest_memory.packs.memory.models.notes import Candidates, Kind, MemoryType, Note, RecallFilters, UtcDateTime
from palimpsest_memory.runtime.events import NoteRelation
from palimpsest_memory.runtime.params import NamespacedParams, Params
NoteId = int


# -- edges -------------------------------------------------------------------------------------------------
class LinkIn(Params):
    source_id: NoteId = Field(description="The note the edge starts from (for supersedes: the newer note).")
    target_id: NoteId = Field(description="The note it points to (for supersedes: the note it replaces).")
    relation: NoteRelation = Field(description="supports | contradicts | supersedes | triggered_by | related_to")
    weight: float = Field(1.0, ge=0, le=1e6, allow_inf_nan=False,
                          description="Edge weight (used by PageRank; the walk uses the relation's factor).")


class LinkParams(LinkIn, NamespacedParams):
    pass


class LinkManyParams(NamespacedParams):
    links: list[LinkIn] = Field(min_length=1, description="Edges to create, in one transaction.")


class MemoryEdge(BaseModel):
    id: int
    source_id: int
    target_id: int
    relation: str
    weight: float
    created_at: datetime
    removed_at: Optional[datetime] = None


class LinkResult(BaseModel):
    edge: MemoryEdge
    created: bool = Field(description="False: the same (source, target, relation) edge existed; its weight was set.")
    superseded: Optional[int] = Field(None, description="The note a supersedes edge marked superseded.")


class LinkManyResult(BaseModel):
    edge_ids: list[int]
    created: int
    superseded: list[int] = Field(default_factory=list)


class UnlinkParams(NamespacedParams):
    edge_id: int = Field(description="The memory edge to remove (closed in the kg, not deleted).")


class UnlinkResult(BaseModel):
    removed: int
    unsuperseded: Optional[int] = Field(None, description="The note a removed supersedes edge had superseded.")


class EdgesParams(NamespacedParams):
    memory_id: int = Field(description="The note whose edges to list.")
    direction: Literal["out", "in", "both"] = Field("both", description="out: the note is the source.")
    relations: Optional[list[NoteRelation]] = Field(None, description="Only these relations.")
    include_removed: bool = Field(False, description="Also list unlinked edges.")
    limit: int = Field(1000, ge=1, le=10000, description="Most edges returned (oldest first).")


class EdgesResult(BaseModel):
    memory_id: int
    edges: list[MemoryEdge]


# -- walk ----------------------------------------------------------------------------------------------------
class WalkParams(NamespacedParams):
    query: str = Field(description="What the walk is about: seeds are its nearest notes, and every note "
                                   "reached must stay at least min_similarity close to it.")
    seeds: Optional[int] = Field(None, ge=1, le=100, description="kNN seeds (default from config).")
    max_depth: Optional[int] = Field(None, ge=0, description="Hops from a seed (default and cap from config).")
    min_similarity: Optional[float] = Field(None, ge=-1, le=1,
                                            description="Cosine cut: the walk never enters a note below it.")
    limit: int = Field(10, ge=1, le=200)
    relations: Optional[list[NoteRelation]] = Field(None, description="Relations to follow (default: all).")
    include_superseded: bool = Field(False, description="Also walk through superseded notes.")


class WalkHop(BaseModel):
    edge_id: int
    source_id: int
    target_id: int
    relation: str
    factor: float


class WalkHit(BaseModel):
    note: Note
    score: float = Field(description="cosine × edge_factor × (1 + centrality)")
    cosine: float
    edge_factor: float = Field(description="Product of the relation factors along the path (1 for a seed).")
    centrality: float
    depth: int
    seed_id: int
    path: list[WalkHop] = Field(description="The edges from the seed to this note, in walk order.")


class WalkResult(BaseModel):
    query: str
    embedder: str
    seeds: list[int]
    results: list[WalkHit]
    visited: int = Field(description="Notes the walk entered (seeds included).")


class ExpandParams(Params):
    """recall_expand: walk from the best fused candidates and add the notes reached."""

    candidates: Candidates
    vector: list[float]
    model: str
    filters: RecallFilters = Field(default_factory=RecallFilters)


class ExpandResult(BaseModel):
    candidates: Candidates
    added: list[int]


# -- centrality ----------------------------------------------------------------------------------------------
class CentralityParams(NamespacedParams):
    top: int = Field(10, ge=1, le=1000, description="How many top notes to return.")


class NoteCentrality(BaseModel):
    note_id: int
    score: float = Field(description="PageRank normalised so the top note is 1.0")


class CentralityResult(BaseModel):
    notes: int = Field(description="Notes that received a score (those with a positive edge).")
    edges: int
    relations: list[str]
    top: list[NoteCentrality]
    computed_at: datetime


# -- beliefs -------------------------------------------------------------------------------------------------
class BeliefParams(NamespacedParams):
    fact_key: str = Field(min_length=1, max_length=256, description="The belief's key, e.g. 'orion.database'.")
    content: str = Field(description="The belief as it now stands, stored verbatim.")
    salience: Optional[float] = Field(None, ge=0, le=1, description="Importance (semantic default if unset).")
    tags: list[str] = Field(default_factory=list)
    scope: Optional[str] = None
    kind: Optional[Kind] = None
    occurred_at: Optional[UtcDateTime] = Field(None, description="When it became true (default: now).")
    source_id: Optional[str] = None

    @field_validator("fact_key", "content")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v


class BeliefResult(BaseModel):
    fact_key: str
    version: int
    note: Note
    changed: bool = Field(description="False: the content equals the current version's (nothing written).")
    supersedes: Optional[int] = Field(None, description="The previous version's note id.")
    edge_id: Optional[int] = Field(None, description="The supersedes edge new → previous.")


class BeliefHistoryParams(NamespacedParams):
    fact_key: str = Field(min_length=1, max_length=256)


class BeliefVersion(BaseModel):
    version: int
    note_id: int
    content: str
    recorded_at: datetime
    superseded_at: Optional[datetime] = Field(None, description="When the next version was recorded.")
    superseded_by: Optional[int] = Field(None, description="The next version's note id.")
    supersedes: Optional[int] = Field(None, description="The previous version's note id.")
    edge_id: Optional[int] = Field(None, description="The supersedes edge this version → the previous one.")
    archived_at: Optional[datetime] = None


class BeliefHistoryResult(BaseModel):
    fact_key: str
    current: int = Field(description="The current version number.")
    versions: list[BeliefVersion] = Field(description="Oldest first.")


# -- lifecycle -----------------------------------------------------------------------------------------------
class ConsolidateParams(NamespacedParams):
    source_ids: list[int] = Field(min_length=1, description="The notes the new one summarises.")
    content: str = Field(description="The consolidated note, written by the caller (the host agent).")
    archive_sources: bool = Field(False, description="Archive the sources once consolidated.")
    salience: Optional[float] = Field(None, ge=0, le=1)
    tags: list[str] = Field(default_factory=list)
    scope: Optional[str] = Field(None, description="Default: the sources' scope when they all share one.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("content must not be blank")
        return v


class ConsolidateResult(BaseModel):
    note: Note
    edge_ids: list[int] = Field(description="The triggered_by edges new → each source.")
    archived: list[int]


class CandidatesGroupParams(NamespacedParams):
    scope: Optional[str] = None
    min_similarity: Optional[float] = Field(None, ge=-1, le=1, description="Cosine that joins two notes "
                                                                           "(default from config).")
    memory_type: MemoryType = Field("episodic", description="Which notes to group.")
    limit: int = Field(20, ge=1, le=200, description="Most groups returned (largest first).")


class CandidateGroup(BaseModel):
    note_ids: list[int]
    mean_similarity: float = Field(description="Mean cosine over the group's joining pairs.")
    notes: list[Note]


class CandidatesGroupResult(BaseModel):
    groups: list[CandidateGroup]
    considered: int = Field(description="Notes looked at (the most recent, up to the configured cap).")


class ArchiveParams(NamespacedParams):
    """Archive notes that are wrong or no longer wanted: they leave search results but stay readable by id and in
    the history (nothing is erased)."""

    ids: list[int] = Field(min_length=1, description="The ids of the notes to archive, as returned by remember or "
                                                     "recall, e.g. [12, 15].")


class ArchiveResult(BaseModel):
    archived: list[int]
    already: list[int] = Field(description="Notes that were archived before.")


class PruneParams(NamespacedParams):
    min_salience: Optional[float] = Field(None, ge=0, le=1, description="Archive notes whose effective "
                                                                       "(decayed) salience is below this.")
    before: Optional[UtcDateTime] = Field(None, description="Archive notes that occurred before this.")
    memory_type: Optional[MemoryType] = None
    scope: Optional[str] = None
    dry_run: bool = Field(True, description="Only list what would be archived.")


class PruneResult(BaseModel):
    dry_run: bool
    note_ids: list[int]

"""Params and result of ``memory.explain`` (ADR 0011); its settings are in
:mod:`palimpsest_memory.packs.memory.settings`."""
from __future__ import annotations

from datetime import datetime
from typing import Literal, Optional

from pydantic import BaseModel, Field, field_validator

from palimpsest_memory.packs.memory.models.notes import Breakdown, Kind, Note, UtcDateTime
from palimpsest_memory.runtime.params import NamespacedParams


class ExplainParams(NamespacedParams):
    """Answer a 'why' or 'what happened' question with evidence: the notes that explain it (decisions first),
    the known facts about the people and projects it names, with when each fact held and which note it came
    from. Use it when you need the reasons behind an answer, not just matching notes."""

    query: str = Field(description="The question, e.g. 'why did we choose Postgres for Orion?'.")
    scope: Optional[str] = Field(None, min_length=1, description="Search only this project or topic; default: "
                                                                  "the one the question names, if any.")
    kind: Optional[Kind] = Field(None, description="Only notes of this kind, e.g. 'decision'.")
    as_of: Optional[UtcDateTime] = Field(None, description="Which facts to show: those true at this time (ISO "
                                                           "8601; default: now). Notes are searched as they are "
                                                           "now.")
    include_kg: bool = Field(True, description="Also show the facts known about the people and projects the "
                                               "question names, and the notes they came from.")
    include_tunnels: bool = Field(False, description="Also list the topics (tags, kinds) this project shares with "
                                                     "other projects.")
    limit: int = Field(5, ge=1, le=50, description="Most notes returned (default 5).")

    @field_validator("scope")
    @classmethod
    def _scope_not_blank(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not v.strip():
            raise ValueError("scope must not be blank")
        return v


class DetectedEntity(BaseModel):
    entity_id: int
    node_id: str
    name: str = Field(description="Canonical name")
    kind: str
    matched: list[str] = Field(description="How the query names it (name or alias), in order")
    owns_scopes: list[str] = Field(default_factory=list, description="Existing scopes this entity owns")


class ScopeInference(BaseModel):
    """How ``scope`` was chosen."""

    source: Literal["caller", "entity", "none"]
    entity: Optional[str] = Field(None, description="The detected entity that owns the inferred scope")
    via: Optional[Literal["name", "fact"]] = Field(
        None, description="name: the entity's name or alias is the scope; fact: a scope predicate names it")
    candidates: list[str] = Field(default_factory=list, description="Every scope a detected entity owns")
    requested: Optional[str] = Field(None, description="The scope asked for or inferred, before any fallback")
    applied: bool = Field(description="False when there was no scope, or the scoped search found nothing")


class ExplainFact(BaseModel):
    fact_id: int
    subject: str
    predicate: str
    object: str
    entities: list[str] = Field(description="The detected entities this fact is about (subject or object)")
    valid_from: Optional[datetime]
    valid_to: Optional[datetime]
    valid_at_as_of: bool
    current: bool = Field(description="Valid now")
    superseded_by: Optional[int] = Field(description="Fact id of the fact that ended this one")
    superseded_by_object: Optional[str] = Field(description="What it was replaced with (the successor's object)")
    current_objects: list[str] = Field(description="The objects of this (subject, predicate) valid now")
    confidence: float
    source_id: Optional[str]
    source_note_id: Optional[int] = Field(description="The memory note the source id names ('m:<id>'), if any")


class ExplainHit(BaseModel):
    note: Note
    score: float = Field(description="What the memories are ordered by: recall_score + decision_boost + "
                                     "fact_boost")
    recall_score: float = Field(description="memory.recall's score (breakdown.score)")
    decision_boost: float = Field(0.0, description="Added because the query asks why and the note is a decision")
    fact_boost: float = Field(0.0, description="Added because the note grounds a KG fact whose subject and "
                                               "object the query both names")
    grounds: list[int] = Field(default_factory=list, description="Those facts' ids")
    breakdown: Optional[Breakdown] = None
    origin: Literal["scoped", "unscoped"] = Field(description="From the scoped search, or from an unscoped one")


class SharedScope(BaseModel):
    scope: str
    notes: int


class Room(BaseModel):
    room: str
    type: Literal["tag", "kind"]
    notes_in_scope: int
    scopes: list[SharedScope] = Field(description="Other scopes with notes in this room (a 'tunnel')")


class Degraded(BaseModel):
    part: Literal["entities", "scope", "kg", "scoped_search", "source_memories", "tunnels"]
    reason: str


class ExplainResult(BaseModel):
    query: str
    why_question: bool = Field(description="The query asks why/decide/choose: decision notes were preferred")
    entities_detected: list[DetectedEntity]
    scope: Optional[str] = Field(description="The scope `memories` are restricted to (null: unscoped)")
    scope_inference: ScopeInference
    kg_facts: list[ExplainFact] = Field(description="Facts about the detected entities valid at as_of")
    kg_history: list[ExplainFact] = Field(
        description="Their other facts (superseded, ended or not yet started at as_of): what changed")
    memories: list[ExplainHit] = Field(description="Verbatim recall results (scoped when scope is set)")
    source_memories: list[Note] = Field(description="The notes the KG facts cite, hydrated")
    baseline_extra: list[ExplainHit] = Field(
        description="memory.recall's top results on the same query (caller's scope and kind, no inferred scope) "
                    "that memories and source_memories do not hold: the answer never loses recall's best notes")
    related: list[Room] = Field(default_factory=list, description="Tunnels (include_tunnels)")
    as_of: datetime
    degraded: list[Degraded]

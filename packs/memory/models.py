"""Params and results of the memory pack's verbs (pydantic v2; params forbid unknown fields)."""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, BaseModel, Field, field_validator

from runtime.params import NamespacedParams, Params

MemoryType = Literal["episodic", "semantic"]
Kind = Literal["decision", "milestone", "problem", "preference", "emotional", "none"]
Fusion = Literal["rrf", "weighted", "union", "vector_only", "keyword_only"]


def utc_naive(v: datetime) -> datetime:
    """Timestamps are stored and compared as naive UTC (like the runtime clock): convert aware ones."""
    try:
        return v if v.tzinfo is None else v.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before year 1 in UTC: an invalid value, not a crash
        raise ValueError("the time is outside the years 1-9999 once converted to UTC") from None


UtcDateTime = Annotated[datetime, AfterValidator(utc_naive)]


class NoteIn(Params):
    """One note to remember. Type defaults for salience and decay come from config."""

    content: str = Field(description="The note, stored verbatim.")
    memory_type: MemoryType = Field("episodic", description="episodic (an event) or semantic (a lasting fact).")
    salience: Optional[float] = Field(None, ge=0, le=1, description="Importance in [0,1] (type default if unset).")
    decay_factor: Optional[float] = Field(None, ge=0, description="Per-day decay of salience (type default).")
    occurred_at: Optional[UtcDateTime] = Field(None, description="When it was said or happened (default: now).")
    tags: list[str] = Field(default_factory=list, description="Free tags.")
    scope: Optional[str] = Field(None, description="The project or person the note belongs to (a 'wing').")
    thread: Optional[str] = Field(None, description="A contiguous episode it belongs to (e.g. a chat session).")
    kind: Optional[Kind] = Field(None, description="decision|milestone|problem|preference|emotional|none "
                                                   "(classified from the content when unset).")
    source_id: Optional[str] = Field(None, description="Where it came from (message id, file, URL).")
    key: Optional[str] = Field(None, min_length=1, max_length=256, description="Idempotency key.")

    @field_validator("content")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("content must not be blank")
        return v

    @field_validator("decay_factor")
    @classmethod
    def _finite(cls, v: Optional[float]) -> Optional[float]:
        if v is not None and not math.isfinite(v):
            raise ValueError("decay_factor must be finite")
        return v

    @field_validator("tags")
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        out = []
        for t in v:
            t = t.strip()
            if not t:
                raise ValueError("tags must not be blank")
            if t not in out:
                out.append(t)
        return out


class RememberParams(NoteIn, NamespacedParams):
    pass


class Note(BaseModel):
    id: int
    namespace: str
    content: str
    memory_type: MemoryType
    kind: Optional[str]
    kind_source: str
    scope: Optional[str]
    thread: Optional[str]
    tags: list[str]
    salience: float
    decay_factor: float
    occurred_at: datetime
    created_at: datetime
    source_id: Optional[str]
    key: Optional[str]
    superseded_by: Optional[int] = None
    archived_at: Optional[datetime] = None
    entities: list[str] = Field(default_factory=list, description="Known entities the content mentions.")


class RememberResult(BaseModel):
    note: Note
    created: bool = Field(description="False when an idempotency key replayed an existing note.")


class RememberManyParams(NamespacedParams):
    notes: list[NoteIn] = Field(min_length=1, description="The notes, stored in order, in one transaction.")


class RememberManyResult(BaseModel):
    ids: list[int]
    created: int
    replayed: int


class RecallFilters(Params):
    memory_type: Optional[MemoryType] = None
    kind: Optional[Kind] = None
    scope: Optional[str] = None
    tags: list[str] = Field(default_factory=list)
    tag_mode: Literal["any", "all"] = "any"
    min_salience: Optional[float] = Field(None, ge=0, le=1)
    created_after: Optional[UtcDateTime] = None
    created_before: Optional[UtcDateTime] = None
    as_of: Optional[UtcDateTime] = Field(None, description="Recall only what existed then.")
    include_superseded: bool = False


class RecallParams(RecallFilters, NamespacedParams):
    query: str = Field(description="What to recall.")
    limit: int = Field(10, ge=1, le=200)
    min_score: Optional[float] = Field(None, ge=0, le=1)
    include_breakdown: bool = Field(False, description="Return each result's score components.")
    fusion: Optional[Fusion] = Field(None, description="Override the configured fusion (rrf|weighted|union|…).")
    now: Optional[UtcDateTime] = Field(None, description="The 'now' ages are measured to (default: the clock).")
    expand_graph: bool = Field(False, description="Also walk memory edges from the best candidates and add the "
                                                  "notes reached (memory.recall_expand, ADR 0012).")


class Breakdown(BaseModel):
    """Exactly the numbers the ranking used (ADR 0008; the adjusters are in ``ranking.py``): ``score`` is the
    value results are sorted by."""

    formula: Literal["score", "rerank"] = Field(description="score: the ADR 0008 formula; rerank: the rerank stage")
    relevance: float
    effective_salience: float
    recency: float
    weights: dict[str, float] = Field(description="The weights of `formula` (score: 3, rerank: 5)")
    score: float
    text_match: float
    vector_match: float
    context: dict[str, float] = Field(
        default_factory=dict, description="One value per adjuster that acts per note: neighbour, thread, date, "
                                          "speaker, graph (expand_graph), near_duplicate (the share of score lost), "
                                          "and in memory.explain decision_boost, fact_boost")
    age_days: float


class RecallHit(BaseModel):
    note: Note
    score: float
    breakdown: Optional[Breakdown] = None


class RecallResult(BaseModel):
    recall_id: str
    query: str
    results: list[RecallHit]
    fusion: str
    embedder: str
    truncated: bool = Field(False, description="The response budget cut the list short.")


# -- sub-handlers ----------------------------------------------------------------------------------------
class EmbedParams(Params):
    query: str


class EmbedResult(BaseModel):
    model: str
    vector: list[float]
    cjk: bool


class CandidatesParams(Params):
    query: str
    vector: list[float] = Field(default_factory=list)
    model: str = ""
    k: int = Field(ge=1, le=200)
    filters: RecallFilters = Field(default_factory=RecallFilters)


class Leg(BaseModel):
    ids: list[int]
    scores: list[float]


class CandidatesResult(BaseModel):
    text: Leg
    vector: Leg


class FuseParams(Params):
    query: str
    text: Leg
    vector: Leg
    fusion: Fusion
    filters: RecallFilters = Field(default_factory=RecallFilters)


class Candidates(BaseModel):
    """Candidates as columns (one list per feature, aligned by position): cheap to pass between stages."""

    ids: list[int]
    relevance: list[float] = Field(description="Fused relevance after context signals, scaled to [0,1].")
    text_match: list[float]
    vector_match: list[float]
    context: dict[str, list[float]] = Field(default_factory=dict)


class FuseResult(BaseModel):
    candidates: Candidates


class ScoreParams(Params):
    candidates: Candidates
    now: datetime
    rerank: bool = True


class Scored(BaseModel):
    """Scored candidates as columns, sorted by ``score`` (best first): every number the ranking used."""

    formula: Literal["score", "rerank"]
    weights: dict[str, float]
    ids: list[int]
    score: list[float]
    relevance: list[float]
    effective_salience: list[float]
    recency: list[float]
    text_match: list[float]
    vector_match: list[float]
    age_days: list[float]
    context: dict[str, list[float]] = Field(default_factory=dict)

    def breakdown(self, j: int) -> "Breakdown":
        return Breakdown(formula=self.formula, weights=self.weights, score=self.score[j],
                         relevance=self.relevance[j], effective_salience=self.effective_salience[j],
                         recency=self.recency[j], text_match=self.text_match[j],
                         vector_match=self.vector_match[j], age_days=self.age_days[j],
                         context={k: v[j] for k, v in self.context.items()})


class ScoreResult(BaseModel):
    results: Scored


class RerankParams(Params):
    results: Scored


class GetParams(NamespacedParams):
    ids: list[int] = Field(min_length=1, max_length=1000)


class GetResult(BaseModel):
    notes: list[Note]
    missing: list[int]


class ReembedParams(Params):
    """Vectors belong to notes of every namespace: reembed rebuilds them all."""

    model: Optional[str] = Field(None, description="Embedder to (re)build vectors for (default: configured).")


class ReembedResult(BaseModel):
    model: str
    embedded: int


def as_jsonable(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if v is not None}

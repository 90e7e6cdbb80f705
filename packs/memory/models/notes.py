"""Params and results of the memory pack's verbs (pydantic v2; params forbid unknown fields)."""
from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Annotated, Literal, Optional

from pydantic import AfterValidator, BaseModel, Field, field_validator, model_validator

from palimpsest_memory.packs.memory.models.episodes import EpisodeHit
from palimpsest_memory.runtime.params import NamespacedParams, Params

MemoryType = Literal["episodic", "semantic"]
Kind = Literal["decision", "milestone", "problem", "preference", "emotional", "none"]
Duplicates = Literal["merge", "keep"]
Fusion = Literal["rrf", "weighted", "union", "vector_only", "keyword_only"]


def utc_naive(v: datetime) -> datetime:
    """Timestamps are stored and compared as naive UTC (like the runtime clock): convert aware ones."""
    try:
        return v if v.tzinfo is None else v.astimezone(timezone.utc).replace(tzinfo=None)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before year 1 in UTC: an invalid value, not a crash
        raise ValueError("the time is outside the years 1-9999 once converted to UTC") from None


UtcDateTime = Annotated[datetime, AfterValidator(utc_naive)]


class NoteIn(Params):
    """One note to save, word for word. Type defaults for salience and decay come from config."""

    content: str = Field(description="The text to remember, stored exactly as given. Make it understandable on "
                                     "its own, e.g. 'We chose Postgres for Orion because invoices need strict "
                                     "transactions'.")
    memory_type: MemoryType = Field("episodic", description="'episodic' for something that happened (the default),"
                                                            " 'semantic' for a lasting fact or rule.")
    salience: Optional[float] = Field(None, ge=0, le=1, description="How important it is, from 0 to 1 (e.g. 0.9 "
                                                                     "for a key decision). Leave out for the default.")
    decay_factor: Optional[float] = Field(None, ge=0, description="How fast its importance fades per day (0: never)."
                                                                  " Leave out for the default.")
    occurred_at: Optional[UtcDateTime] = Field(None, description="When it was said or happened, ISO 8601 (e.g. "
                                                                 "'2026-03-01' or '2026-03-01T14:30:00Z'). Default: "
                                                                 "now.")
    tags: list[str] = Field(default_factory=list, description="Short labels to filter by later, e.g. ['billing', "
                                                              "'db'].")
    scope: Optional[str] = Field(None, description="The project, person or topic the note belongs to, e.g. 'orion'. "
                                                   "Recall can be limited to it.")
    thread: Optional[str] = Field(None, description="The conversation or session it came from, e.g. a chat id "
                                                  "(a thread is its scope's: the same name in another scope is "
                                                  "another).")
    kind: Optional[Kind] = Field(None, description="decision, milestone, problem, preference, emotional or none. "
                                                   "Guessed from the text when left out.")
    source_id: Optional[str] = Field(None, description="Where it came from: a message id, file name or URL.")
    key: Optional[str] = Field(None, min_length=1, max_length=256, description="A unique key of your choice: "
                                                                              "saving again with the same key "
                                                                              "does not create a duplicate.")

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


DUPLICATES = ("'merge': a text that a live note of the same scope already says (ignoring case and white space) "
              "is counted on that note as seen again instead of stored twice; 'keep': store it anyway. Leave out "
              "for the configured one (merge).")


class RememberParams(NoteIn, NamespacedParams):
    """Save one note to long-term memory, word for word. Write one self-contained idea per note: a decision and
    its reason, a preference, a fact about a person or project, a problem and its fix."""

    duplicates: Optional[Duplicates] = Field(None, description=DUPLICATES)


class Seen(BaseModel):
    """How often a note's text was remembered (the first time included), when first and last."""

    count: int = Field(description="Times this text was remembered: 1 + the times it was seen again.")
    first_seen: datetime = Field(description="When it was first said (the note's occurred_at, or an earlier "
                                             "repetition's).")
    last_seen: datetime = Field(description="The latest time it was said again.")
    recent: list[datetime] = Field(description="The latest times it was said again, oldest first (at most "
                                               "[packs.memory] seen_recent of them).")


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
    seen: Optional[Seen] = Field(None, description="Set when the same text was remembered again (memory.get and "
                                                   "memory.list; recall, which reads no SQL, leaves it out).")


class RememberResult(BaseModel):
    note: Note
    created: bool = Field(description="False when an idempotency key replayed an existing note, or the text was "
                                      "seen again.")
    seen_again: bool = Field(False, description="The text is an existing note's: `note` is that note, and its "
                                                "`seen.count` says how many times it was remembered.")


class RememberManyParams(NamespacedParams):
    notes: list[NoteIn] = Field(min_length=1, description="The notes, stored in order, in one transaction.")
    duplicates: Optional[Duplicates] = Field(None, description=DUPLICATES + " The same text twice in one call is "
                                                               "one note seen twice.")


class RememberManyResult(BaseModel):
    ids: list[int] = Field(description="Each note's id, in order: an existing note's when it was replayed or seen "
                                       "again.")
    created: int
    replayed: int
    seen_again: int = Field(0, description="Notes whose text an existing (or earlier) note says: counted on it.")


class RecallFilters(Params):
    memory_type: Optional[MemoryType] = Field(None, description="Only 'episodic' (events) or only 'semantic' "
                                                                "(lasting facts) notes.")
    kind: Optional[Kind] = Field(None, description="Only notes of this kind, e.g. 'decision'.")
    scope: Optional[str] = Field(None, description="Only notes of this project, person or topic, e.g. 'orion'.")
    tags: list[str] = Field(default_factory=list, description="Only notes with these tags (see tag_mode).")
    tag_mode: Literal["any", "all"] = Field("any", description="'any': a note needs one of the tags; 'all': every "
                                                               "tag.")
    min_salience: Optional[float] = Field(None, ge=0, le=1, description="Only notes at least this important "
                                                                        "(0 to 1).")
    created_after: Optional[UtcDateTime] = Field(None, description="Only notes saved after this time (ISO 8601).")
    created_before: Optional[UtcDateTime] = Field(None, description="Only notes saved before this time (ISO 8601).")
    as_of: Optional[UtcDateTime] = Field(None, description="Recall memory as it was at this time (ISO 8601): "
                                                           "notes saved later are left out.")
    include_superseded: bool = Field(False, description="Also return old versions that a newer note replaced.")


class RecallParams(RecallFilters, NamespacedParams):
    """Search long-term memory for the notes that best answer a question, best first. Matches by meaning and by
    words; recent and important notes rank higher. Call it before answering anything about past work, people
    or preferences; an empty list means nothing relevant was saved."""

    query: str = Field(description="What you want to know, in plain words, e.g. 'which database does Orion use?'."
                                   " Short queries work too.")
    limit: int = Field(10, ge=1, le=200, description="Most notes returned (default 10).")
    min_score: Optional[float] = Field(None, ge=0, le=1, description="Leave out notes scoring below this "
                                                                     "(0 to 1).")
    include_breakdown: bool = Field(False, description="Also return the numbers each note was ranked by "
                                                       "(for debugging).")
    fusion: Optional[Fusion] = Field(None, description="How word and meaning matches are combined; leave out for "
                                                       "the configured one.")
    now: Optional[UtcDateTime] = Field(None, description="Treat this time as now when weighing how recent notes "
                                                         "are (default: the current time).")
    expand_graph: bool = Field(False, description="Also return notes linked to the best matches (e.g. the note a "
                                                  "decision supersedes).")
    group: Literal["note", "episode"] = Field("note", description="'note': the best notes (the default); 'episode':"
                                              " the best conversations or sessions (a thread, or an episode inferred "
                                              "from pauses), each with its best notes and its time span.")
    turns: int = Field(3, ge=1, le=20, description="With group='episode': the most notes shown per episode "
                                                   "(default 3). limit then counts episodes.")

    @model_validator(mode="after")
    def _turns_need_episodes(self) -> "RecallParams":
        if "turns" in self.model_fields_set and self.group != "episode":  # a silent no-op would mislead
            raise ValueError("turns applies only with group='episode'")
        return self


class Breakdown(BaseModel):
    """Exactly the numbers the ranking used (ADR 0008; the adjusters are in ``ranking/adjusters.py``): ``score`` is the
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
    episodes: Optional[list[EpisodeHit]] = Field(None, description="With group='episode': the episodes best first;"
                                                                  " `results` then holds their turns, in order.")


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
    now: Optional[UtcDateTime] = None  # what relative times in the query count back from (default: the clock)


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



"""What ``memory.recall(group="episode")`` answers per episode (ADR 0036); ``models.RecallResult`` carries them."""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from pydantic import BaseModel, Field


class EpisodeTurn(BaseModel):
    id: int = Field(description="A note of the episode among the results (its text is there).")
    score: float = Field(description="The note's recall score.")


class EpisodeSpan(BaseModel):
    """The whole episode as the recall's filters see it (``as_of``, superseded, archived), not only its hits."""

    notes: int = Field(description="How many notes the episode holds.")
    first_id: int
    last_id: int
    first_at: datetime = Field(description="When its earliest note occurred.")
    last_at: datetime = Field(description="When its latest note occurred.")


class EpisodeHit(BaseModel):
    thread: Optional[str] = Field(description="The thread its notes were remembered with; null for an episode "
                                              "inferred from the scope's pauses (or a note with neither).")
    inferred: bool = Field(description="True when no thread was given and the episode was inferred.")
    scope: Optional[str]
    score: float = Field(description="The episode's score: its best turn's score (ADR 0036).")
    turns: list[EpisodeTurn] = Field(description="Its best-scoring notes, best first.")
    span: EpisodeSpan

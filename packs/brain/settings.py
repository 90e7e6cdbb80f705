"""The brain pack's settings: every value comes from ``[packs.brain]``, whose defaults are in defaults.toml beside this
module (none here)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

COMPONENTS = ("relevance", "salience", "temporal")


class BetaPrior(BaseModel):
    model_config = ConfigDict(extra="forbid")
    alpha: float = Field(gt=0)
    beta: float = Field(gt=0)


class Priors(BaseModel):
    """One Beta prior per recall weight; their means should equal the memory pack's default weights."""

    model_config = ConfigDict(extra="forbid")
    relevance: BetaPrior
    salience: BetaPrior
    temporal: BetaPrior


class FeedbackWeights(BaseModel):
    """How much one feedback event counts, by source; a caller-given weight must stay in its source's range."""

    model_config = ConfigDict(extra="forbid")
    correction: float = Field(gt=0)
    explicit: float = Field(gt=0)
    implicit: float = Field(gt=0)
    implicit_min: float = Field(gt=0)
    implicit_max: float = Field(gt=0)
    max: float = Field(gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> "FeedbackWeights":
        if not self.implicit_min <= self.implicit <= self.implicit_max <= self.max:
            raise ValueError("need implicit_min <= implicit <= implicit_max <= max")
        if self.explicit <= self.implicit_max:
            raise ValueError("explicit feedback must weigh more than implicit feedback")
        if max(self.correction, self.explicit) > self.max:
            raise ValueError("correction and explicit weights must not exceed max")
        return self


class BrainSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    default_profile: str = Field(min_length=1, max_length=128)
    ess_cap: float = Field(gt=2)
    min_count: float = Field(gt=0)
    explore: bool
    credit: Literal["relative", "absolute"]
    serve_retention_days: float = Field(gt=0)
    serve_flush_every: int = Field(ge=1, le=10_000)
    serve_max_per_namespace: int = Field(ge=1, le=10_000_000)
    priors: Priors
    weights: FeedbackWeights

    @model_validator(mode="after")
    def _fits(self) -> "BrainSettings":
        if self.serve_max_per_namespace < self.serve_flush_every:
            raise ValueError("serve_max_per_namespace must be at least serve_flush_every (the serves kept in memory "
                             "are the newest, so they are always within the bound)")
        if 2 * self.min_count >= self.ess_cap:
            raise ValueError("ess_cap must exceed 2 × min_count")
        for c in COMPONENTS:
            p: BetaPrior = getattr(self.priors, c)
            if p.alpha + p.beta > self.ess_cap or min(p.alpha, p.beta) < self.min_count:
                raise ValueError(f"prior {c} must satisfy min_count <= alpha, beta and alpha + beta <= ess_cap")
        return self

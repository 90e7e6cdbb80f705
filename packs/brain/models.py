"""Params and results of the brain pack's verbs (params forbid unknown fields)."""
from __future__ import annotations

from datetime import datetime
from typing import Literal, Optional

from pydantic import BaseModel, Field, model_validator

from palimpsest_memory.runtime.params import NamespacedParams, Params

Signal = Literal["useful", "not_useful", "correction"]
Source = Literal["explicit", "implicit"]
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"
ACTOR_FIELD = Field(None, pattern=NAME, description="Who gives the feedback / uses the profile (default: the "
                                                     "call's actor, if any).")
PROFILE_FIELD = Field(None, pattern=NAME, description="A profile by name (default: the one bound to the actor, "
                                                      "else to the namespace, else the default profile).")


class Posterior(BaseModel):
    alpha: float
    beta: float
    mean: float = Field(description="alpha / (alpha + beta): the weight the brain projects.")


class ProfileState(BaseModel):
    namespace: str
    profile: str
    explore: bool
    active: bool = Field(description="Bound to the namespace itself, so recall ranks with its weights.")
    posteriors: dict[str, Posterior]
    feedback_events: int = Field(description="Feedback events since the profile's last init or reset.")


class FeedbackParams(NamespacedParams):
    recall_id: str = Field(min_length=1, max_length=128, description="The recall_id of a memory.recall answer.")
    note_id: int = Field(description="A note that recall returned.")
    signal: Signal = Field(description="useful | not_useful | correction (a wrong answer the user corrected).")
    source: Source = Field("explicit", description="explicit (the user said so) or implicit (inferred from use).")
    weight: Optional[float] = Field(None, gt=0, description="Override the configured weight of this source "
                                                            "(implicit: within [implicit_min, implicit_max]).")
    actor: Optional[str] = ACTOR_FIELD
    profile: Optional[str] = PROFILE_FIELD
    explore: Optional[bool] = Field(None, description="Project a Thompson sample instead of the means "
                                                      "(default: the profile's setting).")


class FeedbackResult(BaseModel):
    event_seq: int
    profile: str
    weight: float
    credit: dict[str, float] = Field(description="Per component, in [-1, 1]: how the note stood out (ADR 0010).")
    delta: dict[str, tuple[float, float]] = Field(description="(Δalpha, Δbeta) per component, before the cap.")
    state: ProfileState
    projected: Optional[dict[str, float]] = Field(
        None, description="The memory score weights now set from this profile, for the namespace (if it is the "
                          "namespace's profile) and for each actor bound to it (None: nobody ranks with it).")


class ProfileParams(NamespacedParams):
    name: str = Field(pattern=NAME, description="The profile to create (if new) and bind.")
    actor: Optional[str] = Field(None, pattern=NAME, description="Bind it for this actor only (default: bind "
                                                                 "it to the namespace, so recall uses it).")
    bind: bool = Field(True, description="False: only create it.")
    explore: Optional[bool] = Field(None, description="Thompson sampling for this profile (default: config).")


class ProfileResult(BaseModel):
    created: bool
    bound_to: Optional[str] = Field(description="'*' (the namespace), an actor, or None when not bound.")
    state: ProfileState
    projected: Optional[dict[str, float]] = None


class UnbindParams(NamespacedParams):
    actor: Optional[str] = Field(None, pattern=NAME, description="The actor whose binding to remove (default: "
                                                                 "the namespace's own binding).")


class UnbindResult(BaseModel):
    actor: str = Field(description="The binding removed: an actor, or '*' (the namespace).")
    was: Optional[str] = Field(description="The profile it was bound to (None: there was no binding).")
    now: str = Field(description="The profile it falls back to.")
    projected: Optional[dict[str, float]] = Field(
        None, description="The namespace's weights, set again from the default profile (namespace unbinding).")


class StateParams(NamespacedParams):
    profile: Optional[str] = PROFILE_FIELD
    actor: Optional[str] = ACTOR_FIELD
    events: int = Field(0, ge=0, le=1000, description="Also return the newest N events of the profile.")


class Event(BaseModel):
    seq: int
    kind: str
    recall_id: Optional[str]
    note_id: Optional[int]
    signal: Optional[str]
    source: Optional[str]
    weight: Optional[float]
    actor: Optional[str]
    payload: dict
    at: datetime


class StateResult(BaseModel):
    state: ProfileState
    projected: Optional[dict[str, float]] = Field(description="Weights the brain last set for the actor (its own, "
                                                              "if bound), else for this namespace.")
    bindings: dict[str, str] = Field(description="actor ('*' = the namespace) → profile, in this namespace.")
    events: list[Event] = Field(default_factory=list)


class ResetParams(NamespacedParams):
    profile: Optional[str] = PROFILE_FIELD
    actor: Optional[str] = ACTOR_FIELD


class ResetResult(BaseModel):
    event_seq: int
    state: ProfileState
    projected: Optional[dict[str, float]] = None


class ReplayParams(NamespacedParams):
    profile: Optional[str] = PROFILE_FIELD
    actor: Optional[str] = ACTOR_FIELD


class ReplayResult(BaseModel):
    profile: str
    events: int = Field(description="Events folded.")
    replayed: dict[str, Posterior]
    stored: dict[str, Posterior]
    matches: bool = Field(description="The replayed posteriors equal the stored ones exactly.")


class RecordServeParams(Params):
    """One recall's served results as columns, in rank order (what the ``recall_served`` subscriber keeps)."""

    recall_id: str = Field(min_length=1, max_length=128)
    weights: dict[str, float] = Field(description="relevance, salience, temporal (a missing one counts as 0).")
    note_ids: list[int] = Field(max_length=200)
    relevance: list[float] = Field(max_length=200)
    effective_salience: list[float] = Field(max_length=200)
    recency: list[float] = Field(max_length=200)

    @model_validator(mode="after")
    def _aligned(self) -> "RecordServeParams":
        n = len(self.note_ids)
        if any(len(col) != n for col in (self.relevance, self.effective_salience, self.recency)):
            raise ValueError("every column must have one value per served note")
        return self


class RecordServeResult(BaseModel):
    recorded: int = Field(description="Notes of this serve (kept in memory until the next flush).")
    flushed: int = Field(description="Serves this call wrote to the ledger (0 unless the buffer was full).")
    pruned: int


class FlushServesParams(Params):
    """No params: every namespace's pending serves are written."""


class FlushServesResult(BaseModel):
    flushed: int = Field(description="Serves written (of every namespace).")
    pruned: int = Field(description="Serves deleted: older than serve_retention_days, or beyond "
                                    "serve_max_per_namespace in their namespace (oldest first).")

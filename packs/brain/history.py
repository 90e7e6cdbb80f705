"""brain.history: a profile's posteriors after every event of its log (the web view's weight curves, ADR 0019).

The curve is the event log folded one event at a time with the same rule as ``brain.replay``
(:func:`palimpsest_memory.packs.brain.posteriors.apply`), so its last point is the stored state.
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.packs.brain import store
from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.models import ACTOR_FIELD, PROFILE_FIELD, Posterior


class HistoryParams(NamespacedParams):
    profile: Optional[str] = PROFILE_FIELD
    actor: Optional[str] = ACTOR_FIELD
    limit: int = Field(500, ge=1, le=10000, description="Most points returned: the newest ones.")


class HistoryPoint(BaseModel):
    seq: int
    kind: str = Field(description="init | feedback | reset")
    at: datetime
    signal: Optional[str]
    source: Optional[str]
    note_id: Optional[int]
    actor: Optional[str]
    posteriors: dict[str, Posterior] = Field(description="After this event")


class HistoryResult(BaseModel):
    profile: str
    events: int = Field(description="Events in the log (the points are the newest `limit` of them)")
    points: list[HistoryPoint] = Field(description="Oldest first")


@pack.verb("history", act=Act.ASSERTIVE)
def history(params: HistoryParams, ctx: Context) -> HistoryResult:
    """A profile's posteriors after each event of its log, oldest first (the default profile: the actor's,
    else the namespace's)."""
    name = store.resolve(ctx, params.profile, params.actor or ctx.actor)
    evs = store.events(ctx, name)
    points, state = [], None
    for e in evs:
        if e["kind"] in ("init", "reset"):
            state = post.prior_state(e["payload"]["prior"])
        elif e["kind"] == "feedback" and state is not None:  # one before init cannot fold; brain.replay says so
            p = e["payload"]
            state = post.apply(state, p["delta"], p["cap"], p["floor"])
        if state is None:
            continue
        points.append(HistoryPoint(seq=e["seq"], kind=e["kind"], at=e["at"], signal=e["signal"],
                                   source=e["source"], note_id=e["note_id"], actor=e["actor"],
                                   posteriors={c: Posterior(alpha=a, beta=b, mean=a / (a + b))
                                               for c, (a, b) in state.items()}))
    return HistoryResult(profile=name, events=len(evs), points=points[-params.limit:])

"""brain.serves: the recalls of a namespace as the serve ledger keeps them, newest first, with the feedback given
on each (the web view's retrievals page, issue 42 item 3).

The ledger is the brain's (ledger.py): what each ``memory.recall`` served (note ids in rank order), when, for which
actor and ranked by which profile; it keeps no query text, by design (issue 16.13), and is bounded by
``serve_retention_days`` and ``serve_max_per_namespace``. So this reads no other log and adds none: serves still
held in memory (not yet flushed) and written ones are listed alike, and feedback comes from the event log.
Pages are cut by a keyset cursor on ``(served_at, recall_id)``, so a recall made while one reads never shifts them.
"""
from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timedelta
from typing import Optional

from pydantic import BaseModel, Field

from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.params import NamespacedParams

from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.ledger import pending
from palimpsest_memory.packs.brain.models import NAME


class ServesParams(NamespacedParams):
    actor: Optional[str] = Field(None, pattern=NAME, description="Only recalls made for this actor.")
    limit: int = Field(20, ge=1, le=200, description="Most recalls a page holds.")
    cursor: Optional[str] = Field(None, max_length=512, description="next_cursor of the previous page.")


class FeedbackGiven(BaseModel):
    note_id: int
    signal: str
    source: Optional[str]
    weight: Optional[float]
    actor: Optional[str]
    at: datetime


class ServeEntry(BaseModel):
    recall_id: str
    served_at: datetime
    actor: Optional[str] = Field(description="Who the recall was made for (None: nobody in particular).")
    profile: Optional[str] = Field(description="The profile whose weights ranked it.")
    note_ids: list[int] = Field(description="The notes it returned, in rank order (forgotten ones are erased).")
    feedback: list[FeedbackGiven] = Field(description="Feedback given on its notes, oldest first.")


class ServesResult(BaseModel):
    serves: list[ServeEntry]
    next_cursor: Optional[str] = Field(description="Pass as cursor for the next page; null on the last page.")
    retention_days: float = Field(description="Recalls older than this are no longer kept.")


def _cursor(entry: ServeEntry) -> str:
    raw = json.dumps({"t": entry.served_at.isoformat(), "r": entry.recall_id}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _after(cursor: Optional[str]) -> Optional[tuple[datetime, str]]:
    if cursor is None:
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        at, rid = datetime.fromisoformat(data["t"]), data["r"]
        if at.tzinfo is not None or not isinstance(rid, str):
            raise ValueError("not a cursor of this listing")
        return at, rid
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise errors.InvalidParams(f"cursor is not a next_cursor of this listing ({exc})",
                                   details={"errors": [{"loc": ["cursor"], "msg": "invalid cursor"}]}) from None


@pack.verb("serves", act=Act.ASSERTIVE)
def serves(params: ServesParams, ctx: Context) -> ServesResult:
    """The recalls of the namespace, newest first: which notes each returned, when, for whom, and the feedback given
    on them (no query text: the ledger keeps none). Only recalls still in the ledger (serve_retention_days)."""
    cutoff = ctx.now() - timedelta(days=ctx.settings.serve_retention_days)
    after = _after(params.cursor)
    where, args = ["namespace = ?", "served_at >= ?"], [ctx.namespace, cutoff]
    if params.actor is not None:
        where.append("actor = ?")
        args.append(params.actor)
    if after is not None:
        where.append("(served_at < ? OR (served_at = ? AND recall_id < ?))")
        args += [after[0], after[0], after[1]]
    rows = ctx.db.query(f"SELECT recall_id, served_at, actor, profile, note_ids FROM brain.serves WHERE "
                        f"{' AND '.join(where)} ORDER BY served_at DESC, recall_id DESC LIMIT {params.limit + 1}", args)
    found = {r[0]: (r[1], r[2], r[3], list(r[4])) for r in rows}
    for rid, s in pending(ctx).items():  # not yet flushed: held by this process only
        if s.namespace == ctx.namespace and s.served_at >= cutoff and params.actor in (None, s.actor) and \
                (after is None or (s.served_at, rid) < after):
            found[rid] = (s.served_at, s.actor, s.profile, list(s.note_ids))
    keys = sorted(found, key=lambda rid: (found[rid][0], rid), reverse=True)
    page, more = keys[:params.limit], len(keys) > params.limit
    given: dict[str, list[FeedbackGiven]] = {rid: [] for rid in page}
    if page:
        for rid, note, signal, source, weight, actor, at in ctx.db.query(
                "SELECT recall_id, note_id, signal, source, weight, actor, created_at FROM brain.events WHERE "
                "namespace = ? AND kind = 'feedback' AND recall_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY seq",
                [ctx.namespace, page]):
            given[rid].append(FeedbackGiven(note_id=note, signal=signal, source=source, weight=weight, actor=actor,
                                            at=at))
    entries = [ServeEntry(recall_id=rid, served_at=found[rid][0], actor=found[rid][1], profile=found[rid][2],
                          note_ids=found[rid][3], feedback=given[rid]) for rid in page]
    return ServesResult(serves=entries, next_cursor=_cursor(entries[-1]) if more else None,
                        retention_days=ctx.settings.serve_retention_days)

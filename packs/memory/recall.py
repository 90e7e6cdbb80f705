"""memory.recall: the public verb that runs the sub-handler pipeline and shapes the answer."""
from __future__ import annotations

import time
import uuid

from packs.memory.models import (CandidatesParams, EmbedParams, FuseParams, RecallFilters, RecallHit, RecallParams,
                                 RecallResult, ScoreParams)
from packs.memory.pack import pack
from packs.memory.remember import fetch_notes
from packs.memory.settings import MemorySettings
from packs.memory.text import is_meaningless_query
from runtime import Act, Context, errors


class Deadline:
    def __init__(self, ms: int, verb: str) -> None:
        self.end = time.monotonic() + ms / 1000 if ms else None
        self.ms, self.verb = ms, verb

    def check(self, stage: str) -> None:
        if self.end is not None and time.monotonic() > self.end:
            raise errors.DeadlineExceeded(f"recall ran past its {self.ms} ms deadline (during {stage})",
                                          verb=self.verb, details={"stage": stage})


def check_query(query: str, s: MemorySettings, verb: str) -> None:
    if len(query) > s.max_query_chars:
        raise errors.LimitExceeded(f"query is {len(query)} characters; the limit is {s.max_query_chars}",
                                   verb=verb, details={"errors": [{"loc": ["query"], "msg": "query too long"}]})
    if is_meaningless_query(query):
        raise errors.InvalidParams(
            f"query {query!r} has nothing to search for (fewer than 2 letters, one repeated character, "
            "or only stop words)", verb=verb, details={"errors": [{"loc": ["query"], "msg": "meaningless query"}]})


@pack.verb("recall", act=Act.ASSERTIVE)
def recall(params: RecallParams, ctx: Context) -> RecallResult:
    """Recall the notes most relevant to a query: hybrid BM25 + vector, context-aware, decay-aware ranking.

    Superseded and archived notes are left out unless asked; ``as_of`` recalls what existed then.
    ``include_breakdown`` returns the exact numbers each result was ranked by.
    """
    s: MemorySettings = ctx.settings
    check_query(params.query, s, ctx.verb)
    deadline = Deadline(s.recall_deadline_ms, ctx.verb)
    filters = RecallFilters.model_validate(params.model_dump(include=set(RecallFilters.model_fields)))
    emb = ctx.call("memory.recall_embed", EmbedParams(query=params.query))
    deadline.check("embed")
    k = min(max(params.limit * s.candidates_per_limit, s.candidates_min), s.candidates_max)
    fusion = params.fusion or s.fusion
    legs = ctx.call("memory.recall_candidates", CandidatesParams.model_construct(
        query=params.query, vector=emb.vector if fusion != "keyword_only" else [], model=emb.model, k=k,
        filters=filters))
    deadline.check("candidates")
    fused = ctx.call("memory.recall_fuse", FuseParams.model_construct(
        query=params.query, text=legs.text, vector=legs.vector, fusion=fusion, filters=filters))
    deadline.check("fuse")
    scored = ctx.call("memory.recall_score", ScoreParams.model_construct(
        candidates=fused.candidates, now=(params.now or ctx.now()).replace(tzinfo=None), rerank=True)).results
    deadline.check("score")
    ranked = _demote_near_duplicates(scored, fetch_notes(ctx, [r.id for r in scored[: params.limit * 3]]), s)
    if params.min_score is not None:
        ranked = [r for r in ranked if r.score >= params.min_score]
    top = ranked[: params.limit]
    notes = fetch_notes(ctx, [r.id for r in top])
    hits, used, truncated = [], 0, False
    for r in top:
        note = notes[r.id]
        if hits and s.response_char_budget and used + len(note.content) > s.response_char_budget:
            truncated = True
            break
        used += len(note.content)
        hits.append(RecallHit(note=note, score=r.score, breakdown=r.breakdown if params.include_breakdown else None))
    return RecallResult(recall_id=uuid.uuid4().hex, query=params.query, results=hits, fusion=fusion,
                        embedder=emb.model, truncated=truncated)


def _demote_near_duplicates(scored: list, notes: dict, s: MemorySettings) -> list:
    """A note whose first N characters equal a better-ranked note's is penalised (recorded in its breakdown)."""
    if not s.near_duplicate_prefix or not s.near_duplicate_penalty:
        return scored
    seen: set[str] = set()
    out = []
    for r in scored:
        note = notes.get(r.id)
        prefix = note.content[: s.near_duplicate_prefix].strip().lower() if note else None
        if prefix is not None and prefix in seen:
            score = r.score * (1.0 - s.near_duplicate_penalty)
            ctx_feats = dict(r.breakdown.context, near_duplicate=s.near_duplicate_penalty)
            r = r.model_copy(update={"score": score, "breakdown": r.breakdown.model_copy(
                update={"score": score, "context": ctx_feats})})
        elif prefix is not None:
            seen.add(prefix)
        out.append(r)
    out.sort(key=lambda x: (-x.score, x.id))
    return out

"""memory.recall: the public verb that runs the recall stages, shapes the answer and says what it served.

The stages are called as plain functions (``stages.py``, ``walk.expand``): one dispatch a recall. Every
``memory.recall`` call publishes ``recall_served`` (``palimpsest_memory.runtime.events.RecallServed``): the notes served, in rank
order, each with the three score components the formula weighed, and the weights. The brain learns from it.
"""
from __future__ import annotations

import time
import uuid
from datetime import datetime

from palimpsest_memory.packs.memory import ranking, stages
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models import RecallFilters, RecallHit, RecallParams, RecallResult, Scored
from palimpsest_memory.packs.memory.remember import note_from_index
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.walk import expand
from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import RecallServed, ScoreComponents, ScoreWeights, ServedNote


class Deadline:
    def __init__(self, ms: int, verb: str) -> None:
        self.end = time.monotonic() + ms / 1000 if ms else None
        self.ms, self.verb = ms, verb

    def check(self, stage: str) -> None:
        if self.end is not None and time.monotonic() > self.end:
            raise errors.DeadlineExceeded(f"recall ran past its {self.ms} ms deadline (during {stage})",
                                          verb=self.verb, details={"stage": stage})


def rank(params: RecallParams, ctx: Context) -> tuple[Scored, str, str, dict[str, float]]:
    """The recall's candidates, scored and sorted by every ranking adjuster: (scored, fusion, embedder, the
    score weights)."""
    s: MemorySettings = ctx.settings
    stages.check_query(params.query, s, ctx.verb)
    deadline = Deadline(s.recall_deadline_ms, ctx.verb)
    filters = RecallFilters.model_validate(params.model_dump(include=set(RecallFilters.model_fields)))
    emb = stages.embed(ctx, params.query)
    deadline.check("embed")
    k = min(max(params.limit * s.candidates_per_limit, s.candidates_min), s.candidates_max)
    fusion = params.fusion or s.fusion
    legs = stages.candidates(ctx, params.query, emb.vector if fusion != "keyword_only" else [], emb.model, k,
                             filters)
    deadline.check("candidates")
    cand = stages.fuse(ctx, legs.text, legs.vector, fusion, filters)
    deadline.check("fuse")
    if params.expand_graph:  # graph step (ADR 0012): walked neighbours of the best candidates join them
        cand, _ = expand(ctx, cand, emb.vector, emb.model, filters)
        deadline.check("expand")
    weights = stages.score_weights(ctx)
    now: datetime = (params.now or ctx.now()).replace(tzinfo=None)
    scored = stages.score(ctx, cand, now, weights)
    deadline.check("score")
    return stages.demote_near_duplicates(ctx, scored), fusion, emb.model, weights


def answer(params: RecallParams, ctx: Context) -> tuple[RecallResult, Scored, list[int], dict[str, float]]:
    """The recall's answer, its scored columns, the positions (in them) of the notes served, the score weights.
    Publishes nothing: ``memory.explain`` recalls through this, and its recalls are not served to anyone."""
    s: MemorySettings = ctx.settings
    scored, fusion, model, weights = rank(params, ctx)
    keep = [j for j, sc in enumerate(scored.score) if params.min_score is None or sc >= params.min_score]
    rows = ctx.state.index.of(ctx.namespace).rows  # the index holds each committed note as stored: no SQL on the recall path
    hits, served, used, truncated = [], [], 0, False
    for j in keep[: params.limit]:
        note = note_from_index(rows[scored.ids[j]])
        if hits and s.response_char_budget and used + len(note.content) > s.response_char_budget:
            truncated = True
            break
        used += len(note.content)
        served.append(j)
        hits.append(RecallHit(note=note, score=scored.score[j],
                              breakdown=scored.breakdown(j) if params.include_breakdown else None))
    result = RecallResult(recall_id=uuid.uuid4().hex, query=params.query, results=hits, fusion=fusion,
                          embedder=model, truncated=truncated)
    return result, scored, served, weights


@pack.verb("recall", act=Act.ASSERTIVE)
def recall(params: RecallParams, ctx: Context) -> RecallResult:
    """Recall the notes most relevant to a query: hybrid BM25 + vector, context-aware, decay-aware ranking.

    Superseded and archived notes are left out unless asked; ``as_of`` recalls what existed then.
    ``include_breakdown`` returns the exact numbers each result was ranked by.
    """
    result, scored, served, w = answer(params, ctx)
    ctx.publish("recall_served", RecallServed(
        recall_id=result.recall_id, query=result.query,
        weights=ScoreWeights(relevance=w["relevance"], salience=w["salience"], temporal=w["temporal"]),
        notes=tuple(ServedNote(note_id=scored.ids[j], score=scored.score[j],
                               components=ScoreComponents(*ranking.components(scored, j))) for j in served)))
    return result

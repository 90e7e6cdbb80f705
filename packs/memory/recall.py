"""memory.recall: the public verb that runs the recall stages, shapes the answer and says what it served.

The stages are called as plain functions (``stages.py``, ``walk.expand``): one dispatch a recall. Every
``memory.recall`` call publishes ``recall_served`` (``palimpsest_memory.runtime.events.RecallServed``): the notes
served, in rank order, each with the three score components the formula weighed, and the weights. The brain learns from
it.
"""
from __future__ import annotations

import uuid
from datetime import datetime

import numpy as np

from palimpsest_memory.packs.memory import recall_episodes, stages
from palimpsest_memory.packs.memory.ranking import adjusters
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models.notes import RecallFilters, RecallHit, RecallParams, RecallResult, Scored
from palimpsest_memory.packs.memory.note_store import note_from_index
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.walk import expand
from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.events import RecallServed, ScoreComponents, ScoreWeights, ServedNote


def rank(params: RecallParams, ctx: Context) -> tuple[Scored, str, str, dict[str, float]]:
    """The recall's candidates, scored and sorted by every ranking adjuster: (scored, fusion, embedder, the
    score weights)."""
    s: MemorySettings = ctx.settings
    stages.check_query(params.query, s, ctx.verb)
    with ctx.deadline(s.recall_deadline_ms / 1000, "packs.memory.recall_deadline_ms"):
        filters = RecallFilters.model_validate(params.model_dump(include=set(RecallFilters.model_fields)))
        model, qvec, _ = stages.embed_array(ctx, params.query)
        ctx.check_deadline("embed")
        k = min(max(params.limit * s.candidates_per_limit, s.candidates_min), s.candidates_max)
        fusion = params.fusion or s.fusion
        text, vector = stages.legs(ctx, params.query, qvec if fusion != "keyword_only" else [], model, k, filters)
        ctx.check_deadline("candidates")
        now: datetime = (params.now or ctx.now()).replace(tzinfo=None)
        cand = stages.fuse(ctx, text, vector, fusion, filters, params.query, now)
        ctx.check_deadline("fuse")
        if params.expand_graph:  # graph step (ADR 0012): walked neighbours of the best candidates join them
            cand, _ = expand(ctx, adjusters.as_lists(cand), qvec.tolist(), model, filters)
            ctx.check_deadline("expand")
        weights = stages.score_weights(ctx)
        scored = stages.score(ctx, cand, now, weights)
        ctx.check_deadline("score")
    return stages.demote_near_duplicates(ctx, scored), fusion, model, weights


def answer(params: RecallParams, ctx: Context) -> tuple[RecallResult, Scored, dict[str, float]]:
    """The recall's answer, the scored columns of its first ``limit`` notes (lists, rank order: the answer serves
    the first ``len(result.results)`` of them), the score weights.
    Publishes nothing: ``memory.explain`` recalls through this, and its recalls are not served to anyone."""
    s: MemorySettings = ctx.settings
    scored, fusion, model, weights = rank(params, ctx)
    keep = np.arange(len(scored.ids)) if params.min_score is None else np.flatnonzero(
        np.asarray(scored.score) >= params.min_score)
    if params.group == "episode":  # the same ranking, grouped (ADR 0036)
        result, top = recall_episodes.answer(params, ctx, scored, keep, fusion, model)
        return result, top, weights
    top = adjusters.head(scored, keep[: params.limit])  # only the notes that can be served leave the columns
    # the index holds each committed note as stored: no SQL on the recall path
    rows = ctx.state.index.of(ctx.namespace).rows
    hits, used, truncated = [], 0, False
    for j, note_id in enumerate(top.ids):
        note = note_from_index(rows[note_id])
        if hits and s.response_char_budget and used + len(note.content) > s.response_char_budget:
            truncated = True
            break
        used += len(note.content)
        hits.append(RecallHit.model_construct(note=note, score=top.score[j],
                                              breakdown=top.breakdown(j) if params.include_breakdown else None))
    result = RecallResult.model_construct(recall_id=uuid.uuid4().hex, query=params.query, results=hits,
                                          fusion=fusion, embedder=model, truncated=truncated)
    return result, top, weights


@pack.verb("recall", act=Act.ASSERTIVE)
def recall(params: RecallParams, ctx: Context) -> RecallResult:
    """Recall the notes most relevant to a query: hybrid BM25 + vector, context-aware, decay-aware ranking.

    Superseded and archived notes are left out unless asked; ``as_of`` recalls what existed then.
    ``include_breakdown`` returns the exact numbers each result was ranked by.
    """
    result, top, w = answer(params, ctx)
    ctx.publish("recall_served", RecallServed(
        recall_id=result.recall_id, query=result.query,
        weights=ScoreWeights(relevance=w["relevance"], salience=w["salience"], temporal=w["temporal"]),
        notes=tuple(ServedNote(note_id=top.ids[j], score=top.score[j],
                               components=ScoreComponents(*adjusters.components(top, j)))
                    for j in range(len(result.results)))))
    return result

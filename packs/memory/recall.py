"""memory.recall: the public verb that runs the sub-handler pipeline and shapes the answer."""
from __future__ import annotations

import time
import uuid

import numpy as np

from packs.memory.index import MemoryIndex
from packs.memory.models import (CandidatesParams, EmbedParams, FuseParams, RecallFilters, RecallHit, RecallParams,
                                 RecallResult, Scored, ScoreParams)
from packs.memory.models_graph import ExpandParams
from packs.memory.core import pack
from packs.memory.remember import note_from_index
from packs.memory.settings import MemorySettings
from packs.memory.stages import sort_columns
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
    if params.expand_graph:  # graph step (ADR 0012): walked neighbours of the best candidates join them
        fused = ctx.call("memory.recall_expand", ExpandParams.model_construct(
            candidates=fused.candidates, vector=emb.vector, model=emb.model, filters=filters))
        deadline.check("expand")
    scored = ctx.call("memory.recall_score", ScoreParams.model_construct(
        candidates=fused.candidates, now=(params.now or ctx.now()).replace(tzinfo=None), rerank=True)).results
    deadline.check("score")
    scored = _demote_near_duplicates(scored, ctx.state.index, s)
    keep = [j for j, sc in enumerate(scored.score) if params.min_score is None or sc >= params.min_score]
    top = keep[: params.limit]
    rows = ctx.state.index.rows  # the index holds each committed note as stored: no SQL on the recall path
    hits, used, truncated = [], 0, False
    for j in top:
        note = note_from_index(rows[scored.ids[j]])
        if hits and s.response_char_budget and used + len(note.content) > s.response_char_budget:
            truncated = True
            break
        used += len(note.content)
        hits.append(RecallHit(note=note, score=scored.score[j],
                              breakdown=scored.breakdown(j) if params.include_breakdown else None))
    return RecallResult(recall_id=uuid.uuid4().hex, query=params.query, results=hits, fusion=fusion,
                        embedder=emb.model, truncated=truncated)


def _demote_near_duplicates(scored: Scored, index: MemoryIndex, s: MemorySettings) -> Scored:
    """A note whose first N characters equal a better-ranked note's loses a share of its score.

    The penalty is recorded in its breakdown (``context["near_duplicate"]``) and the list is re-sorted, so
    the breakdown's ``score`` stays the number the results are ordered by.
    """
    if not s.near_duplicate_prefix or not s.near_duplicate_penalty or not scored.ids:
        return scored
    ids = np.asarray(scored.ids, dtype=np.int64)
    _, first = np.unique(index.cols["prefix"][ids], return_index=True)  # best-ranked note of each prefix
    penalty = np.full(ids.size, s.near_duplicate_penalty)
    penalty[first] = 0.0
    if not penalty.any():
        return scored
    score = np.asarray(scored.score) * (1.0 - penalty)
    order = np.lexsort((ids, -score))
    cols = {name: getattr(scored, name) for name in Scored.model_fields}
    cols.update(score=score, context=dict(scored.context, near_duplicate=penalty))
    return Scored.model_construct(**sort_columns(cols, order))

"""The serve ledger: what each top-level ``memory.recall`` returned, with the score components it ranked by.

``memory.recall`` is assertive (read-only), so the brain observes it by wrapping the runtime's dispatch hook and
defers ``brain.record_serve`` (a commissive sub-handler) to run after the recall, in a transaction of its own.
To see the components the wrapper asks the recall for its breakdown (``include_breakdown=True`` on a copy of
the params) and strips it from the answer again when the caller did not ask for it (ADR 0010).
"""
from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Generator

from packs.brain.models import RecordServeParams, RecordServeResult
from packs.brain.pack import pack
from packs.brain.settings import BrainSettings
from runtime import Act, CallInfo, Context, Visibility, hookimpl

RECALL = "memory.recall"


@hookimpl(wrapper=True)
def palimpsest_dispatch(call: CallInfo) -> Generator[None, Any, Any]:
    """Record every top-level recall's results; leave every other call alone."""
    if call.verb != RECALL or call.depth != 0:
        return (yield)
    asked = bool(getattr(call.params, "include_breakdown", False))
    if not asked:
        call.params = call.params.model_copy(update={"include_breakdown": True})
    result = yield
    items, weights = [], {}
    for rank, hit in enumerate(result.results):
        b = hit.breakdown
        if b is None:
            continue
        weights = dict(b.weights)
        items.append({"note_id": hit.note.id, "rank": rank, "score": hit.score, "relevance": b.relevance,
                      "effective_salience": b.effective_salience, "recency": b.recency})
    call.defer("brain.record_serve", {"recall_id": result.recall_id, "query": result.query,
                                      "weights": weights, "items": items})
    if not asked:
        result = result.model_copy(update={"results": [h.model_copy(update={"breakdown": None})
                                                       for h in result.results]})
    return result


@pack.verb("record_serve", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def record_serve(params: RecordServeParams, ctx: Context) -> RecordServeResult:
    """Write one recall's results to the serve ledger (deferred after the recall); prune expired serves."""
    s: BrainSettings = ctx.settings
    now = ctx.now()
    cutoff = now - timedelta(days=s.serve_retention_days)
    old = [r[0] for r in ctx.db.query("SELECT recall_id FROM brain.serves WHERE served_at < ?", [cutoff])]
    if old:
        ctx.db.execute("DELETE FROM brain.serve_items WHERE list_contains(?, recall_id)", [old])
        ctx.db.execute("DELETE FROM brain.serves WHERE list_contains(?, recall_id)", [old])
    ctx.db.execute("INSERT INTO brain.serves VALUES (?, ?, ?, ?, ?)",
                   [params.recall_id, ctx.namespace, params.query, now, json.dumps(params.weights)])
    if params.items:
        items = params.items  # one set-wise insert: DuckDB's executemany costs ~0.1 ms a row
        ctx.db.execute(
            "INSERT INTO brain.serve_items SELECT $1, unnest($2::BIGINT[]), unnest($3::INTEGER[]), "
            "unnest($4::DOUBLE[]), unnest($5::DOUBLE[]), unnest($6::DOUBLE[]), unnest($7::DOUBLE[])",
            [params.recall_id, [i.note_id for i in items], [i.rank for i in items], [i.score for i in items],
             [i.relevance for i in items], [i.effective_salience for i in items], [i.recency for i in items]])
    return RecordServeResult(recorded=len(params.items), pruned=len(old))


def serve_features(ctx: Context, recall_id: str) -> tuple[list[int], dict[str, list[float]]] | None:
    """The note ids and component columns of a recorded serve in this namespace (None if unknown)."""
    if not ctx.db.query("SELECT 1 FROM brain.serves WHERE recall_id = ? AND namespace = ?",
                        [recall_id, ctx.namespace]):
        return None
    rows = ctx.db.query("SELECT note_id, relevance, effective_salience, recency FROM brain.serve_items "
                        "WHERE recall_id = ? ORDER BY rank", [recall_id])
    return ([r[0] for r in rows], {"relevance": [r[1] for r in rows],
                                   "effective_salience": [r[2] for r in rows], "recency": [r[3] for r in rows]})


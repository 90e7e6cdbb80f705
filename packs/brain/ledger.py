"""The serve ledger: what each top-level ``memory.recall`` returned, with the score components it ranked by.

``memory.recall`` is assertive (read-only), so the brain observes it by wrapping the runtime's dispatch hook and
defers ``brain.record_serve`` (a commissive sub-handler) to run after the recall. To see the components the
wrapper asks the recall for its breakdown (``include_breakdown=True`` on a copy of the params) and strips it
from the answer again when the caller did not ask for it (ADR 0010).

Writing each serve in its own transaction cost ~3 ms a recall, so serves are kept in memory (the pack's
per-runtime ``ctx.state``) and written ``serve_flush_every`` at a time, in one transaction, and when the runtime
closes (``palimpsest_close``). Feedback finds a serve in memory or in the table alike; a serve not yet written
when the process dies is lost, and feedback on it is the typed "unknown recall" error.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generator, Optional

from packs.brain import store
from packs.brain.models import FlushServesParams, FlushServesResult, RecordServeParams, RecordServeResult
from packs.brain.pack import pack
from packs.brain.settings import BrainSettings
from runtime import Act, CallInfo, Context, Visibility, hookimpl

RECALL = "memory.recall"
COLUMNS = ("relevance", "effective_salience", "recency")


@dataclass(frozen=True)
class Serve:
    namespace: str
    actor: Optional[str]  # the call's actor (deferred calls inherit it)
    profile: str  # the profile whose weights ranked it
    query: str
    served_at: datetime
    weights: str  # JSON of the score weights the recall ranked with
    note_ids: list[int]
    scores: list[float]
    features: dict[str, list[float]]  # COLUMNS -> one value per served note, in rank order


@dataclass(frozen=True)
class Served:
    note_ids: list[int]
    features: dict[str, list[float]]
    weights: dict[str, float]
    actor: Optional[str]


@hookimpl(wrapper=True)
def palimpsest_dispatch(call: CallInfo) -> Generator[None, Any, Any]:
    """Record every top-level recall's results; leave every other call alone."""
    if call.verb != RECALL or call.depth != 0:
        return (yield)
    asked = bool(getattr(call.params, "include_breakdown", False))
    if not asked:
        call.params = call.params.model_copy(update={"include_breakdown": True})
    result = yield
    hits = [h for h in result.results if h.breakdown is not None]
    # columns of primitives, not one dict per hit: validating the deferred call's params is then cheap
    call.defer("brain.record_serve", {
        "recall_id": result.recall_id, "query": result.query,
        "weights": dict(hits[0].breakdown.weights) if hits else {},
        "note_ids": [h.note.id for h in hits], "scores": [h.score for h in hits],
        "relevance": [h.breakdown.relevance for h in hits],
        "effective_salience": [h.breakdown.effective_salience for h in hits],
        "recency": [h.breakdown.recency for h in hits]})
    if not asked:
        result = result.model_copy(update={"results": [h.model_copy(update={"breakdown": None})
                                                       for h in result.results]})
    return result


@hookimpl
def palimpsest_close(runtime: Any) -> None:
    """Write the serves still in memory before the database closes."""
    if "brain" in runtime.catalog.packs:
        runtime.call("brain.flush_serves", {}, internal=True)


def pending(ctx: Context) -> dict[str, Serve]:
    """recall_id -> serve, for the serves of this runtime not yet written (insertion-ordered)."""
    found = getattr(ctx.state, "pending_serves", None)
    if found is None:
        found = ctx.state.pending_serves = {}
    return found


@pack.verb("record_serve", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def record_serve(params: RecordServeParams, ctx: Context) -> RecordServeResult:
    """Keep one recall's results in memory (deferred after the recall); write them all once enough are kept."""
    s: BrainSettings = ctx.settings
    buf = pending(ctx)
    buf[params.recall_id] = Serve(ctx.namespace, ctx.actor, store.serving_profile(ctx), params.query, ctx.now(),
                                  json.dumps(params.weights),
                                  params.note_ids, params.scores, {c: getattr(params, c) for c in COLUMNS})
    flushed = pruned = 0
    if len(buf) >= s.serve_flush_every:
        flushed, pruned = flush(ctx)
    return RecordServeResult(recorded=len(params.note_ids), flushed=flushed, pruned=pruned)


@pack.verb("flush_serves", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def flush_serves(params: FlushServesParams, ctx: Context) -> FlushServesResult:
    """Write every serve kept in memory to the ledger now (the runtime calls this when it closes)."""
    flushed, pruned = flush(ctx)
    return FlushServesResult(flushed=flushed, pruned=pruned)


def flush(ctx: Context) -> tuple[int, int]:
    """Insert the pending serves (two set-wise INSERTs for all of them) and prune the expired ones.

    The pending serves are forgotten only once this transaction commits, so a failed flush loses nothing.
    Pruning runs here, once per flush, not once per recall: a DELETE that finds nothing still costs ~0.3 ms.
    """
    buf = pending(ctx)
    if not buf:
        return 0, 0
    cutoff = ctx.now() - timedelta(days=ctx.settings.serve_retention_days)
    (pruned,) = ctx.db.query("SELECT count(*) FROM brain.serves WHERE served_at < ?", [cutoff])[0]
    if pruned:
        ctx.db.execute("DELETE FROM brain.serve_items WHERE recall_id IN "
                       "(SELECT recall_id FROM brain.serves WHERE served_at < ?)", [cutoff])
        ctx.db.execute("DELETE FROM brain.serves WHERE served_at < ?", [cutoff])
    rids = list(buf)
    expired = [r for r in rids if buf[r].served_at < cutoff]  # dropped unwritten: nobody can give feedback on them
    rids = [r for r in rids if buf[r].served_at >= cutoff]
    serves = [buf[r] for r in rids]
    if rids:
        ctx.db.execute(
            "INSERT INTO brain.serves (recall_id, namespace, query, served_at, weights, actor, profile) "
            "SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[]), unnest($3::VARCHAR[]), unnest($4::TIMESTAMP[]), "
            "unnest($5::VARCHAR[])::JSON, unnest($6::VARCHAR[]), unnest($7::VARCHAR[])",
            [rids, [v.namespace for v in serves], [v.query for v in serves], [v.served_at for v in serves],
             [v.weights for v in serves], [v.actor for v in serves], [v.profile for v in serves]])
    item_rids = [r for r, v in zip(rids, serves) for _ in v.note_ids]
    if item_rids:  # one set-wise insert: DuckDB's executemany costs ~0.1 ms a row
        ctx.db.execute(
            "INSERT INTO brain.serve_items SELECT unnest($1::VARCHAR[]), unnest($2::BIGINT[]), "
            "unnest($3::INTEGER[]), unnest($4::DOUBLE[]), unnest($5::DOUBLE[]), unnest($6::DOUBLE[]), "
            "unnest($7::DOUBLE[])",
            [item_rids, [n for v in serves for n in v.note_ids],
             [k for v in serves for k in range(len(v.note_ids))], [x for v in serves for x in v.scores]]
            + [[x for v in serves for x in v.features[c]] for c in COLUMNS])

    def forget() -> None:
        for r in rids + expired:
            buf.pop(r, None)

    ctx.on_commit(forget)
    return len(rids), int(pruned) + len(expired)


def serve_features(ctx: Context, recall_id: str) -> Optional[Served]:
    """The note ids, component columns and score weights of a serve of this namespace, kept in memory or
    written (None if unknown, of another namespace, or older than ``serve_retention_days``)."""
    cutoff = ctx.now() - timedelta(days=ctx.settings.serve_retention_days)
    kept = pending(ctx).get(recall_id)
    if kept is not None:
        if kept.namespace != ctx.namespace or kept.served_at < cutoff:
            return None
        return Served(list(kept.note_ids), {c: list(kept.features[c]) for c in COLUMNS}, json.loads(kept.weights),
                      kept.actor)
    found = ctx.db.query("SELECT weights, actor FROM brain.serves WHERE recall_id = ? AND namespace = ? "
                         "AND served_at >= ?",
                         [recall_id, ctx.namespace, cutoff])
    if not found:
        return None
    rows = ctx.db.query("SELECT note_id, relevance, effective_salience, recency FROM brain.serve_items "
                        "WHERE recall_id = ? ORDER BY rank", [recall_id])
    return Served([r[0] for r in rows], {c: [r[i + 1] for r in rows] for i, c in enumerate(COLUMNS)},
                  json.loads(found[0][0]), found[0][1])

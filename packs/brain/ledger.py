"""The serve ledger: what each ``memory.recall`` served, with the score components it ranked by.

The memory pack publishes ``memory.recall_served`` (``runtime.events.RecallServed``) for every recall, with
the typed ``ScoreComponents`` of each served note; the brain subscribes. The subscriber runs after the recall,
in a transaction of its own, for the recall's namespace and actor (ADR 0010).

Writing each serve in its own transaction cost ~3 ms a recall, so serves are kept in memory (the
``PendingServes`` mirror of ``BrainState``) and written ``serve_flush_every`` at a time, in one transaction,
and when the runtime closes (the mirror's ``close``). Feedback finds a serve in memory or in the table alike;
a serve not yet written when the process dies is lost, and feedback on it is the typed "unknown recall" error.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Optional

from packs.brain import store
from packs.brain.core import pack
from packs.brain.models import FlushServesParams, FlushServesResult, RecordServeParams, RecordServeResult
from packs.brain.settings import BrainSettings
from packs.brain.state import COLUMNS, PendingServes, Serve
from runtime import Act, Context, Visibility
from runtime.events import RecallServed


@dataclass(frozen=True)
class Served:
    note_ids: list[int]
    features: dict[str, list[float]]
    weights: dict[str, float]
    actor: Optional[str]


def pending(ctx: Context) -> dict[str, Serve]:
    """recall_id -> serve, for the committed serves of this runtime not yet written (insertion-ordered)."""
    serves: PendingServes = ctx.state.serves
    return serves.pending


@pack.subscribe("memory.recall_served")
def on_recall_served(event: RecallServed, ctx: Context) -> None:
    """Keep what a recall served: note ids, scores and the three components, read from their typed fields."""
    notes = event.notes
    w = event.weights
    keep(ctx, event.recall_id, Serve(
        ctx.namespace, ctx.actor, store.serving_profile(ctx), event.query, ctx.now(),
        json.dumps({"relevance": w.relevance, "salience": w.salience, "temporal": w.temporal}),
        [n.note_id for n in notes], [n.score for n in notes],
        {"relevance": [n.components.relevance for n in notes],
         "effective_salience": [n.components.effective_salience for n in notes],
         "recency": [n.components.recency for n in notes]}))


def keep(ctx: Context, recall_id: str, serve: Serve) -> tuple[int, int]:
    """Keep one serve (in memory once this transaction commits); write them all once enough are kept.
    Returns (serves flushed, serves pruned)."""
    s: BrainSettings = ctx.settings
    ctx.record_change("serve", (recall_id, serve))
    if len(pending(ctx)) + len(ctx.uncommitted("serve")) >= s.serve_flush_every:
        return flush(ctx)
    return 0, 0


@pack.verb("record_serve", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def record_serve(params: RecordServeParams, ctx: Context) -> RecordServeResult:
    """Keep one recall's results, as the ``recall_served`` subscriber does (for debugging and replays)."""
    flushed, pruned = keep(ctx, params.recall_id, Serve(
        ctx.namespace, ctx.actor, store.serving_profile(ctx), params.query, ctx.now(), json.dumps(params.weights),
        params.note_ids, params.scores, {c: getattr(params, c) for c in COLUMNS}))
    return RecordServeResult(recorded=len(params.note_ids), flushed=flushed, pruned=pruned)


@pack.verb("flush_serves", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def flush_serves(params: FlushServesParams, ctx: Context) -> FlushServesResult:
    """Write every serve kept in memory to the ledger now (the runtime's close does this too)."""
    flushed, pruned = flush(ctx)
    return FlushServesResult(flushed=flushed, pruned=pruned)


def flush(ctx: Context) -> tuple[int, int]:
    """Insert the pending serves (two set-wise INSERTs for all of them) and prune the expired ones.

    The pending serves are forgotten (change ``flushed``) only once this transaction commits, so a failed flush
    loses nothing.
    Pruning runs here, once per flush, not once per recall: a DELETE that finds nothing still costs ~0.3 ms.
    """
    buf = {**pending(ctx), **dict(ctx.uncommitted("serve"))}  # with this transaction's own, not yet committed
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
    ctx.record_change("flushed", rids + expired)
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

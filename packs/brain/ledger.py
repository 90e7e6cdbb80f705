"""The serve ledger: what each ``memory.recall`` served, with the score components it ranked by.

The memory pack publishes ``memory.recall_served`` (``palimpsest_memory.runtime.events.RecallServed``) for every recall,
with the typed ``ScoreComponents`` of each served note; the brain subscribes. The subscriber runs after the recall,
in a transaction of its own, for the recall's namespace and actor (ADR 0010).

Writing each serve in its own transaction cost ~3 ms a recall, so serves are kept in memory (the
``PendingServes`` mirror of ``BrainState``) and written ``serve_flush_every`` at a time, in one transaction,
and when the runtime closes (the mirror's ``close``). Feedback finds a serve in memory or in the table alike;
a serve not yet written when the process dies is lost, and feedback on it is the typed "unknown recall" error.

The ledger is bounded in age (``serve_retention_days``) and in size (``serve_max_per_namespace``, oldest
dropped first), both enforced at each flush, and keeps only what feedback needs: one row per serve with the
note ids and components as lists, no query text, no scores, no index (issue 16.13, ``bench/brain_ledger.py``).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Optional

from palimpsest_memory.packs.brain import store
from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.models import (FlushServesParams, FlushServesResult, RecordServeParams,
                                                  RecordServeResult)
from palimpsest_memory.packs.brain.settings import BrainSettings
from palimpsest_memory.packs.brain.state import COLUMNS, WEIGHTS, PendingServes, Serve
from palimpsest_memory.runtime import Act, Context, Visibility
from palimpsest_memory.runtime.events import RecallServed


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


@pack.subscribe("memory.recall_served", namespace_lock=False)
def on_recall_served(event: RecallServed, ctx: Context) -> None:
    """Keep what a recall served: note ids and the three components, read from their typed fields.

    Keeping a serve only records a change (an append no other writer reads back under the namespace's lock), so
    on a shared store it does not wait for the namespace's writers: a recall never queues behind a
    ``remember_many`` (ADR 0016). A flush, which must not run twice at once, serialises itself.

    A recall that served no note is not kept: no feedback can name a note of it, and a kept serve is a row of the
    namespace, so one recall into an empty namespace made it non-empty and refused a later ``pal import`` into it
    (issue 41)."""
    notes = event.notes
    if not notes:
        return
    w = event.weights
    keep(ctx, event.recall_id, Serve(
        ctx.namespace, ctx.actor, store.serving_profile(ctx), ctx.now(), (w.relevance, w.salience, w.temporal),
        [n.note_id for n in notes],
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
        ctx.namespace, ctx.actor, store.serving_profile(ctx), ctx.now(),
        (params.weights.get("relevance", 0.0), params.weights.get("salience", 0.0),
         params.weights.get("temporal", 0.0)),
        params.note_ids, {c: getattr(params, c) for c in COLUMNS}))
    return RecordServeResult(recorded=len(params.note_ids), flushed=flushed, pruned=pruned)


@pack.verb("flush_serves", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def flush_serves(params: FlushServesParams, ctx: Context) -> FlushServesResult:
    """Write every serve kept in memory to the ledger now (the runtime's close does this too)."""
    flushed, pruned = flush(ctx)
    return FlushServesResult(flushed=flushed, pruned=pruned)


def flush(ctx: Context) -> tuple[int, int]:
    """Insert the pending serves (one set-wise INSERT for all of them), then prune the ledger to its bounds.

    The pending serves are forgotten (change ``flushed``) only once this transaction commits, so a failed flush
    loses nothing. Pruning runs here, once per flush, not once per recall: a DELETE that finds nothing still
    costs ~0.3 ms.
    """
    # one flush at a time across processes (a shared store): after the lock, the pending serves are those no
    # other process has flushed yet, so none is written twice and sequence numbers stay unique
    ctx.serialise("serve-ledger")
    buf = {**pending(ctx), **dict(ctx.uncommitted("serve"))}  # with this transaction's own, not yet committed
    if not buf:
        return 0, 0
    cutoff = ctx.now() - timedelta(days=ctx.settings.serve_retention_days)
    rids = list(buf)
    expired = [r for r in rids if buf[r].served_at < cutoff]  # dropped unwritten: nobody can give feedback on them
    rids = [r for r in rids if buf[r].served_at >= cutoff]
    serves = [buf[r] for r in rids]
    if rids:
        (last,) = ctx.db.query("SELECT coalesce(max(seq), 0) FROM brain.serves")[0]
        ctx.db.execute(
            "INSERT INTO brain.serves (recall_id, namespace, seq, served_at, actor, profile, relevance_weight, "
            "salience_weight, temporal_weight, note_ids, relevance, effective_salience, recency) "
            "SELECT unnest($1::VARCHAR[]), unnest($2::VARCHAR[]), unnest($3::BIGINT[]), unnest($4::TIMESTAMP[]), "
            "unnest($5::VARCHAR[]), unnest($6::VARCHAR[]), unnest($7::DOUBLE[]), unnest($8::DOUBLE[]), "
            "unnest($9::DOUBLE[]), unnest($10::BIGINT[][]), unnest($11::DOUBLE[][]), unnest($12::DOUBLE[][]), "
            "unnest($13::DOUBLE[][])",
            [rids, [v.namespace for v in serves], list(range(last + 1, last + 1 + len(rids))),
             [v.served_at for v in serves], [v.actor for v in serves], [v.profile for v in serves]]
            + [[v.weights[i] for v in serves] for i in range(len(WEIGHTS))]
            + [[v.note_ids for v in serves]] + [[v.features[c] for v in serves] for c in COLUMNS])
    ctx.record_change("flushed", rids + expired)
    return len(rids), prune(ctx, cutoff) + len(expired)


def prune(ctx: Context, cutoff: datetime) -> int:
    """Delete the serves older than ``cutoff`` and, in every namespace holding more than
    ``serve_max_per_namespace``, the oldest beyond it (by ``seq``, the order they were written). Returns how many."""
    keep_at_most: int = ctx.settings.serve_max_per_namespace
    ((pruned,),) = ctx.db.query("DELETE FROM brain.serves WHERE served_at < ?", [cutoff])
    over = ctx.db.query("SELECT namespace FROM brain.serves GROUP BY namespace HAVING count(*) > ?", [keep_at_most])
    for (namespace,) in over:  # the newest seq to drop: the (keep_at_most + 1)-th newest of the namespace
        ((newest_dropped,),) = ctx.db.query("SELECT seq FROM brain.serves WHERE namespace = ? ORDER BY seq DESC "
                                            "LIMIT 1 OFFSET ?", [namespace, keep_at_most])
        ((n,),) = ctx.db.query("DELETE FROM brain.serves WHERE namespace = ? AND seq <= ?",
                               [namespace, newest_dropped])
        pruned += n
    return int(pruned)


def serve_features(ctx: Context, recall_id: str) -> Optional[Served]:
    """The note ids, component columns and score weights of a serve of this namespace, kept in memory or
    written (None if unknown, of another namespace, older than ``serve_retention_days``, or dropped by
    ``serve_max_per_namespace``). A recall id written twice (only ``record_serve`` can) means its newest serve."""
    cutoff = ctx.now() - timedelta(days=ctx.settings.serve_retention_days)
    kept = pending(ctx).get(recall_id)
    if kept is not None:
        if kept.namespace != ctx.namespace or kept.served_at < cutoff:
            return None
        return Served(list(kept.note_ids), {c: list(kept.features[c]) for c in COLUMNS},
                      dict(zip(WEIGHTS, kept.weights)), kept.actor)
    found = ctx.db.query(
        "SELECT actor, relevance_weight, salience_weight, temporal_weight, note_ids, relevance, effective_salience, "
        "recency FROM brain.serves WHERE recall_id = ? AND namespace = ? AND served_at >= ? ORDER BY seq DESC LIMIT 1",
        [recall_id, ctx.namespace, cutoff])
    if not found:
        return None
    row = found[0]
    return Served(list(row[4]), {c: list(col) for c, col in zip(COLUMNS, row[5:])},
                  dict(zip(WEIGHTS, row[1:4])), row[0])

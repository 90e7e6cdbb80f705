"""brain.feedback: credit a recall's score components for one note's outcome, then re-project the weights."""
from __future__ import annotations

from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.packs.brain import store
from palimpsest_memory.packs.brain.ledger import serve_features
from palimpsest_memory.packs.brain.models import FeedbackParams, FeedbackResult
from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.settings import BrainSettings
from palimpsest_memory.runtime import Act, Context, errors


def event_weight(params: FeedbackParams, s: BrainSettings, verb: str) -> float:
    """correction → weights.correction; else the source's configured weight, or the caller's within bounds."""
    w = s.weights
    if params.weight is None:
        return w.correction if params.signal == "correction" else getattr(w, params.source)
    low, high = (w.implicit_min, w.implicit_max) if params.source == "implicit" else (w.implicit_max, w.max)
    if not low <= params.weight <= high:
        raise errors.InvalidParams(
            f"weight {params.weight} of {params.source} feedback must lie in [{low}, {high}]", verb=verb,
            details={"errors": [{"loc": ["weight"], "msg": "out of range"}]})
    return params.weight


@pack.verb("feedback", act=Act.COMMISSIVE)
def feedback(params: FeedbackParams, ctx: Context) -> FeedbackResult:
    """Tell the brain whether a recalled note was useful; it updates the profile's posteriors and weights.

    The note must be one the recall ``recall_id`` returned in this namespace (it may still be waiting in
    memory to be written). The profile updated is the named one, else the one bound to the actor (``actor``,
    else the call's actor, else the one the recall was made for), else the namespace's; its new weights are
    projected for the namespace (if it is the namespace's profile) and for every actor bound to it. A useful note raises
    the weights of the components under which it stood out above that recall's average more than in its score, and
    lowers the others (not_useful and correction do the reverse); each event is a pseudo-observation of ``weight``
    counts near the current mean (ADR 0010).
    """
    s: BrainSettings = ctx.settings
    served = serve_features(ctx, params.recall_id)
    if served is None:
        raise errors.NotFound(f"no recall {params.recall_id!r} in namespace {ctx.namespace!r} (unknown, or expired "
                              f"after {s.serve_retention_days:g} days)", verb=ctx.verb,
                              details={"errors": [{"loc": ["recall_id"], "msg": "unknown recall"}]})
    ids = served.note_ids
    if params.note_id not in ids:
        raise errors.InvalidParams(f"note {params.note_id} was not returned by recall {params.recall_id!r}",
                                   verb=ctx.verb, details={"errors": [{"loc": ["note_id"], "msg": "not served"}],
                                                           "served": ids})
    weight = event_weight(params, s, ctx.verb)
    actor = params.actor or ctx.actor or served.actor  # by default, whoever the recall was made for
    name = store.resolve(ctx, params.profile, actor)
    store.ensure(ctx, name)
    state, n, explore = store.load(ctx, name)
    g = post.credit(served.features, ids.index(params.note_id), served.weights, relative=s.credit == "relative")
    delta = post.deltas(g, params.signal, weight, state)
    new = post.apply(state, delta, s.ess_cap, s.min_count)
    seq = store.append_event(
        ctx, name, "feedback", {"credit": g, "mode": s.credit, "delta": delta, "cap": s.ess_cap,
                                     "floor": s.min_count},
        recall_id=params.recall_id, note_id=params.note_id, signal=params.signal, source=params.source,
        weight=weight, actor=actor)
    store.save(ctx, name, new, n + 1)
    use_sample = explore if params.explore is None else params.explore
    projected = store.project(ctx, name, new, use_sample, f"{ctx.namespace}/{name}/{seq}")
    return FeedbackResult(event_seq=seq, profile=name, weight=weight, credit=g, delta=delta,
                          state=store.describe(ctx, name, new, n + 1, explore), projected=projected)

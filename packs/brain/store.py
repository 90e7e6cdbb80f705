"""The brain's tables: profiles and bindings, posteriors (a cache of the event log), events, projections."""
from __future__ import annotations

import json
from typing import Any, Optional

from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.packs.brain.models import Posterior, ProfileState
from palimpsest_memory.packs.brain.settings import BrainSettings
from palimpsest_memory.packs.brain.state import NAMESPACE_ACTOR, Bindings
from palimpsest_memory.runtime import Context, errors

TUNABLE = {c: f"memory::{c}_weight" for c in post.COMPONENTS}


def prior(s: BrainSettings) -> dict[str, dict[str, float]]:
    return {c: getattr(s.priors, c).model_dump() for c in post.COMPONENTS}


def profile_row(ctx: Context, name: str) -> Optional[tuple[bool]]:
    rows = ctx.db.query("SELECT explore FROM brain.profiles WHERE namespace = ? AND name = ?", [ctx.namespace, name])
    return rows[0] if rows else None


def binding(ctx: Context, actor: str) -> Optional[str]:
    rows = ctx.db.query("SELECT profile FROM brain.bindings WHERE namespace = ? AND actor = ?",
                        [ctx.namespace, actor])
    return rows[0][0] if rows else None


def bindings(ctx: Context) -> dict[str, str]:
    return dict(ctx.db.query("SELECT actor, profile FROM brain.bindings WHERE namespace = ? ORDER BY actor",
                             [ctx.namespace]))


def active_profile(ctx: Context) -> str:
    """The profile bound to the namespace itself (its weights are the ones recall ranks with)."""
    return binding(ctx, NAMESPACE_ACTOR) or ctx.settings.default_profile


def resolve(ctx: Context, profile: Optional[str], actor: Optional[str]) -> str:
    """A named profile (which must exist), else the actor's binding, else the namespace's, else the default."""
    s: BrainSettings = ctx.settings
    if profile is not None:
        if profile != s.default_profile and profile_row(ctx, profile) is None:
            raise errors.NotFound(f"no profile {profile!r} in namespace {ctx.namespace!r}", verb=ctx.verb,
                                  details={"errors": [{"loc": ["profile"], "msg": "unknown profile"}]})
        return profile
    if actor is not None:
        bound = binding(ctx, actor)
        if bound is not None:
            return bound
    return active_profile(ctx)


def load(ctx: Context, name: str) -> tuple[post.State, int, bool]:
    """(state, feedback events since init/reset, explore) — the prior when nothing is stored yet."""
    s: BrainSettings = ctx.settings
    rows = ctx.db.query("SELECT component, alpha, beta, events FROM brain.posteriors "
                        "WHERE namespace = ? AND profile = ?", [ctx.namespace, name])
    row = profile_row(ctx, name)
    explore = bool(row[0]) if row else s.explore
    if not rows:
        return post.prior_state(prior(s)), 0, explore
    return {c: (a, b) for c, a, b, _ in rows}, int(rows[0][3]), explore


def ensure(ctx: Context, name: str, explore: Optional[bool] = None) -> bool:
    """Create the profile (its row, an init event, its posteriors at the prior) unless it exists."""
    s: BrainSettings = ctx.settings
    created = profile_row(ctx, name) is None
    if created:
        ctx.db.execute("INSERT INTO brain.profiles VALUES (?, ?, ?, ?)",
                       [ctx.namespace, name, s.explore if explore is None else explore, ctx.now()])
    elif explore is not None:
        ctx.db.execute("UPDATE brain.profiles SET explore = ? WHERE namespace = ? AND name = ?",
                       [explore, ctx.namespace, name])
    if not ctx.db.query("SELECT 1 FROM brain.posteriors WHERE namespace = ? AND profile = ? LIMIT 1",
                        [ctx.namespace, name]):
        p = prior(s)
        append_event(ctx, name, "init", {"prior": p})
        now = ctx.now()
        ctx.db.executemany("INSERT INTO brain.posteriors VALUES (?, ?, ?, ?, ?, 0, ?)",
                           [[ctx.namespace, name, c, p[c]["alpha"], p[c]["beta"], now] for c in post.COMPONENTS])
    return created


def save(ctx: Context, name: str, state: post.State, events: int) -> None:
    now = ctx.now()
    ctx.db.executemany(
        "UPDATE brain.posteriors SET alpha = ?, beta = ?, events = ?, updated_at = ? "
        "WHERE namespace = ? AND profile = ? AND component = ?",
        [[a, b, events, now, ctx.namespace, name, c] for c, (a, b) in state.items()])


def append_event(ctx: Context, name: str, kind: str, payload: dict[str, Any], **cols: Any) -> int:
    (seq,) = ctx.db.query(
        "INSERT INTO brain.events (seq, namespace, profile, kind, recall_id, note_id, signal, source, weight, "
        "actor, payload, created_at) VALUES (nextval('brain.event_seq'), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "RETURNING seq",
        [ctx.namespace, name, kind, cols.get("recall_id"), cols.get("note_id"), cols.get("signal"),
         cols.get("source"), cols.get("weight"), cols.get("actor"), json.dumps(payload), ctx.now()])[0]
    return int(seq)


def events(ctx: Context, name: str, newest: Optional[int] = None) -> list[dict[str, Any]]:
    sql = ("SELECT seq, kind, recall_id, note_id, signal, source, weight, actor, payload, created_at AS at "
           "FROM brain.events WHERE namespace = ? AND profile = ? ORDER BY seq"
           + (" DESC LIMIT ?" if newest is not None else ""))
    rows = ctx.db.query_dicts(sql, [ctx.namespace, name] + ([newest] if newest is not None else []))
    for r in rows:
        r["payload"] = json.loads(r["payload"])
    return rows


def audience(ctx: Context, name: str) -> list[str]:
    """Who ranks with profile ``name`` here: ``'*'`` (the namespace) when it is the active profile, and every
    actor bound to it."""
    actors = [a for (a,) in ctx.db.query("SELECT actor FROM brain.bindings WHERE namespace = ? AND profile = ? "
                                         "AND actor <> ? ORDER BY actor", [ctx.namespace, name, NAMESPACE_ACTOR])]
    return ([NAMESPACE_ACTOR] if name == active_profile(ctx) else []) + actors


def project(ctx: Context, name: str, state: post.State, explore: bool, seed: str) -> Optional[dict[str, float]]:
    """Set the memory score weights of everyone who ranks with the profile (the namespace's tunables if it is
    the active profile, each bound actor's own tunables) from its posteriors; None if nobody ranks with it."""
    targets = audience(ctx, name)
    if not targets:
        return None
    weights = post.sample(state, seed) if explore else post.mean(state)
    for actor in targets:
        for c in post.COMPONENTS:
            ctx.set_tunable(TUNABLE[c], weights[c], actor=None if actor == NAMESPACE_ACTOR else actor)
    ctx.db.executemany(
        "INSERT INTO brain.projections VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (namespace, actor) DO UPDATE SET "
        "profile = excluded.profile, relevance = excluded.relevance, salience = excluded.salience, "
        "temporal = excluded.temporal, sampled = excluded.sampled, set_at = excluded.set_at",
        [[ctx.namespace, a, name, weights["relevance"], weights["salience"], weights["temporal"], explore, ctx.now()]
         for a in targets])
    return weights


def forget_actor(ctx: Context, actor: str) -> None:
    """Drop an actor's own weights, so recall for it falls back to the namespace's."""
    for c in post.COMPONENTS:
        ctx.clear_tunable(TUNABLE[c], actor=actor)
    ctx.db.execute("DELETE FROM brain.projections WHERE namespace = ? AND actor = ?", [ctx.namespace, actor])


def projected(ctx: Context, actor: Optional[str] = None) -> Optional[dict[str, float]]:
    """The weights last set for the actor (if it has its own), else for the namespace."""
    rows = ctx.db.query("SELECT relevance, salience, temporal FROM brain.projections WHERE namespace = ? "
                        "AND actor IN (?, ?) ORDER BY actor = ? LIMIT 1",
                        [ctx.namespace, actor or NAMESPACE_ACTOR, NAMESPACE_ACTOR, NAMESPACE_ACTOR])
    return dict(zip(post.COMPONENTS, rows[0])) if rows else None


def serving_profile(ctx: Context) -> str:
    """The profile whose weights recall ranks with for this call's actor: :func:`resolve` without a named
    profile, from the committed bindings (the ``Bindings`` mirror; no SQL on the serve path)."""
    bindings: Bindings = ctx.state.bindings
    return bindings.serving(ctx.namespace, ctx.actor, ctx.settings.default_profile)


def bind(ctx: Context, actor: str, profile: str) -> None:
    """Bind ``actor`` ('*' = the namespace) to ``profile`` in this namespace."""
    ctx.db.execute("INSERT INTO brain.bindings VALUES (?, ?, ?, ?) ON CONFLICT (namespace, actor) DO UPDATE SET "
                   "profile = excluded.profile, bound_at = excluded.bound_at",
                   [ctx.namespace, actor, profile, ctx.now()])
    ctx.record_change("binding", (actor, profile))


def unbind(ctx: Context, actor: str) -> None:
    ctx.db.execute("DELETE FROM brain.bindings WHERE namespace = ? AND actor = ?", [ctx.namespace, actor])
    ctx.record_change("binding", (actor, None))


def describe(ctx: Context, name: str, state: post.State, events_n: int, explore: bool) -> ProfileState:
    return ProfileState(
        namespace=ctx.namespace, profile=name, explore=explore, active=name == active_profile(ctx),
        posteriors={c: Posterior(alpha=a, beta=b, mean=a / (a + b)) for c, (a, b) in state.items()},
        feedback_events=events_n)

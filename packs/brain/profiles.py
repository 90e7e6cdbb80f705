"""brain.profile, brain.unbind, brain.state, brain.reset and brain.replay: naming, binding, inspecting,
resetting and rebuilding state."""
from __future__ import annotations

from palimpsest_memory.packs.brain import posteriors as post
from palimpsest_memory.packs.brain import store
from palimpsest_memory.packs.brain.models import (Event, Posterior, ProfileParams, ProfileResult, ReplayParams,
                                                  ReplayResult, ResetParams, ResetResult, StateParams, StateResult,
                                                  UnbindParams, UnbindResult)
from palimpsest_memory.packs.brain.core import pack
from palimpsest_memory.packs.brain.settings import BrainSettings
from palimpsest_memory.runtime import Act, Context


@pack.verb("profile", act=Act.DECLARATION)
def profile(params: ProfileParams, ctx: Context) -> ProfileResult:
    """Create a named profile (its posteriors start at the prior) and bind it to the namespace or an actor.

    Bound to the namespace (no ``actor``), its weights become the memory score weights recall uses here.
    Bound to an actor, it receives that actor's feedback and its weights are the ones recall uses for calls
    made for that actor (``--actor``, ``X-Palimpsest-Actor``); an actor without a binding falls back to the
    namespace's profile (``brain.unbind`` removes a binding), and a namespace without one to the default profile.
    """
    created = store.ensure(ctx, params.name, params.explore)
    bound_to, projected = None, None
    if params.bind:
        bound_to = params.actor or store.NAMESPACE_ACTOR
        store.bind(ctx, bound_to, params.name)
    state, n, explore = store.load(ctx, params.name)
    if bound_to is not None:  # the namespace's or the actor's weights are now this profile's
        projected = store.project(ctx, params.name, state, explore, f"{ctx.namespace}/{params.name}/bind/{n}")
    return ProfileResult(created=created, bound_to=bound_to, state=store.describe(ctx, params.name, state, n, explore),
                         projected=projected)


@pack.verb("unbind", act=Act.DECLARATION)
def unbind(params: UnbindParams, ctx: Context) -> UnbindResult:
    """Remove an actor's profile binding (its recalls rank with the namespace's weights again), or, without
    ``actor``, the namespace's (it falls back to the default profile). The profiles themselves are kept."""
    actor = params.actor or store.NAMESPACE_ACTOR
    was = store.binding(ctx, actor)
    store.unbind(ctx, actor)
    projected = None
    if actor != store.NAMESPACE_ACTOR:
        store.forget_actor(ctx, actor)
    elif was is not None:  # the default profile is the namespace's again: project it (and keep its actors')
        name = ctx.settings.default_profile
        state, n, explore = store.load(ctx, name)
        projected = store.project(ctx, name, state, explore, f"{ctx.namespace}/{name}/bind/{n}")
    return UnbindResult(actor=actor, was=was, now=store.resolve(ctx, None, params.actor), projected=projected)


@pack.verb("state", act=Act.ASSERTIVE)
def state(params: StateParams, ctx: Context) -> StateResult:
    """Show a profile's posteriors (the default: the actor's, else the namespace's), bindings and newest events.

    The actor is ``actor``, else the call's actor; ``projected`` are the weights recall uses for it."""
    actor = params.actor or ctx.actor
    name = store.resolve(ctx, params.profile, actor)
    st, n, explore = store.load(ctx, name)
    evs = store.events(ctx, name, params.events) if params.events else []
    return StateResult(state=store.describe(ctx, name, st, n, explore), projected=store.projected(ctx, actor),
                       bindings=store.bindings(ctx), events=[Event(**e) for e in evs])


@pack.verb("reset", act=Act.COMMISSIVE)
def reset(params: ResetParams, ctx: Context) -> ResetResult:
    """Put a profile's posteriors back at the prior (logged as a reset event; earlier events are kept).

    The default profile is the one of ``actor`` (else the call's actor), else the namespace's; the weights of
    everyone who ranks with it go back to the prior means."""
    s: BrainSettings = ctx.settings
    actor = params.actor or ctx.actor
    name = store.resolve(ctx, params.profile, actor)
    store.ensure(ctx, name)
    p = store.prior(s)
    seq = store.append_event(ctx, name, "reset", {"prior": p}, actor=actor)
    st = post.prior_state(p)
    store.save(ctx, name, st, 0)
    _, _, explore = store.load(ctx, name)
    projected = store.project(ctx, name, st, False, f"{ctx.namespace}/{name}/{seq}")
    return ResetResult(event_seq=seq, state=store.describe(ctx, name, st, 0, explore), projected=projected)


@pack.verb("replay", act=Act.ASSERTIVE)
def replay(params: ReplayParams, ctx: Context) -> ReplayResult:
    """Rebuild a profile's posteriors from its event log alone and compare them with the stored ones."""
    name = store.resolve(ctx, params.profile, params.actor or ctx.actor)
    evs = store.events(ctx, name)
    rebuilt, _ = post.replay((e["kind"], e["payload"]) for e in evs)
    stored, _, _ = store.load(ctx, name)
    if rebuilt is None:  # never touched: both are the prior
        rebuilt = stored

    def view(st: post.State) -> dict[str, Posterior]:
        return {c: Posterior(alpha=a, beta=b, mean=a / (a + b)) for c, (a, b) in st.items()}

    return ReplayResult(profile=name, events=len(evs), replayed=view(rebuilt), stored=view(stored),
                        matches=all(rebuilt[c] == stored[c] for c in post.COMPONENTS))

"""memory.explain: entity-aware, scoped recall enriched with the knowledge graph (ADR 0011).

"Why did we choose Postgres for Orion?" — detect the entities the question names (``kg.detect_entities``),
scope the search to the scope one of them owns, prefer decision notes for a why-question, add what the
knowledge graph knows about those entities at ``as_of`` (with what superseded what) and the notes its facts
cite, and say which of these parts were skipped and why. Read-only; the kg pack is reached only through its
public verbs.
"""
from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, Optional

from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models.notes import Note, RecallParams, RecallResult
from palimpsest_memory.packs.memory.models.explain import (Degraded, DetectedEntity, ExplainFact, ExplainHit,
                                                           ExplainParams, ExplainResult, Room, ScopeInference,
                                                           SharedScope)
from palimpsest_memory.packs.memory.ranking.adjusters import explain_boosts
from palimpsest_memory.packs.memory.recall import answer
from palimpsest_memory.packs.memory.settings import ExplainSettings, MemorySettings
from palimpsest_memory.packs.memory.stages import check_query
from palimpsest_memory.runtime import Act, Context

_WORD = re.compile(r"\w+")
_NOTE_SOURCE = re.compile(r"^(?:m:)?(\d{1,18})$")
RECALL_MAX_LIMIT = 200


def fold(text: str) -> str:
    """Case- and space-insensitive comparison key (the kg pack's name key: NFKC, casefold, spaces collapsed)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def is_why_question(query: str, words: list[str]) -> bool:
    wanted = {w.casefold() for w in words}
    return any(w in wanted for w in _WORD.findall(query.casefold()))


@pack.verb("explain", act=Act.ASSERTIVE)
def explain(params: ExplainParams, ctx: Context) -> ExplainResult:
    """Answer a "why" question with evidence: entities in the query, the scope they own, scoped verbatim recall
    (decision notes preferred for why/decide/choose questions), the entities' KG facts valid ``as_of`` with
    their supersession and source notes, and optionally the topics the scope shares with other scopes.

    Degrades instead of failing: no entity → unscoped recall; no facts → search only; an empty scoped search →
    unscoped recall; ``degraded`` says what was skipped. memory.recall's top result on the same query is
    always in ``memories``, ``source_memories`` or ``baseline_extra``.
    """
    s: MemorySettings = ctx.settings
    x: ExplainSettings = s.explain
    check_query(params.query, s, ctx.verb)
    now = ctx.now()
    as_of = params.as_of or now
    degraded: list[Degraded] = []

    entities = _detect(ctx, params.query)
    scopes = _existing_scopes(ctx)
    inference = _infer_scope(ctx, params, entities, scopes, x, degraded)

    facts: list[ExplainFact] = []
    history: list[ExplainFact] = []
    if not params.include_kg:
        degraded.append(Degraded(part="kg", reason="not requested (include_kg=false)"))
    elif entities:
        facts, history = _kg_facts(ctx, entities, as_of, now, x)
        if not facts and not history:
            names = ", ".join(e.name for e in entities)
            degraded.append(Degraded(part="kg", reason=f"the knowledge graph has no facts about {names}: "
                                                       "search results only"))
    sources = _source_memories(ctx, facts + history, degraded)

    why = is_why_question(params.query, x.why_words)
    boost = x.decision_boost if why and params.kind is None else 0.0
    grounding: dict[int, list[int]] = {}  # note → facts it grounds that link two entities the query names
    for f in facts + history:
        if f.source_note_id is not None and len(f.entities) >= 2:
            grounding.setdefault(f.source_note_id, []).append(f.fact_id)
    memories, baseline, scope = _search(ctx, params, inference, boost, grounding, x, degraded)

    held = {h.note.id for h in memories} | {n.id for n in sources}
    base_origin = "scoped" if params.scope else "unscoped"
    extra = [_hit(h, base_origin) for h in baseline.results[: x.baseline_extra] if h.note.id not in held]

    related: list[Room] = []
    if params.include_tunnels:
        if scope is None:
            degraded.append(Degraded(part="tunnels", reason="no scope: tunnels link one scope to others"))
        else:
            related = _tunnels(ctx, scope, x.max_rooms)
    return ExplainResult(query=params.query, why_question=why, entities_detected=entities, scope=scope,
                         scope_inference=inference, kg_facts=facts, kg_history=history, memories=memories,
                         source_memories=sources, baseline_extra=extra, related=related, as_of=as_of,
                         degraded=degraded)


# -- entities and scope -------------------------------------------------------------------------------------
def _detect(ctx: Context, query: str) -> list[DetectedEntity]:
    found: dict[int, DetectedEntity] = {}
    for m in ctx.call("kg.detect_entities", {"text": query}).matches:
        e = found.get(m.entity_id)
        if e is None:
            e = found[m.entity_id] = DetectedEntity(entity_id=m.entity_id, node_id=m.node_id, name=m.name,
                                                    kind=m.kind, matched=[])
        if m.matched not in e.matched:
            e.matched.append(m.matched)
    return list(found.values())


def _existing_scopes(ctx: Context) -> dict[str, str]:
    """The scopes of this namespace's live notes, by comparison key."""
    rows = ctx.db.query("SELECT DISTINCT scope FROM memory.notes WHERE namespace = ? AND scope IS NOT NULL AND "
                        "archived_at IS NULL ORDER BY scope", [ctx.namespace])
    out: dict[str, str] = {}
    for (scope,) in rows:
        out.setdefault(fold(scope), scope)
    return out


def _infer_scope(ctx: Context, params: ExplainParams, entities: list[DetectedEntity], scopes: dict[str, str],
                 x: ExplainSettings, degraded: list[Degraded]) -> ScopeInference:
    """The caller's scope; else the scope owned by most detected entities (name ownership beats facts)."""
    by_name: dict[str, list[str]] = {}
    by_fact: dict[str, list[str]] = {}
    owners = set(x.scope_owner_kinds)
    for e in entities:
        if e.kind not in owners:
            continue
        aliases = ctx.call("kg.entity", {"id": e.entity_id, "limit": 1}).entity.aliases
        for text in [e.name, *aliases]:
            sc = scopes.get(fold(text))
            if sc is not None and e.name not in by_name.setdefault(sc, []):
                by_name[sc].append(e.name)
        for pred in x.scope_predicates:
            for f in ctx.call("kg.facts", {"subject": e.name, "predicate": pred, "include_superseded": True,
                                           "limit": x.max_facts_per_entity}).facts:  # past participants too
                sc = scopes.get(fold(f.object))
                if sc is not None and e.name not in by_fact.setdefault(sc, []):
                    by_fact[sc].append(e.name)
        e.owns_scopes = sorted({sc for sc, names in (*by_name.items(), *by_fact.items()) if e.name in names})
    candidates = sorted(set(by_name) | set(by_fact))
    if params.scope is not None:
        return ScopeInference(source="caller", candidates=candidates, requested=params.scope, applied=True)
    if not entities:
        degraded.append(Degraded(part="entities", reason="no known entity in the query: unscoped recall"))
        return ScopeInference(source="none", applied=False)
    tier, via = (by_name, "name") if by_name else (by_fact, "fact")
    if not tier:
        names = ", ".join(f"{e.name} ({e.kind})" for e in entities)
        degraded.append(Degraded(part="scope", reason=f"no detected entity owns a scope ({names}): unscoped recall"))
        return ScopeInference(source="none", applied=False)
    best = max(len(v) for v in tier.values())
    top = sorted(sc for sc, v in tier.items() if len(v) == best)
    if len(top) > 1:
        degraded.append(Degraded(part="scope", reason=f"the detected entities own several scopes equally "
                                                      f"({', '.join(top)}): unscoped recall"))
        return ScopeInference(source="none", candidates=candidates, applied=False)
    return ScopeInference(source="entity", entity=tier[top[0]][0], via=via, candidates=candidates,
                          requested=top[0], applied=True)


# -- knowledge graph ----------------------------------------------------------------------------------------
def _valid(f: Any, t: datetime) -> bool:
    return (f.valid_from is None or f.valid_from <= t) and (f.valid_to is None or t < f.valid_to)


def _kg_facts(ctx: Context, entities: list[DetectedEntity], as_of: datetime, now: datetime,
              x: ExplainSettings) -> tuple[list[ExplainFact], list[ExplainFact]]:
    """Every recorded (not retracted) fact with a detected entity as subject or object, split by validity at
    ``as_of``; each with its successor's object and the objects of its (subject, predicate) valid now."""
    about: dict[int, list[str]] = {}
    order: list[Any] = []
    groups: dict[tuple[int, str], dict[int, Any]] = {}  # (subject id, predicate) → every fact of it we know
    complete: set[tuple[int, str]] = set()

    def keep(f: Any) -> None:
        groups.setdefault((f.subject.id, f.predicate), {})[f.fact_id] = f

    for e in entities:
        for side in ("subject", "object"):
            got = ctx.call("kg.facts", {side: e.name, "include_superseded": True,
                                        "limit": x.max_facts_per_entity}).facts
            for f in got:
                keep(f)
                if f.fact_id not in about:
                    about[f.fact_id] = []
                    order.append(f)
                if e.name not in about[f.fact_id]:
                    about[f.fact_id].append(e.name)
            if side == "subject" and len(got) < x.max_facts_per_entity:
                complete.update((e.entity_id, f.predicate) for f in got)
    for key in {(f.subject.id, f.predicate) for f in order} - complete:  # fill in the rest of each timeline
        subject = next(f.subject.name for f in order if (f.subject.id, f.predicate) == key)
        for f in ctx.call("kg.facts", {"subject": subject, "predicate": key[1], "include_superseded": True,
                                       "limit": x.max_facts_per_entity}).facts:
            keep(f)
    valid, other = [], []
    for f in order:
        group = groups[(f.subject.id, f.predicate)]
        succ = group.get(f.superseded_by) if f.superseded_by is not None else None
        m = _NOTE_SOURCE.match(f.source_id or "")
        view = ExplainFact(
            fact_id=f.fact_id, subject=f.subject.name, predicate=f.predicate, object=f.object,
            entities=about[f.fact_id], valid_from=f.valid_from, valid_to=f.valid_to,
            valid_at_as_of=_valid(f, as_of), current=_valid(f, now), superseded_by=f.superseded_by,
            superseded_by_object=succ.object if succ is not None else None,
            current_objects=list(dict.fromkeys(g.object for g in group.values() if _valid(g, now))),
            confidence=f.confidence, source_id=f.source_id, source_note_id=int(m.group(1)) if m else None)
        (valid if view.valid_at_as_of else other).append(view)
    when = lambda v: (v.valid_from or datetime.min, v.fact_id)  # noqa: E731
    return sorted(valid, key=when), sorted(other, key=when)


def _source_memories(ctx: Context, facts: list[ExplainFact], degraded: list[Degraded]) -> list[Note]:
    ids = list(dict.fromkeys(f.source_note_id for f in facts if f.source_note_id is not None))
    foreign = sorted({f.source_id for f in facts if f.source_id and f.source_note_id is None})
    if foreign:
        degraded.append(Degraded(part="source_memories",
                                 reason=f"source ids that name no memory note: {', '.join(foreign)}"))
    if not ids:
        return []
    got = ctx.call("memory.get", {"ids": ids})
    if got.missing:
        degraded.append(Degraded(part="source_memories", reason="cited notes not found in this namespace: "
                                                                + ", ".join(f"m:{i}" for i in got.missing)))
    return got.notes


# -- search -------------------------------------------------------------------------------------------------
def _recall(ctx: Context, params: ExplainParams, limit: int, scope: Optional[str]) -> RecallResult:
    """memory.recall's answer, ranked in this call (``recall.answer``): explain's inner recalls are not served
    to anyone, so they publish no ``recall_served`` (the brain records only what a caller was given)."""
    args: dict[str, Any] = {"query": params.query, "limit": min(limit, RECALL_MAX_LIMIT), "include_breakdown": True}
    if scope is not None:
        args["scope"] = scope
    if params.kind is not None:
        args["kind"] = params.kind
    return answer(RecallParams.model_validate(args), ctx)[0]


def _hit(h: Any, origin: str, decision: float = 0.0, fact: float = 0.0, grounds: Optional[list[int]] = None,
         score: Optional[float] = None) -> ExplainHit:
    return ExplainHit(note=h.note, score=h.score if score is None else score, recall_score=h.score,
                      decision_boost=decision, fact_boost=fact, grounds=grounds or [], breakdown=h.breakdown,
                      origin=origin)


def _search(ctx: Context, params: ExplainParams, inference: ScopeInference, boost: float,
            grounding: dict[int, list[int]], x: ExplainSettings, degraded: list[Degraded]
            ) -> tuple[list[ExplainHit], RecallResult, Optional[str]]:
    """(memories, the baseline memory.recall on the caller's params, the scope the memories are restricted to).

    The memories are the search's top ``limit × pool_factor`` (when a boost can apply) re-ranked by
    ``ranking.explain_boosts`` (``recall_score + decision_boost + fact_boost``), cut to ``limit``; each boost
    in force is recorded in the hits' breakdown ``context`` too."""
    baseline = _recall(ctx, params, params.limit, params.scope)
    fact_boost = x.fact_source_boost if grounding else 0.0
    reranks = bool(boost) or bool(fact_boost)
    pool_limit = params.limit * x.pool_factor if reranks else params.limit
    scope = inference.requested

    def search(sc: Optional[str]) -> RecallResult:
        if sc == params.scope and pool_limit == params.limit:
            return baseline
        return _recall(ctx, params, pool_limit, sc)

    pool = search(scope)
    if scope is not None and not pool.results:
        degraded.append(Degraded(part="scoped_search", reason=f"nothing in scope {scope!r} matches: "
                                                              "fell back to unscoped recall"))
        inference.applied = False
        scope = None
        pool = _recall(ctx, params, pool_limit, None)
    origin = "scoped" if scope is not None else "unscoped"
    decision = [boost if h.note.kind == "decision" else 0.0 for h in pool.results]
    fact = [fact_boost if h.note.id in grounding else 0.0 for h in pool.results]
    scores, order = explain_boosts([h.score for h in pool.results], decision, fact)
    hits = []
    for j in order[: params.limit]:
        h = pool.results[j]
        if reranks and h.breakdown is not None:
            extra = {"decision_boost": decision[j]} if boost else {}
            extra.update({"fact_boost": fact[j]} if fact_boost else {})
            h = h.model_copy(update={"breakdown": h.breakdown.model_copy(
                update={"context": {**h.breakdown.context, **extra}})})
        hits.append(_hit(h, origin, decision[j], fact[j], grounding.get(h.note.id), scores[j]))
    return hits, baseline, scope


# -- tunnels ------------------------------------------------------------------------------------------------
def _tunnels(ctx: Context, scope: str, max_rooms: int) -> list[Room]:
    """Rooms (tags, kinds) of the scope's live notes that other scopes' notes share, biggest first."""
    rows = ctx.db.query(
        "WITH live AS (SELECT scope, tags, kind FROM memory.notes WHERE namespace = ? AND scope IS NOT NULL AND "
        "archived_at IS NULL AND superseded_at IS NULL), rooms AS ("
        "SELECT scope, unnest(tags) AS room, 'tag' AS type FROM live UNION ALL "
        "SELECT scope, kind, 'kind' FROM live WHERE kind IS NOT NULL) "
        "SELECT type, room, scope, count(*) FROM rooms GROUP BY type, room, scope ORDER BY type, room, scope",
        [ctx.namespace])
    mine: dict[tuple[str, str], int] = {}
    others: dict[tuple[str, str], list[SharedScope]] = {}
    for typ, room, sc, n in rows:
        if sc == scope:
            mine[(typ, room)] = n
        else:
            others.setdefault((typ, room), []).append(SharedScope(scope=sc, notes=n))
    rooms = [Room(room=room, type=typ, notes_in_scope=n,
                  scopes=sorted(others[(typ, room)], key=lambda o: (-o.notes, o.scope)))
             for (typ, room), n in mine.items() if (typ, room) in others]
    rooms.sort(key=lambda r: (-r.notes_in_scope, r.type != "tag", r.room))
    return rooms[:max_rooms]

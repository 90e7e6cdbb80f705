"""Consolidation (without an LLM), consolidation candidates, archive and prune (ADR 0012).

Archiving is soft: ``archived_at`` is set, the note leaves recall and the walk (the index's ``alive`` column),
but ``memory.get``, ``memory.edges`` and belief history still show it. Nothing is deleted.
"""
from __future__ import annotations

import numpy as np
from pydantic import ValidationError

from palimpsest_memory.packs.memory.mirrors.changes import Archived, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.graph import create_edges, note_states
from palimpsest_memory.packs.memory.mirrors.graph import MemoryGraph
from palimpsest_memory.packs.memory.models.notes import NoteIn, RecallFilters
from palimpsest_memory.packs.memory.models.graph import (ArchiveParams, ArchiveResult, CandidateGroup,
                                                         CandidatesGroupParams, CandidatesGroupResult,
                                                         ConsolidateParams, ConsolidateResult, LinkIn, PruneParams,
                                                         PruneResult)
from palimpsest_memory.packs.memory.note_store import fetch_notes, store_notes
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Act, Context, errors


def _check_ids(ctx: Context, ids: list[int], field: str) -> list[int]:
    cap = ctx.settings.graph.max_ids
    if len(ids) > cap:
        raise errors.LimitExceeded(f"at most {cap} ids per call, got {len(ids)}",
                                   details={"errors": [{"loc": [field], "msg": "too many ids"}]})
    ids = list(dict.fromkeys(ids))
    note_states(ctx, ids, {i: [field, j] for j, i in enumerate(ids)})
    return ids


def archive_notes(ctx: Context, ids: list[int]) -> tuple[list[int], list[int]]:
    """Set ``archived_at`` on the notes not yet archived; the index drops them after commit."""
    now = ctx.now()
    done = sorted(r[0] for r in ctx.db.query(
        "UPDATE memory.notes SET archived_at = ? WHERE namespace = ? AND archived_at IS NULL AND id IN "
        "(SELECT unnest(?::BIGINT[])) RETURNING id", [now, ctx.namespace, ids]))
    if done:
        record(ctx, Archived(tuple(done), now))
    return done, sorted(set(ids) - set(done))


@pack.verb("archive", act=Act.COMMISSIVE)
def archive(params: ArchiveParams, ctx: Context) -> ArchiveResult:
    """Archive notes: they leave recall and the walk but stay readable by id and in history."""
    ids = _check_ids(ctx, params.ids, "ids")
    done, already = archive_notes(ctx, ids)
    return ArchiveResult(archived=done, already=already)


@pack.verb("prune", act=Act.COMMISSIVE)
def prune(params: PruneParams, ctx: Context) -> PruneResult:
    """Archive notes whose decayed salience is below ``min_salience`` and/or that occurred before ``before``.

    Both criteria, when given, must hold. ``dry_run`` (the default) only lists the notes.
    Effective salience = salience × exp(−decay_factor × age in days), the recall formula's (ADR 0008).
    """
    if params.min_salience is None and params.before is None:
        raise errors.InvalidParams("give min_salience, before, or both",
                                   details={"errors": [{"loc": ["min_salience"], "msg": "no criterion"}]})
    where, args = ["namespace = ?", "archived_at IS NULL"], [ctx.namespace]
    if params.memory_type is not None:
        where.append("memory_type = ?")
        args.append(params.memory_type)
    if params.scope is not None:
        where.append("scope = ?")
        args.append(params.scope)
    if params.before is not None:
        where.append("occurred_at < ?")
        args.append(params.before)
    if params.min_salience is not None:
        where.append("salience * exp(-decay_factor * greatest(0, epoch(?::TIMESTAMP) - epoch(occurred_at)) "
                     "/ 86400.0) < ?")
        args += [ctx.now(), params.min_salience]
    ids = [r[0] for r in ctx.db.query(f"SELECT id FROM memory.notes WHERE {' AND '.join(where)} ORDER BY id", args)]
    if not params.dry_run and ids:
        ids, _ = archive_notes(ctx, ids)
    return PruneResult(dry_run=params.dry_run, note_ids=ids)


@pack.verb("consolidate", act=Act.COMMISSIVE)
def consolidate(params: ConsolidateParams, ctx: Context) -> ConsolidateResult:
    """Write a semantic note (content from the caller) with triggered_by edges to each source note.

    ``archive_sources`` archives the sources in the same transaction.
    """
    ids = _check_ids(ctx, params.source_ids, "source_ids")
    scope = params.scope
    if scope is None:
        scopes = {r[0] for r in ctx.db.query("SELECT DISTINCT scope FROM memory.notes WHERE id IN "
                                             "(SELECT unnest(?::BIGINT[]))", [ids])}
        scope = scopes.pop() if len(scopes) == 1 else None
    try:
        note_in = NoteIn(content=params.content, memory_type="semantic", salience=params.salience,
                         tags=params.tags, scope=scope)
    except ValidationError as exc:
        raise errors.from_validation_error(exc, verb=ctx.verb) from None
    (new_id,) = store_notes(ctx, [note_in], single=True).ids
    edge_ids, _, _, _ = create_edges(ctx, [LinkIn(source_id=new_id, target_id=i, relation="triggered_by")
                                           for i in ids], ["source_ids"])
    archived = archive_notes(ctx, ids)[0] if params.archive_sources else []
    return ConsolidateResult(note=fetch_notes(ctx, [new_id])[new_id], edge_ids=edge_ids, archived=archived)


@pack.verb("consolidation_candidates", act=Act.ASSERTIVE)
def consolidation_candidates(params: CandidatesGroupParams, ctx: Context) -> CandidatesGroupResult:
    """Propose groups of near-duplicate or closely related notes for the host to summarise (memory.consolidate).

    Two notes join when their cosine is at least ``min_similarity``; groups are the connected components.
    Only active notes are looked at (most recent first, up to a cap), and notes that already triggered a
    consolidation are left out.
    """
    s: MemorySettings = ctx.settings
    g = s.graph
    cut = g.consolidation_min_similarity if params.min_similarity is None else params.min_similarity
    index = ctx.state.index.of(ctx.namespace)
    mask = index.mask(ctx.namespace, RecallFilters(memory_type=params.memory_type, scope=params.scope))
    ids = index.ids_of(mask)
    graph: MemoryGraph = ctx.state.graph
    done = {graph.edges[e][2] for e in graph.edges
            if graph.edges[e][0] == ctx.namespace and graph.edges[e][3] == "triggered_by"}
    ids = np.array([i for i in ids.tolist() if i not in done], dtype=np.int64)
    if ids.size > g.consolidation_max_notes:
        recent = np.lexsort((-ids, -index.column("created")[ids]))[: g.consolidation_max_notes]
        ids = np.sort(ids[recent])
    vectors = index.vectors.get(s.embedder)
    rows = [] if vectors is None else [(i, vectors.get(i)) for i in ids.tolist()]
    rows = [(i, v) for i, v in rows if v is not None and np.any(v)]
    if len(rows) < 2:
        return CandidatesGroupResult(groups=[], considered=len(rows))
    ids_arr = np.array([i for i, _ in rows], dtype=np.int64)
    m = np.stack([v for _, v in rows]).astype(np.float32)
    parent = list(range(len(rows)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(rows), 1024):  # blocks keep the similarity matrix small
        ctx.check_deadline("consolidation_candidates: similarities")
        block = m[start:start + 1024] @ m.T
        ii, jj = np.nonzero(block >= cut)
        upper = (ii + start) < jj
        ii, jj = ii[upper], jj[upper]
        if len(pairs) + ii.size > g.consolidation_max_pairs:  # a low min_similarity joins everything: refuse
            raise errors.LimitExceeded(
                f"min_similarity {cut} joins more than {g.consolidation_max_pairs} pairs of notes; raise it or "
                "narrow the call (scope, memory_type)", details={"errors": [{
                    "loc": ["min_similarity"], "msg": f"more than {g.consolidation_max_pairs} pairs"}]})
        for a, b, sim in zip((ii + start).tolist(), jj.tolist(), block[ii, jj].tolist()):
            pairs.append((a, b, sim))
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    comps: dict[int, list[int]] = {}
    for a in range(len(rows)):
        comps.setdefault(find(a), []).append(a)
    sims: dict[int, list[float]] = {}
    for a, _, sim in pairs:
        sims.setdefault(find(a), []).append(sim)
    groups = sorted(((sorted(int(ids_arr[a]) for a in members), float(np.mean(sims[root])))
                     for root, members in comps.items() if len(members) > 1),
                    key=lambda t: (-len(t[0]), -t[1], t[0][0]))[: params.limit]
    notes = fetch_notes(ctx, [i for grp, _ in groups for i in grp])
    return CandidatesGroupResult(
        groups=[CandidateGroup(note_ids=grp, mean_similarity=sim, notes=[notes[i] for i in grp])
                for grp, sim in groups],
        considered=len(rows))

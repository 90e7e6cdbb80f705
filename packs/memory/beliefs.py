"""Beliefs: keyed semantic notes, versioned in an append-only history (ADR 0012).

``memory.upsert_belief(fact_key, content)`` writes version 1 as a semantic note. Writing the key again with
other content writes a new note, links it to the previous version with ``supersedes`` (so recall leaves the old
one out, and ``as_of`` before the change still finds it) and appends a row to ``memory.belief_versions``. That
table is only ever inserted into. Writing the current content again changes nothing.
"""
from __future__ import annotations

from pydantic import ValidationError

from palimpsest_memory.packs.memory.models.notes import NoteIn
from palimpsest_memory.packs.memory.models.graph import (BeliefHistoryParams, BeliefHistoryResult, BeliefParams,
                                                         BeliefResult, BeliefVersion)
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.note_store import fetch_notes, store_notes
from palimpsest_memory.runtime import Act, Context, errors


@pack.verb("upsert_belief", act=Act.COMMISSIVE)
def upsert_belief(params: BeliefParams, ctx: Context) -> BeliefResult:
    """Write a keyed belief; a changed value becomes a new version that supersedes the old (history kept)."""
    rows = ctx.db.query("SELECT version, note_id, content, supersedes, edge_id FROM memory.belief_versions "
                        "WHERE namespace = ? AND fact_key = ? ORDER BY version DESC LIMIT 1",
                        [ctx.namespace, params.fact_key])
    if rows and rows[0][2] == params.content:
        version, note_id, _, prev, edge_id = rows[0]
        return BeliefResult(fact_key=params.fact_key, version=version, note=fetch_notes(ctx, [note_id])[note_id],
                            changed=False, supersedes=prev, edge_id=edge_id)
    try:
        note_in = NoteIn(content=params.content, memory_type="semantic", salience=params.salience, tags=params.tags,
                         scope=params.scope, kind=params.kind, occurred_at=params.occurred_at,
                         source_id=params.source_id)
    except ValidationError as exc:
        raise errors.from_validation_error(exc, verb=ctx.verb) from None
    (new_id,) = store_notes(ctx, [note_in], single=True).ids
    version, prev, edge_id = 1, None, None
    if rows:
        version, prev = rows[0][0] + 1, rows[0][1]
        edge_id = ctx.call("memory.link", {"source_id": new_id, "target_id": prev, "relation": "supersedes"}).edge.id
    ctx.db.execute("INSERT INTO memory.belief_versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   [ctx.namespace, params.fact_key, version, new_id, params.content, ctx.now(), prev, edge_id])
    return BeliefResult(fact_key=params.fact_key, version=version, note=fetch_notes(ctx, [new_id])[new_id],
                        changed=True, supersedes=prev, edge_id=edge_id)


@pack.verb("belief_history", act=Act.ASSERTIVE)
def belief_history(params: BeliefHistoryParams, ctx: Context) -> BeliefHistoryResult:
    """Every version of a belief, oldest first, with when each was recorded and superseded."""
    rows = ctx.db.query(
        "SELECT b.version, b.note_id, b.content, b.recorded_at, b.supersedes, b.edge_id, n.archived_at "
        "FROM memory.belief_versions b LEFT JOIN memory.notes n ON n.id = b.note_id "
        "WHERE b.namespace = ? AND b.fact_key = ? ORDER BY b.version", [ctx.namespace, params.fact_key])
    if not rows:
        raise errors.NotFound(f"no belief {params.fact_key!r} in namespace {ctx.namespace!r}",
                              details={"errors": [{"loc": ["fact_key"], "msg": "unknown belief"}]})
    versions = []
    for i, (version, note_id, content, recorded_at, prev, edge_id, archived_at) in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        versions.append(BeliefVersion(version=version, note_id=note_id, content=content, recorded_at=recorded_at,
                                      superseded_at=nxt[3] if nxt else None, superseded_by=nxt[1] if nxt else None,
                                      supersedes=prev, edge_id=edge_id, archived_at=archived_at))
    return BeliefHistoryResult(fact_key=params.fact_key, current=rows[-1][0], versions=versions)

"""memory.forget and memory.tombstones: erase notes for real, keep only that they were there (ADR 0018).

Archive and supersession keep history; forgetting is for "this must go" (a user's request, an erasure duty).
For each forgotten note: its row (text, tags, metadata), its vectors, its audit trail, its seen-again record and
merged keys (ADR 0039), its centrality and the text of a belief version it was are deleted; through ``kg.forget``
(the kg's own verb) every edge from or to it and the facts it alone grounded (a fact with another source only
loses the link); the search index drops its BM25 postings and vectors and re-expands its thread neighbours, and
the stored index snapshot is deleted (it is rewritten without the notes when the runtime closes);
``memory.notes_forgotten`` tells the brain to erase the note from its serve ledger. What stays is a tombstone per
note (id, when, reason, actor). After the call commits the runtime rewrites the store file so the text is not in
its bytes either. A note an erased one superseded
stays superseded (forgetting a correction does not bring the old text back).
"""
from __future__ import annotations

from datetime import datetime
from typing import Optional

from pydantic import BaseModel, Field

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.engine import snapshot
from palimpsest_memory.packs.memory.browse import BrowseFilters, where_sql
from palimpsest_memory.packs.memory.mirrors.changes import CentralitySet, NotesErased, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.models.graph import NoteId
from palimpsest_memory.runtime import Act, Context, errors
from palimpsest_memory.runtime.events import NotesForgotten
from palimpsest_memory.runtime.params import NamespacedParams

FILTERS = ("memory_type", "kind", "scope", "thread", "tags", "min_salience", "occurred_after", "occurred_before",
           "created_after", "created_before")
MAX_IDS = 100_000


class ForgetParams(BrowseFilters):
    ids: list[NoteId] = Field(default_factory=list, max_length=MAX_IDS, description="The notes to erase.")
    everything: bool = Field(False, description="Erase the whole namespace: every note, the kg's graph and the "
                                                "brain's data of the namespace.")
    reason: str = Field(min_length=1, max_length=500, description="Why (kept in the tombstones).")
    dry_run: bool = Field(False, description="Report what would be erased; write nothing.")
    include_archived: bool = Field(True, description="A filter also erases archived notes.")
    include_superseded: bool = Field(True, description="A filter also erases superseded versions.")


class ForgetResult(BaseModel):
    dry_run: bool
    note_ids: list[int] = Field(description="The notes erased (or that would be).")
    edges: int = Field(description="Kg edges from or to them erased.")
    facts: list[int] = Field(description="Kg facts erased because these notes were their only source.")
    sources_unlinked: int = Field(description="Source links removed from facts that keep another source.")


def _selected(params: ForgetParams, ctx: Context) -> list[int]:
    filtered = [f for f in FILTERS if f in params.model_fields_set and getattr(params, f) not in (None, [])]
    given = sum((bool(params.ids), bool(filtered), params.everything))
    if given != 1:
        raise errors.InvalidParams("give exactly one of ids, filters (scope, kind, tags, times, …) or everything",
                                   details={"errors": [{"loc": ["ids"], "msg": "choose what to forget"}]})
    if params.ids:
        wanted = sorted(set(params.ids))
        found = {r[0] for r in ctx.db.query("SELECT id FROM memory.notes WHERE namespace = ? AND id IN "
                                            "(SELECT unnest(?::BIGINT[]))", [ctx.namespace, wanted])}
        missing = [i for i in wanted if i not in found]
        if missing:
            gone = {r[0] for r in ctx.db.query("SELECT note_id FROM memory.tombstones WHERE namespace = ? AND "
                                               "note_id IN (SELECT unnest(?::BIGINT[]))", [ctx.namespace, missing])}
            raise errors.NotFound(f"no note {missing[0]} in namespace {ctx.namespace!r}"
                                  + (" (already forgotten)" if missing[0] in gone else ""),
                                  details={"missing": missing, "already_forgotten": sorted(gone),
                                           "errors": [{"loc": ["ids"], "msg": "unknown note"}]})
        return wanted
    if params.everything:
        return [r[0] for r in ctx.db.query("SELECT id FROM memory.notes WHERE namespace = ? ORDER BY id",
                                           [ctx.namespace])]
    where, args = where_sql(params, ctx)
    return [r[0] for r in ctx.db.query(f"SELECT id FROM memory.notes WHERE {' AND '.join(where)} ORDER BY id", args)]


@pack.verb("forget", act=Act.COMMISSIVE, erases=True)
def forget(params: ForgetParams, ctx: Context) -> ForgetResult:
    """Erase notes for real (by ids, by filters, or the whole namespace): text, vectors, postings, tags, audit
    trail, edges, facts they alone grounded, serve-ledger entries; a tombstone (id, when, why, who) stays.
    dry_run reports what would go."""
    ids = _selected(params, ctx)
    kg_params = {"reason": params.reason, "dry_run": params.dry_run}
    if params.everything:
        kg = ctx.call("kg.forget", {**kg_params, "everything": True})
    elif ids:
        kg = ctx.call("kg.forget", {**kg_params, "nodes": [f"m:{i}" for i in ids]})
    else:
        kg = None
    result = ForgetResult(dry_run=params.dry_run, note_ids=ids, edges=kg.edges if kg else 0,
                          facts=kg.facts if kg else [], sources_unlinked=kg.sources_unlinked if kg else 0)
    if params.dry_run or not ids and not params.everything:
        return result
    ns, now = ctx.namespace, ctx.now()
    chosen = "(SELECT unnest(?::BIGINT[]))"
    ctx.db.execute(f"UPDATE memory.belief_versions SET content = '' WHERE namespace = ? AND note_id IN {chosen}",
                   [ns, ids])
    ctx.db.execute(f"DELETE FROM memory.vectors WHERE namespace = ? AND note_id IN {chosen}", [ns, ids])
    ctx.db.execute(f"DELETE FROM memory.note_audit WHERE namespace = ? AND note_id IN {chosen}", [ns, ids])
    duplicates.erase(ctx, ids)  # its seen-again record and the keys merged into it
    had_centrality = ctx.db.query(f"SELECT count(*) FROM memory.centrality WHERE namespace = ? AND note_id IN "
                                  f"{chosen}", [ns, ids])[0][0]
    ctx.db.execute(f"DELETE FROM memory.centrality WHERE namespace = ? AND note_id IN {chosen}", [ns, ids])
    ctx.db.execute(f"DELETE FROM memory.notes WHERE namespace = ? AND id IN {chosen}", [ns, ids])
    snapshot.drop(ctx)  # their postings and vectors (rows and files); rewritten at close
    ctx.db.execute("INSERT INTO memory.tombstones (namespace, note_id, forgotten_at, reason, actor) "
                   "SELECT ?, unnest(?::BIGINT[]), ?, ?, ?",  # keyed (namespace, note_id): each id once
                   [ns, list(dict.fromkeys(ids)), now, params.reason, ctx.actor])
    record(ctx, NotesErased(tuple(ids)))
    if had_centrality:
        scores = {nid: s for nid, s in ctx.db.query("SELECT note_id, score FROM memory.centrality WHERE "
                                                     "namespace = ?", [ns])}
        record(ctx, CentralitySet(scores))
    ctx.publish("notes_forgotten", NotesForgotten(tuple(ids), everything=params.everything))
    ctx.erase_from_file()
    return result


class TombstonesParams(NamespacedParams):
    ids: list[NoteId] = Field(default_factory=list, max_length=MAX_IDS, description="Only these note ids.")
    limit: int = Field(100, ge=1, le=10_000, description="Most tombstones returned, newest first.")


class Tombstone(BaseModel):
    note_id: int
    forgotten_at: datetime
    reason: str
    actor: Optional[str]


class TombstonesResult(BaseModel):
    tombstones: list[Tombstone]


@pack.verb("tombstones", act=Act.ASSERTIVE)
def tombstones(params: TombstonesParams, ctx: Context) -> TombstonesResult:
    """What memory.forget erased in the namespace: one tombstone per note (id, when, why, who), newest first."""
    where, args = "namespace = ?", [ctx.namespace]
    if params.ids:
        where += " AND note_id IN (SELECT unnest(?::BIGINT[]))"
        args.append(list(params.ids))
    rows = ctx.db.query(f"SELECT note_id, forgotten_at, reason, actor FROM memory.tombstones WHERE {where} "
                        f"ORDER BY forgotten_at DESC, note_id DESC LIMIT {params.limit}", args)
    return TombstonesResult(tombstones=[Tombstone(note_id=i, forgotten_at=t, reason=r, actor=a) for i, t, r, a in rows])

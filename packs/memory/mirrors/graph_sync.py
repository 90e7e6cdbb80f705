"""The memory graph follows the kg's note edges through the declared ``kg.edges_changed`` event (ADR 0012).

The kg publishes the event for every ``kg.link`` / ``kg.link_many`` / ``kg.unlink`` that committed, whoever
called it: ``memory.link`` (through :func:`palimpsest_memory.packs.memory.graph.create_edges`) and any other caller
alike, so this is the graph's one way in. The subscriber records the note ↔ note edges as a change; the graph mirror
applies it (an edge linked again keeps its id and takes the new weight). Only the graph follows: supersession
of a note (its ``superseded_by``, which recall suppresses) is set by ``memory.link``, never by a bare kg edge.
"""
from __future__ import annotations

from palimpsest_memory.packs.memory.mirrors.changes import EdgesLinked, EdgesRemoved, NoteEdge, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.mirrors.graph import note_of
from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.events import NOTE_RELATIONS, EdgesChanged


@pack.subscribe("kg.edges_changed")
def follow_kg_edges(event: EdgesChanged, ctx: Context) -> None:
    """Record the note edges of a committed kg link or unlink (mentions of entities and other nodes are not ours)."""
    linked = []
    for e in event.linked:
        src, dst = note_of(e.src), note_of(e.dst)
        if src is not None and dst is not None and e.relation in NOTE_RELATIONS:
            linked.append(NoteEdge(e.edge_id, src, dst, e.relation, e.weight))
    if linked:
        record(ctx, EdgesLinked(tuple(linked)))
    if event.removed:
        record(ctx, EdgesRemoved(tuple(event.removed)))

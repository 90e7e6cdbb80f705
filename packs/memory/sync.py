"""Note edges written through the kg directly (``kg.link`` / ``kg.link_many`` / ``kg.unlink``) reach the live
memory graph, so a walk answers the same before and after a restart (which rebuilds the graph from kg.edges).

The memory pack observes those calls with the runtime's dispatch wrapper (as the brain observes recall) and
defers ``memory.sync_edges`` after the kg's commit: a rolled-back link never reaches the graph. Its own
``memory.link`` calls are skipped (it updates the graph itself). Only the graph follows: supersession of a note
(its ``superseded_by``, which recall suppresses) is set by ``memory.link``, never by a bare kg edge (ADR 0012).
"""
from __future__ import annotations

from typing import Any, Generator

from pydantic import BaseModel, Field

from packs.memory.graph import NODE, MemoryGraph
from packs.memory.models import Strict
from packs.memory.models_graph import MEMORY_RELATIONS
from packs.memory.pack import pack
from runtime import Act, CallInfo, Context, Visibility, hookimpl

OBSERVED = ("kg.link", "kg.link_many", "kg.unlink")


class SyncedEdge(Strict):
    edge_id: int
    source_id: int
    target_id: int
    relation: str
    weight: float


class SyncEdgesParams(Strict):
    added: list[SyncedEdge] = Field(default_factory=list)
    removed: list[int] = Field(default_factory=list)


class SyncEdgesResult(BaseModel):
    added: int
    removed: int


def _note_edges(call: CallInfo, result: Any) -> list[dict[str, Any]]:
    items = [call.params] if call.verb == "kg.link" else list(call.params.links)
    ids = [result.edge.id] if call.verb == "kg.link" else list(result.edge_ids)
    out = []
    for eid, it in zip(ids, items):
        src, dst = NODE.match(it.src), NODE.match(it.dst)
        if src and dst and it.relation in MEMORY_RELATIONS:
            out.append({"edge_id": eid, "source_id": int(src.group(1)), "target_id": int(dst.group(1)),
                        "relation": it.relation, "weight": it.weight})
    return out


@hookimpl(wrapper=True)
def palimpsest_dispatch(call: CallInfo) -> Generator[None, Any, Any]:
    """After a kg link/unlink from anyone but the memory pack, mirror its note edges into the graph."""
    if call.verb not in OBSERVED or call.caller_pack == "memory":
        return (yield)
    result = yield
    if call.verb == "kg.unlink":
        call.defer("memory.sync_edges", {"removed": list(result.removed)})
    else:
        added = _note_edges(call, result)
        if added:
            call.defer("memory.sync_edges", {"added": added})
    return result


@pack.verb("sync_edges", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def sync_edges(params: SyncEdgesParams, ctx: Context) -> SyncEdgesResult:
    """Apply note edges the kg committed (deferred by the dispatch wrapper above) to the live memory graph."""
    graph: MemoryGraph = ctx.state.graph
    ns = ctx.namespace

    def apply() -> None:
        for e in params.added:
            graph.add(e.edge_id, ns, e.source_id, e.target_id, e.relation, e.weight)
        for eid in params.removed:
            if eid in graph.edges and graph.edges[eid][0] == ns:
                graph.remove(eid)

    ctx.on_commit(apply)
    return SyncEdgesResult(added=len(params.added), removed=len(params.removed))

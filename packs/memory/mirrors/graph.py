"""The memory graph as a mirror (runtime/mirror.py): note ↔ note edges per namespace, and each note's centrality.

The edges live in the kg pack (``kg.edges`` rows between ``m:<note id>`` nodes). A namespace is loaded at its first
call (ADR 0016): the graph pages its edges through the kg's public ``kg.list_edges`` (it never reads the kg's table);
afterwards it follows ``kg.edges_changed`` (graph_sync.py records each change, whoever linked: memory.link or a bare
kg.link) and the ``memory.centrality`` verb. A walk never goes back to SQL (ADR 0012).
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import Any, Sequence

from palimpsest_memory.packs.memory.mirrors.changes import CentralitySet, EdgesLinked, EdgesRemoved
from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.events import NOTE_RELATIONS
from palimpsest_memory.runtime.mirror import Change, Mirror

NODE = re.compile(r"^m:([0-9]{1,18})$")  # a note's node id in the kg
LOAD_PAGE = 10_000  # edges per kg.list_edges call at load (the kg caps it at its max_query_limit)


def note_of(node: str) -> int | None:
    m = NODE.match(node)
    return int(m.group(1)) if m else None


class MemoryGraph(Mirror):
    """Memory edges (note ↔ note) per namespace, mirroring the kg's active ``m:``→``m:`` edges of a note
    relation, plus the stored centrality of each note."""

    per_namespace = True

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.edges: dict[int, tuple[str, int, int, str, float]] = {}  # id → (namespace, src, dst, relation, w)
        self.adj: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
        self.centrality: dict[str, dict[int, float]] = defaultdict(dict)
        self.held: set[str] = set()  # namespaces loaded (the runtime feeds only their changes)

    # -- the mirror ---------------------------------------------------------------------------------------------
    def load(self, ctx: Context, namespace: str | None = None) -> None:
        if namespace is None:
            return  # nothing is held before a namespace's first call
        self.evict(namespace)  # forget the namespace, then page the kg's note edges
        after: int | None = 0
        while after is not None:
            page = ctx.call("kg.list_edges", {"node_prefix": "m:", "relations": list(NOTE_RELATIONS),
                                              "after_id": after, "limit": LOAD_PAGE}, namespace=namespace)
            for e in page.edges:
                src, dst = note_of(e.src), note_of(e.dst)
                if src is not None and dst is not None:
                    self.add(e.id, namespace, src, dst, e.relation, e.weight)
            after = page.next_after_id
        self.held.add(namespace)
        for nid, score in ctx.db.query("SELECT note_id, score FROM memory.centrality WHERE namespace = ?",
                                       [namespace]):
            self.centrality[namespace][nid] = score

    def evict(self, namespace: str) -> None:
        self.held.discard(namespace)
        for eid in [eid for eid, e in self.edges.items() if e[0] == namespace]:
            del self.edges[eid]
        self.adj.pop(namespace, None)
        self.centrality.pop(namespace, None)

    def size_bytes(self, namespace: str) -> int:
        edges = sum(len(ids) for ids in self.adj.get(namespace, {}).values()) // 2
        return 300 * edges + 100 * len(self.centrality.get(namespace, ()))

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            c, ns = change.data, change.namespace
            if isinstance(c, EdgesLinked):
                for e in c.edges:
                    self.add(e.edge_id, ns, e.source_id, e.target_id, e.relation, e.weight)
            elif isinstance(c, EdgesRemoved):
                for eid in c.edge_ids:
                    if eid in self.edges and self.edges[eid][0] == ns:
                        self.remove(eid)
            elif isinstance(c, CentralitySet):
                self.centrality[ns] = dict(c.scores)

    def digest(self) -> Any:
        edges = tuple(sorted((eid, *e) for eid, e in self.edges.items()))
        adj = tuple(sorted((ns, n, tuple(sorted(ids))) for ns, by in self.adj.items() for n, ids in by.items() if ids))
        cent = tuple(sorted((ns, n, v) for ns, by in self.centrality.items() for n, v in by.items() if ns in self.held))
        return edges, adj, cent

    # -- the graph ------------------------------------------------------------------------------------------------
    def add(self, eid: int, ns: str, src: int, dst: int, relation: str, weight: float) -> None:
        if eid in self.edges:  # an update of an existing edge (same src, dst, relation): only the weight moves
            self.edges[eid] = (ns, src, dst, relation, weight)
            return
        self.edges[eid] = (ns, src, dst, relation, weight)
        adj = self.adj[ns]
        adj[src].append(eid)
        adj[dst].append(eid)

    def remove(self, eid: int) -> None:
        edge = self.edges.pop(eid, None)
        if edge is None:
            return
        ns, src, dst, _, _ = edge
        for node in (src, dst):
            lst = self.adj[ns].get(node)
            if lst is not None and eid in lst:
                lst.remove(eid)

    def incident(self, ns: str, note: int) -> list[int]:
        adj = self.adj.get(ns)
        return adj.get(note, []) if adj is not None else []

    def find(self, ns: str, src: int, dst: int, relation: str) -> int | None:
        for eid in self.incident(ns, src):
            e = self.edges[eid]
            if e[1] == src and e[2] == dst and e[3] == relation:
                return eid
        return None

"""PageRank with scipy.sparse over the namespace's positive edges (and, optionally, entity→entity facts).

Definition: directed weighted graph G over every node that appears in a selected edge; transition
P[i, j] = w(i→j) / Σ_k w(i→k); r₀ = 1/n; r ← d·Pᵀr + d·(Σ_dangling r)/n + (1−d)/n, ``iterations`` times.
Duplicate (src, dst) pairs add their weights; zero-weight edges are dropped.
"""
from __future__ import annotations

from datetime import datetime

import numpy as np

from palimpsest_memory.runtime import Context


def _edge_sql(relations: list[str] | None, node_types: list[str] | None, include_facts: bool,
              args: list) -> str:
    rel = "relation <> 'contradicts'"
    if relations:
        rel += " AND relation IN (SELECT unnest(?::VARCHAR[]))"
    parts = [f"SELECT src, dst, weight AS w FROM kg.edges WHERE namespace = ? AND removed_at IS NULL AND {rel} "
             "AND (valid_from IS NULL OR valid_from <= ?) AND (valid_to IS NULL OR valid_to > ?)"]
    if include_facts:
        parts.append("SELECT 'e:' || subject_id, 'e:' || object_id, confidence FROM kg.facts WHERE namespace = ? "
                     "AND retracted_at IS NULL AND object_id IS NOT NULL AND (valid_from IS NULL OR valid_from <= ?) "
                     "AND (valid_to IS NULL OR valid_to > ?)")
    sql = " UNION ALL ".join(parts)
    if node_types:
        # a node id's type is its first character ('e:', 'm:', 'f:'; see models.NODE_RE)
        sql = (f"SELECT * FROM ({sql}) WHERE list_contains(?::VARCHAR[], left(src, 1)) "
               "AND list_contains(?::VARCHAR[], left(dst, 1))")
    return sql


def pagerank_scores(ctx: Context, relations: list[str] | None, node_types: list[str] | None, include_facts: bool,
                    now: datetime, iterations: int, damping: float) -> tuple[list[str], int, np.ndarray]:
    """(node ids, edge count, raw PageRank summing to 1) for the selected graph."""
    args: list = [ctx.namespace]
    if relations:
        args.append(list(relations))
    args += [now, now]
    if include_facts:
        args += [ctx.namespace, now, now]
    if node_types:
        args += [list(node_types), list(node_types)]
    # zero-weight edges are dropped before nodes are numbered, so the numbering and the matrix agree
    edges = f"SELECT * FROM ({_edge_sql(relations, node_types, include_facts, args)}) WHERE w > 0"
    # MATERIALIZED: otherwise DuckDB inlines the CTE into each of its uses and filters the edges 3-4 times
    ctx.db.execute(
        f"WITH e AS MATERIALIZED ({edges}), n AS MATERIALIZED (SELECT node, (row_number() OVER (ORDER BY node)) - 1 "
        "AS ix FROM (SELECT src AS node FROM e UNION SELECT dst FROM e)) "
        "SELECT s.ix AS s, d.ix AS d, e.w AS w FROM e JOIN n s ON s.node = e.src JOIN n d ON d.node = e.dst",
        args)
    cols = ctx.db.fetchnumpy()
    src, dst, w = (np.asarray(cols[k]) for k in ("s", "d", "w"))
    if len(src) == 0:
        return [], 0, np.zeros(0)
    ctx.db.execute(f"WITH e AS MATERIALIZED ({edges}) SELECT node FROM (SELECT src AS node FROM e UNION "
                   "SELECT dst FROM e) ORDER BY node", args)
    nodes = [r[0] for r in ctx.db.fetchall()]
    return nodes, len(src), power_iteration(ctx, src, dst, w, len(nodes), iterations, damping)


def power_iteration(ctx: Context, src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int, iterations: int,
                    damping: float) -> np.ndarray:
    """PageRank (summing to 1) of the graph on nodes 0..n-1 with weighted edges src[i] -> dst[i] (the module's
    definition); shared by kg.centrality and the graph view's ranking of a neighbourhood (neighbourhood.py)."""
    import scipy.sparse as sp  # here, not at import: loading the pack stays cheap (`pal mcp` starts faster)

    adj = sp.csr_matrix((w.astype(np.float64), (src.astype(np.int64), dst.astype(np.int64))), shape=(n, n))
    out = np.asarray(adj.sum(axis=1)).ravel()
    dangling = out == 0
    inv = np.zeros(n)
    inv[~dangling] = 1.0 / out[~dangling]
    pt = (sp.diags(inv) @ adj).T.tocsr()
    r = np.full(n, 1.0 / n)
    for i in range(iterations):
        if i % 10 == 0:
            ctx.check_deadline("PageRank")
        r = damping * (pt @ r) + (damping * r[dangling].sum() + (1.0 - damping)) / n
    return r

"""The full-text index survives a restart as a snapshot in DuckDB (``memory.index_snapshot``).

Rebuilding BM25 on open means tokenising every note again (~15 s at 100k notes, and every ``pal`` command opens
the store). The snapshot is derived data, trusted only when it covers exactly the stored notes (their count and
highest id; notes are added, and deleted only by memory.forget, which deletes the snapshot too) and was built with the same tokenizer and BM25
settings; otherwise the index is rebuilt from the notes, as before. The index mirror restores it in its
``load`` and writes it in its ``close`` (through ``memory.save_index``) if the index changed, and only for
stores of at least ``index_snapshot_min_notes`` notes. A crash before a close only means the next open
rebuilds. Vectors and metadata columns are still read from their tables (that is fast); thread links are
rebuilt from each note's thread without tokenising.
"""
from __future__ import annotations

import io
import json

import numpy as np

from packs.memory.bm25 import BM25Index
from packs.memory.index import MemoryIndex
from packs.memory.settings import MemorySettings
from packs.memory.text import TOKENIZER_VERSION
from runtime import Context

FORMAT = 1


def signature(s: MemorySettings) -> str:
    """What the snapshot's BM25 bags depend on besides the notes themselves."""
    return json.dumps({"format": FORMAT, "tokenizer": TOKENIZER_VERSION, "k1": s.bm25_k1, "b": s.bm25_b,
                       "expansion": s.context.expansion_weight}, sort_keys=True)


def restore(ctx: Context, index: MemoryIndex, notes: int, max_id: int) -> bool:
    """Load the snapshot into ``index.bm25`` when it covers exactly these notes; False if there is none to use."""
    s: MemorySettings = ctx.settings
    row = ctx.db.query("SELECT signature, notes, max_id, data FROM memory.index_snapshot WHERE id = 1")
    if not row or notes == 0:
        return False
    sig, n, mx, data = row[0]
    if sig != signature(s) or (n, mx) != (notes, max_id):
        ctx.log.info("full-text index snapshot is stale (%s notes up to id %s, store has %s up to %s): rebuilding",
                     n, mx, notes, max_id)
        return False
    fresh = BM25Index(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms)
    try:
        with np.load(io.BytesIO(data)) as z:
            fresh.restore({k: z[k] for k in z.files})
    except (ValueError, KeyError, OSError) as exc:  # unreadable: the notes are the truth, rebuild from them
        ctx.log.warning("full-text index snapshot unreadable (%s): rebuilding", exc)
        return False
    if len(fresh) != notes:
        return False
    index.bm25 = fresh
    return True


def write(ctx: Context, index: MemoryIndex) -> int:
    """Replace the stored snapshot with the index's BM25 (in the caller's transaction); returns its size."""
    buf = io.BytesIO()
    np.savez(buf, **index.bm25.snapshot())
    data = buf.getvalue()
    ctx.db.execute("INSERT OR REPLACE INTO memory.index_snapshot VALUES (1, ?, ?, ?, ?, ?)",
                   [signature(ctx.settings), len(index.rows), max(index.rows), ctx.now(), data])
    return len(data)

"""The search index as a mirror of the store (runtime/mirror.py): loaded from the notes and vectors tables (BM25
and the HNSW graphs from their snapshots when those are current), fed with committed changes, snapshotted at close.

Readers use it as a plain :class:`~palimpsest_memory.packs.memory.index.MemoryIndex` (``ctx.state.index``); only the runtime
calls ``load``, ``apply`` and ``close``.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from palimpsest_memory.packs.memory import snapshot
from palimpsest_memory.packs.memory.changes import (Archived, MetadataEdited, NotesAdded, NotesErased, SnapshotSaved, SupersededSet,
                                  VectorsReplaced)
from palimpsest_memory.packs.memory.index import FULL_COLUMNS, MemoryIndex, NoteRow
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.packs.memory.vectors import Ann
from palimpsest_memory.runtime import Context
from palimpsest_memory.runtime.mirror import Change, Mirror


def index_options(s: MemorySettings) -> dict[str, Any]:
    """The index's construction arguments from the pack's settings."""
    return dict(k1=s.bm25_k1, b=s.bm25_b, max_query_terms=s.max_query_terms,
                expansion_weight=s.context.expansion_weight, prefix_chars=s.near_duplicate_prefix,
                ann=Ann(**s.vector_index.model_dump()),
                episode_gap_seconds=s.context.episode_gap_minutes * 60.0)


CHUNK = 8192  # rows per read at load: the whole table as Python tuples at once cost ~1 KB a note of heap that
# malloc then kept (issue 16, item 14); reading in id ranges keeps that transient small


def read_rows(ctx: Context) -> list[NoteRow]:
    """Every note as a row, read in id ranges; the strings many notes share (namespace, type, kind, scope,
    thread) are stored once — each fetched value is otherwise its own string object (~55 bytes a field)."""
    shared: dict[Any, Any] = {}

    def one(v: Any) -> Any:
        return v if v is None else shared.setdefault(v, v)

    rows: list[NoteRow] = []
    last = -1
    while True:
        got = ctx.db.query(f"SELECT {FULL_COLUMNS} FROM memory.notes WHERE id > ? ORDER BY id LIMIT {CHUNK}", [last])
        for r in got:
            (nid, ns, content, mtype, kind, scope, thread, tags, *rest) = r
            rows.append(NoteRow(nid, one(ns), content, one(mtype), one(kind), one(scope), one(thread),
                                tags or (), *rest[:6], one(rest[6]), *rest[7:]))
        if len(got) < CHUNK:
            return rows
        last = got[-1][0]


def read_vectors(ctx: Context, model: str) -> tuple[np.ndarray, np.ndarray]:
    """Note ids and their vectors for ``model``, read in id ranges into one float32 matrix."""
    total = ctx.db.query("SELECT count(*), max(dim) FROM memory.vectors WHERE model = ?", [model])[0]
    n, dims = int(total[0]), int(total[1] or 0)
    ids, matrix = np.zeros(n, dtype=np.int64), np.zeros((n, dims), dtype=np.float32)
    done, last = 0, -1
    while done < n:
        got = ctx.db.query("SELECT note_id, vec FROM memory.vectors WHERE model = ? AND note_id > ? "
                           f"ORDER BY note_id LIMIT {CHUNK}", [model, last])
        if not got:
            break
        k = min(len(got), n - done)
        ids[done:done + k] = [nid for nid, _ in got[:k]]
        matrix[done:done + k] = np.frombuffer(b"".join(v for _, v in got[:k]), dtype=np.float32).reshape(k, -1)
        done, last = done + k, got[-1][0]
    return ids[:done], matrix[:done]


class IndexMirror(MemoryIndex, Mirror):
    """A :class:`MemoryIndex` that the runtime keeps equal to the committed notes."""

    def __init__(self) -> None:
        # settings arrive with the first load; until then an empty index with BM25's usual constants
        super().__init__(k1=1.2, b=0.75, max_query_terms=64, expansion_weight=0.0)

    def load(self, ctx: Context) -> None:
        """Rebuild from the tables (vectors are read back, never re-embedded)."""
        s: MemorySettings = ctx.settings
        MemoryIndex.__init__(self, **index_options(s))  # empty, with this runtime's settings
        rows = read_rows(ctx)
        covered = snapshot.restore(ctx, self, np.fromiter((r.id for r in rows), dtype=np.int64, count=len(rows)))
        self.add(rows[:covered], {}, text_index=False)  # a restored BM25 needs no tokenising
        self.add(rows[covered:], {})  # notes newer than the snapshot (all of them without one): as an ingest
        self.dirty = covered < len(rows)
        for model in s.stored_models():
            ids, matrix = read_vectors(ctx, model)
            if len(ids) < len(rows):
                ctx.log.warning("%d notes have no %s vector; run memory.reembed", len(rows) - len(ids), model)
            if len(ids):
                self.add_vectors(model, ids, matrix, build=False, adopt=True)  # the matrix read is ours
                vi = self.vectors[model]
                if not snapshot.restore_graph(ctx, vi, model):  # a saved HNSW graph, else build it now
                    vi.build_graph()
                    self.dirty = self.dirty or vi.has_graph

    def apply(self, changes: Sequence[Change]) -> None:
        for change in changes:
            c = change.data
            if isinstance(c, NotesAdded):
                self.add(c.rows, c.vectors)
            elif isinstance(c, SupersededSet):
                for note_id, by in zip(c.note_ids, c.by):
                    self.set_superseded(note_id, c.when, by)
            elif isinstance(c, Archived):
                for note_id in c.note_ids:
                    self.set_archived(note_id, c.when)
            elif isinstance(c, MetadataEdited):
                self.set_metadata(c.note_id, c.fields)
            elif isinstance(c, VectorsReplaced):
                self.vectors.pop(c.model, None)
                self.add_vectors(c.model, c.ids, c.matrix)
                self.dirty = True  # a new graph (when large): the snapshot at close saves it
            elif isinstance(c, NotesErased):  # memory.forget (ADR 0018)
                self.forget(c.note_ids)
            elif isinstance(c, SnapshotSaved):
                self.dirty = False
                for vi in self.vectors.values():
                    vi.graph_dirty = False

    def close(self, ctx: Context) -> None:
        """Snapshot the full-text index while the store is still open (a no-op when nothing changed)."""
        ctx.call("memory.save_index", {})

    def digest(self) -> Any:
        """Every note's id and the flags recall filters on, the BM25 content, and the vector ids per model."""
        ids = np.array(sorted(self.rows), dtype=np.int64)
        c = self.cols
        notes = tuple(zip(ids.tolist(), c["alive"][ids].tolist(), c["archived"][ids].tolist(),
                          np.nan_to_num(c["superseded"][ids], nan=-1.0).tolist(),
                          [self.rows[i].superseded_by for i in ids.tolist()],
                          c["prev"][ids].tolist(), c["next"][ids].tolist(),
                          [(r.kind, r.scope, tuple(r.tags), r.salience, r.decay_factor, float(c["salience"][i]),
                            float(c["decay"][i]), sorted(self.tags.get(i, ())))
                           for i, r in ((i, self.rows[i]) for i in ids.tolist())]))
        return notes, self.bm25.digest(), tuple(sorted((m, v.digest()) for m, v in self.vectors.items()))

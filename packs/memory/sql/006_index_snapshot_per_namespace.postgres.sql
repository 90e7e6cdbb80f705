-- The search index is held per namespace (ADR 0016: a process loads a namespace's mirrors at its first call and
-- may evict them under runtime.mirror_budget_mb), so its snapshot is too: one full-text row (id 1) and one row per
-- vector graph (id 2, 3, …) for each namespace. Snapshots are derived data: the old store-wide one is dropped and
-- each namespace's index is rebuilt from its notes once, then saved when it is evicted or the runtime closes.
DROP TABLE memory.index_snapshot;
CREATE TABLE memory.index_snapshot (
    namespace  VARCHAR NOT NULL,
    id         INTEGER NOT NULL,      -- 1: the BM25 snapshot; 2 + n: the HNSW graph of the n-th stored model
    signature  VARCHAR NOT NULL,      -- format version + the settings the snapshot depends on
    notes      BIGINT NOT NULL,       -- notes (or vectors) of the namespace it covers
    max_id     BIGINT NOT NULL,       -- their highest id
    saved_at   TIMESTAMP NOT NULL,
    data       BLOB NOT NULL,
    PRIMARY KEY (namespace, id)
);
-- PostgreSQL only: a namespace's load reads its notes (and, joined, their vectors) by id range; without this index
-- every page of a late-loaded namespace would scan the whole notes table. (DuckDB scans a column fast and keeps
-- no ART index here: see 001_notes.sql.)
CREATE INDEX notes_namespace_id ON memory.notes (namespace, id);

-- A snapshot of the full-text index (ADR 0008): rebuilding BM25 from the notes means tokenising every note, ~15 s
-- at 100k notes, on every open (and every `pal` command). The snapshot is derived data: it is used only when it
-- covers exactly the notes in memory.notes (their count and highest id) with the same index settings, else the
-- index is rebuilt from the notes and a new snapshot written when the runtime closes.
CREATE TABLE memory.index_snapshot (
    id         INTEGER PRIMARY KEY,   -- always 1: one snapshot
    signature  VARCHAR NOT NULL,      -- format version + the settings the BM25 bags depend on
    notes      BIGINT NOT NULL,       -- count(*) of memory.notes it covers
    max_id     BIGINT NOT NULL,       -- their highest id
    saved_at   TIMESTAMP NOT NULL,
    data       BLOB NOT NULL          -- numpy .npz of BM25Index.snapshot()
);

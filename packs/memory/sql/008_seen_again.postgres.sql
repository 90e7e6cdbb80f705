-- Remembering a text again (issue 42 item 4, ADR 0039). text_hash: the 64-bit hash of the note's normal form
-- (duplicates.py), NULL on notes stored before this migration until a remember of their namespace hashes them.
-- PostgreSQL looks it up through an index (a column scan on DuckDB: see 008_seen_again.sql).
ALTER TABLE memory.notes ADD COLUMN text_hash BIGINT;
CREATE INDEX notes_text_hash ON memory.notes (namespace, text_hash);
-- A note seen again: a bounded record (count, first and last time, the latest times), not a row per sighting.
CREATE TABLE memory.note_seen (
    namespace   VARCHAR NOT NULL,
    note_id     BIGINT NOT NULL,
    seen_count  BIGINT NOT NULL CHECK (seen_count >= 2),  -- times remembered, the first included
    first_seen  TIMESTAMP NOT NULL,
    last_seen   TIMESTAMP NOT NULL,
    recent      TIMESTAMP[] NOT NULL,                      -- the latest [packs.memory] seen_recent times
    PRIMARY KEY (namespace, note_id)
);
-- An idempotency key given with a text that was merged into an existing note: a retry replays, it does not count.
CREATE TABLE memory.seen_keys (
    namespace VARCHAR NOT NULL,
    key       VARCHAR NOT NULL,
    note_id   BIGINT NOT NULL,
    PRIMARY KEY (namespace, key)
);

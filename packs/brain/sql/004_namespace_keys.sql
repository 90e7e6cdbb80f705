-- Every table is keyed by namespace first (issue 41 item 8, ADR 0016 "Citus layout"): Citus distributes a table by
-- `namespace` only if its primary key and every unique key contain that column. brain.events' seq stays
-- store-wide (its sequence is unchanged), so adding namespace to the key changes no answer. The other tables are
-- keyed by namespace already, and brain.serves keeps no key on DuckDB (003_compact_serves.sql: its index cost
-- more than it served); PostgreSQL, which Citus distributes, keys it by (namespace, recall_id) in its own version
-- of this migration. DuckDB cannot change a primary key in place: brain.events is rebuilt.
CREATE TABLE brain.events_keyed (
    seq        BIGINT NOT NULL,
    namespace  VARCHAR NOT NULL,
    profile    VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL CHECK (kind IN ('init', 'feedback', 'reset')),
    recall_id  VARCHAR,
    note_id    BIGINT,
    signal     VARCHAR,
    source     VARCHAR,
    weight     DOUBLE,
    actor      VARCHAR,
    payload    JSON NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, seq)
);
INSERT INTO brain.events_keyed SELECT * FROM brain.events ORDER BY seq;
DROP TABLE brain.events;
ALTER TABLE brain.events_keyed RENAME TO events;

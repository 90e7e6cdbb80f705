-- Every table is keyed by namespace first (issue 41 item 8, ADR 0016 "Citus layout"): Citus distributes a table by
-- `namespace` only if its primary key and every unique key contain that column. Ids stay store-wide (the
-- sequences are unchanged), so adding namespace to a key changes no answer; memory.vectors gains the namespace of
-- its note (a vector whose note is gone could never be recalled, and is not carried over), memory.note_audit and
-- memory.tombstones get the keys they lacked (a note is forgotten once: one tombstone per note is kept).
-- DuckDB cannot change a primary key in place: each table is rebuilt (new table, copy, drop, rename), in the order
-- nothing depends on (no view or foreign key refers to these tables).
CREATE TABLE memory.notes_keyed (
    id            BIGINT NOT NULL,
    namespace     VARCHAR NOT NULL,
    content       VARCHAR NOT NULL,
    memory_type   VARCHAR NOT NULL CHECK (memory_type IN ('episodic', 'semantic')),
    kind          VARCHAR,
    kind_source   VARCHAR NOT NULL,          -- 'caller' | 'classifier'
    scope         VARCHAR,
    thread        VARCHAR,
    tags          VARCHAR[] NOT NULL,
    salience      DOUBLE NOT NULL CHECK (salience >= 0 AND salience <= 1),
    decay_factor  DOUBLE NOT NULL CHECK (decay_factor >= 0),
    occurred_at   TIMESTAMP NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    source_id     VARCHAR,
    key           VARCHAR,
    properties    JSON NOT NULL,
    superseded_by BIGINT,
    superseded_at TIMESTAMP,
    archived_at   TIMESTAMP,
    PRIMARY KEY (namespace, id)
);
INSERT INTO memory.notes_keyed SELECT * FROM memory.notes ORDER BY id;
DROP TABLE memory.notes;
ALTER TABLE memory.notes_keyed RENAME TO notes;

CREATE TABLE memory.vectors_keyed (
    note_id   BIGINT NOT NULL,
    model     VARCHAR NOT NULL,
    dim       INTEGER NOT NULL,
    vec       BLOB NOT NULL,
    namespace VARCHAR NOT NULL,              -- the note's
    PRIMARY KEY (namespace, note_id, model)
);
INSERT INTO memory.vectors_keyed
    SELECT v.note_id, v.model, v.dim, v.vec, n.namespace FROM memory.vectors v JOIN memory.notes n ON n.id = v.note_id
    ORDER BY v.note_id, v.model;
DROP TABLE memory.vectors;
ALTER TABLE memory.vectors_keyed RENAME TO vectors;

CREATE TABLE memory.centrality_keyed (
    note_id      BIGINT NOT NULL,
    namespace    VARCHAR NOT NULL,
    score        DOUBLE NOT NULL,
    computed_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, note_id)
);
INSERT INTO memory.centrality_keyed SELECT * FROM memory.centrality ORDER BY note_id;
DROP TABLE memory.centrality;
ALTER TABLE memory.centrality_keyed RENAME TO centrality;

CREATE TABLE memory.note_audit_keyed (
    seq        BIGINT NOT NULL,
    namespace  VARCHAR NOT NULL,
    note_id    BIGINT NOT NULL,
    field      VARCHAR NOT NULL,
    old_value  JSON,
    new_value  JSON,
    actor      VARCHAR,
    changed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, seq)
);
INSERT INTO memory.note_audit_keyed SELECT * FROM memory.note_audit ORDER BY seq;
DROP TABLE memory.note_audit;
ALTER TABLE memory.note_audit_keyed RENAME TO note_audit;

CREATE TABLE memory.tombstones_keyed (
    namespace    VARCHAR NOT NULL,
    note_id      BIGINT NOT NULL,
    forgotten_at TIMESTAMP NOT NULL,
    reason       VARCHAR NOT NULL,
    actor        VARCHAR,                   -- who the forgetting call was made for (NULL: nobody in particular)
    PRIMARY KEY (namespace, note_id)
);
INSERT INTO memory.tombstones_keyed
    SELECT DISTINCT ON (namespace, note_id) * FROM memory.tombstones ORDER BY namespace, note_id, forgotten_at;
DROP TABLE memory.tombstones;
ALTER TABLE memory.tombstones_keyed RENAME TO tombstones;

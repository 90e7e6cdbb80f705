-- Verbatim notes. Nothing here is ever rewritten except lifecycle columns (archived_at, superseded_*).
CREATE SEQUENCE memory.note_ids START 1;
CREATE TABLE memory.notes (
    id            BIGINT PRIMARY KEY,
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
    archived_at   TIMESTAMP
);
-- (namespace, key) uniqueness is checked by memory.remember under the runtime lock: DuckDB rewrites an
-- updated row as delete+insert, and a unique index would make lifecycle updates fail spuriously.
-- One row per note and embedding model: the vector as float32 bytes, so a restart reloads it in one read.
CREATE TABLE memory.vectors (
    note_id BIGINT NOT NULL,
    model   VARCHAR NOT NULL,
    dim     INTEGER NOT NULL,
    vec     BLOB NOT NULL,
    PRIMARY KEY (note_id, model)
);

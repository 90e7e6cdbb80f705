-- Every table is keyed by namespace first (issue 41 item 8, ADR 0016 "Citus layout"): Citus distributes a table by
-- `namespace` only if its primary key and every unique key contain that column. Ids stay store-wide (the
-- sequences are unchanged), so adding namespace to a key changes no answer. kg.fact_sources and kg.tombstones had
-- no key at all and nothing in a row that tells two rows apart (the same source may ground the same fact twice at
-- one instant; a namespace may be forgotten twice): each gets a `seq` from its own sequence, numbered in the order
-- the rows were written. entity_keys and predicates are keyed by namespace already.
-- DuckDB cannot change a primary key in place: each table is rebuilt (new table, copy, drop, rename), in the order
-- nothing depends on (no view or foreign key refers to these tables).
CREATE TABLE kg.entities_keyed (
    id          BIGINT NOT NULL,
    namespace   VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, id)
);
INSERT INTO kg.entities_keyed SELECT * FROM kg.entities ORDER BY id;
DROP TABLE kg.entities;
ALTER TABLE kg.entities_keyed RENAME TO entities;

CREATE TABLE kg.facts_keyed (
    version_id          BIGINT NOT NULL,
    fact_id             BIGINT NOT NULL,
    namespace           VARCHAR NOT NULL,
    subject_id          BIGINT NOT NULL,
    subject_name        VARCHAR NOT NULL,
    predicate           VARCHAR NOT NULL,
    object_id           BIGINT,
    object_value        VARCHAR,
    object_text         VARCHAR NOT NULL,
    valid_from          TIMESTAMP,
    valid_to            TIMESTAMP,
    valid_to_source     VARCHAR,
    superseded_by       BIGINT,
    coexisting          BOOLEAN NOT NULL,
    confidence          DOUBLE NOT NULL,
    combined_confidence DOUBLE NOT NULL,
    evidence_count      INTEGER NOT NULL,
    source_id           VARCHAR,
    first_recorded_at   TIMESTAMP NOT NULL,
    recorded_at         TIMESTAMP NOT NULL,
    retracted_at        TIMESTAMP,
    end_reason          VARCHAR,
    PRIMARY KEY (namespace, version_id)
);
INSERT INTO kg.facts_keyed SELECT * FROM kg.facts ORDER BY version_id;
DROP TABLE kg.facts;
ALTER TABLE kg.facts_keyed RENAME TO facts;
CREATE INDEX facts_subject_idx ON kg.facts (subject_id);

CREATE SEQUENCE kg.fact_source_seq START 1;
CREATE TABLE kg.fact_sources_keyed (
    namespace   VARCHAR NOT NULL,
    fact_id     BIGINT NOT NULL,
    source_id   VARCHAR NOT NULL,
    confidence  DOUBLE NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    seq         BIGINT NOT NULL DEFAULT nextval('kg.fact_source_seq'),  -- write order; not exported
    PRIMARY KEY (namespace, seq)
);
INSERT INTO kg.fact_sources_keyed (namespace, fact_id, source_id, confidence, recorded_at)
    SELECT * FROM kg.fact_sources ORDER BY recorded_at, fact_id;
DROP TABLE kg.fact_sources;
ALTER TABLE kg.fact_sources_keyed RENAME TO fact_sources;

CREATE TABLE kg.edges_keyed (
    id          BIGINT NOT NULL,
    namespace   VARCHAR NOT NULL,
    src         VARCHAR NOT NULL,
    dst         VARCHAR NOT NULL,
    relation    VARCHAR NOT NULL,
    weight      DOUBLE NOT NULL,
    properties  JSON,
    valid_from  TIMESTAMP,
    valid_to    TIMESTAMP,
    created_at  TIMESTAMP NOT NULL,
    removed_at  TIMESTAMP,
    PRIMARY KEY (namespace, id)
);
INSERT INTO kg.edges_keyed SELECT * FROM kg.edges ORDER BY id;
DROP TABLE kg.edges;
ALTER TABLE kg.edges_keyed RENAME TO edges;

CREATE TABLE kg.centrality_keyed (
    namespace   VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,
    node_id     VARCHAR NOT NULL,
    score       DOUBLE NOT NULL,
    raw_score   DOUBLE NOT NULL,
    computed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, scope, node_id)
);
INSERT INTO kg.centrality_keyed SELECT * FROM kg.centrality;
DROP TABLE kg.centrality;
ALTER TABLE kg.centrality_keyed RENAME TO centrality;

CREATE TABLE kg.claims_keyed (
    claim_id      BIGINT NOT NULL,
    namespace     VARCHAR NOT NULL,
    subject_id    BIGINT NOT NULL,
    predicate     VARCHAR NOT NULL,
    object_id     BIGINT,
    object_value  VARCHAR,
    object_text   VARCHAR NOT NULL,
    valid_from    TIMESTAMP,
    valid_to      TIMESTAMP,
    confidence    DOUBLE NOT NULL,
    coexisting    BOOLEAN NOT NULL,
    recorded_at   TIMESTAMP NOT NULL,
    retracted_at  TIMESTAMP,
    PRIMARY KEY (namespace, claim_id)
);
INSERT INTO kg.claims_keyed SELECT * FROM kg.claims ORDER BY claim_id;
DROP TABLE kg.claims;
ALTER TABLE kg.claims_keyed RENAME TO claims;

CREATE SEQUENCE kg.tombstone_seq START 1;
CREATE TABLE kg.tombstones_keyed (
    namespace    VARCHAR NOT NULL,
    ref          VARCHAR NOT NULL,          -- 'e:<entity id>', 'f:<fact id>', or 'namespace'
    forgotten_at TIMESTAMP NOT NULL,
    reason       VARCHAR NOT NULL,
    actor        VARCHAR,                   -- who the forgetting call was made for (NULL: nobody in particular)
    seq          BIGINT NOT NULL DEFAULT nextval('kg.tombstone_seq'),  -- write order; not exported
    PRIMARY KEY (namespace, seq)
);
INSERT INTO kg.tombstones_keyed (namespace, ref, forgotten_at, reason, actor)
    SELECT * FROM kg.tombstones ORDER BY forgotten_at;
DROP TABLE kg.tombstones;
ALTER TABLE kg.tombstones_keyed RENAME TO tombstones;

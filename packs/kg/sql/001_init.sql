-- kg pack, schema version 1: entities, bi-temporal facts, predicates, typed edges, centrality scores.
-- Nothing here is ever deleted: facts are versioned rows closed in transaction time, edges are closed by removed_at.

CREATE SEQUENCE kg.entity_seq START 1;
CREATE SEQUENCE kg.fact_seq START 1;
CREATE SEQUENCE kg.version_seq START 1;
CREATE SEQUENCE kg.edge_seq START 1;

CREATE TABLE kg.entities (
    id          BIGINT PRIMARY KEY,
    namespace   VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,          -- canonical name as first given (trimmed, spaces collapsed)
    kind        VARCHAR NOT NULL,          -- open set, ^[a-z][a-z0-9_]*$
    created_at  TIMESTAMP NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);

-- Every name and alias of an entity, case-folded: one lookup table for resolution and detection.
CREATE TABLE kg.entity_keys (
    namespace   VARCHAR NOT NULL,
    key         VARCHAR NOT NULL,          -- casefold(NFKC(text)), spaces collapsed
    entity_id   BIGINT NOT NULL,
    text        VARCHAR NOT NULL,          -- the alias as given
    is_name     BOOLEAN NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, key)
);

-- A random token per namespace, rewritten whenever its entities or aliases change (detector cache key).
CREATE TABLE kg.entity_revisions (
    namespace   VARCHAR PRIMARY KEY,
    token       VARCHAR NOT NULL
);

CREATE TABLE kg.predicates (
    namespace   VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    cardinality VARCHAR NOT NULL,          -- 'one' | 'many'
    description VARCHAR,
    defined_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- One row per VERSION of a fact. A fact (fact_id) keeps its id across versions; a version is current in
-- transaction time while retracted_at IS NULL. Correcting a fact's valid interval closes its version
-- (retracted_at = now, end_reason = 'corrected') and inserts a new version; retraction closes it with
-- end_reason = 'retracted' and inserts nothing.
CREATE TABLE kg.facts (
    version_id          BIGINT NOT NULL,
    fact_id             BIGINT NOT NULL,
    namespace           VARCHAR NOT NULL,
    subject_id          BIGINT NOT NULL,
    subject_name        VARCHAR NOT NULL,  -- the subject's canonical name (names never change: denormalised)
    predicate           VARCHAR NOT NULL,
    object_id           BIGINT,            -- entity object, or NULL for a literal
    object_value        VARCHAR,           -- literal object, or NULL for an entity
    object_text         VARCHAR NOT NULL,  -- the object entity's canonical name, or the literal
    valid_from          TIMESTAMP,         -- NULL: since an unknown time (treated as -infinity)
    valid_to            TIMESTAMP,         -- NULL: still true (open)
    valid_to_source     VARCHAR,           -- NULL (open) | 'explicit' (caller) | 'successor' (closed by superseded_by)
    superseded_by       BIGINT,            -- fact_id of the fact that ended this one
    coexisting          BOOLEAN NOT NULL,  -- outside the supersession timeline (many predicate / allow_coexisting)
    confidence          DOUBLE NOT NULL,   -- max over the assertions
    combined_confidence DOUBLE NOT NULL,   -- noisy-or over the assertions
    evidence_count      INTEGER NOT NULL,
    source_id           VARCHAR,           -- the note that first grounded it
    first_recorded_at   TIMESTAMP NOT NULL,-- when the fact was first recorded
    recorded_at         TIMESTAMP NOT NULL,-- when this version became our belief (transaction time from)
    retracted_at        TIMESTAMP,         -- when this version stopped being our belief (transaction time to)
    end_reason          VARCHAR            -- NULL | 'corrected' | 'retracted'
);
CREATE INDEX facts_subject_idx ON kg.facts (subject_id);

-- Every source note that grounded an assertion of a fact (re-assertions add rows here).
CREATE TABLE kg.fact_sources (
    namespace   VARCHAR NOT NULL,
    fact_id     BIGINT NOT NULL,
    source_id   VARCHAR NOT NULL,
    confidence  DOUBLE NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);

-- Typed links between node ids: 'e:<entity id>', 'm:<memory note id>', 'f:<fact id>'.
CREATE TABLE kg.edges (
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
    removed_at  TIMESTAMP
);

-- PageRank per node, per named graph view (scope), replaced on each kg.centrality run of that scope.
CREATE TABLE kg.centrality (
    namespace   VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,
    node_id     VARCHAR NOT NULL,
    score       DOUBLE NOT NULL,
    raw_score   DOUBLE NOT NULL,
    computed_at TIMESTAMP NOT NULL
);

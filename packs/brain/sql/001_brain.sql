-- The brain pack (ADR 0010): profiles, their bindings, Beta posteriors over the recall weights, the append-only
-- event log they are derived from, the serve ledger (what each top-level recall returned), and the weights the
-- brain last projected into the memory pack's tunables.
CREATE TABLE brain.profiles (
    namespace  VARCHAR NOT NULL,
    name       VARCHAR NOT NULL,
    explore    BOOLEAN NOT NULL,                 -- Thompson sampling instead of posterior means
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, name)
);
-- actor '*' is the namespace's own binding: its profile is the one whose weights recall uses.
CREATE TABLE brain.bindings (
    namespace VARCHAR NOT NULL,
    actor     VARCHAR NOT NULL,
    profile   VARCHAR NOT NULL,
    bound_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, actor)
);
-- A cache of the replayed event log: one row per (namespace, profile, component).
CREATE TABLE brain.posteriors (
    namespace  VARCHAR NOT NULL,
    profile    VARCHAR NOT NULL,
    component  VARCHAR NOT NULL CHECK (component IN ('relevance', 'salience', 'temporal')),
    alpha      DOUBLE NOT NULL CHECK (alpha > 0),
    beta       DOUBLE NOT NULL CHECK (beta > 0),
    events     BIGINT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, profile, component)
);
-- Append-only. kind 'init' and 'reset' carry the prior they set; 'feedback' carries the credit and the deltas.
CREATE SEQUENCE brain.event_seq START 1;
CREATE TABLE brain.events (
    seq        BIGINT PRIMARY KEY,
    namespace  VARCHAR NOT NULL,
    profile    VARCHAR NOT NULL,
    kind       VARCHAR NOT NULL CHECK (kind IN ('init', 'feedback', 'reset')),
    recall_id  VARCHAR,
    note_id    BIGINT,
    signal     VARCHAR,
    source     VARCHAR,
    weight     DOUBLE,
    actor      VARCHAR,
    payload    JSON NOT NULL,                    -- {"prior"|"credit","delta","cap","floor"}
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE brain.serves (
    recall_id VARCHAR PRIMARY KEY,
    namespace VARCHAR NOT NULL,
    query     VARCHAR NOT NULL,
    served_at TIMESTAMP NOT NULL,
    weights   JSON NOT NULL                      -- the score weights the recall ranked with
);
CREATE TABLE brain.serve_items (
    recall_id          VARCHAR NOT NULL,
    note_id            BIGINT NOT NULL,
    rank               INTEGER NOT NULL,
    score              DOUBLE NOT NULL,
    relevance          DOUBLE NOT NULL,
    effective_salience DOUBLE NOT NULL,
    recency            DOUBLE NOT NULL,
    PRIMARY KEY (recall_id, note_id)
);
CREATE TABLE brain.projections (
    namespace  VARCHAR PRIMARY KEY,
    profile    VARCHAR NOT NULL,
    relevance  DOUBLE NOT NULL,
    salience   DOUBLE NOT NULL,
    temporal   DOUBLE NOT NULL,
    sampled    BOOLEAN NOT NULL,
    set_at     TIMESTAMP NOT NULL
);

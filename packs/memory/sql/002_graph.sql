-- Memory graph layer (issue 5, ADR 0012). The edges themselves live in the kg pack (kg.edges, 'm:<id>' nodes).

-- Every version of every belief (memory.upsert_belief), append-only: rows are inserted, never updated or deleted.
-- Each version is also a semantic note (note_id); a new version links to the previous one with a supersedes edge.
CREATE TABLE memory.belief_versions (
    namespace    VARCHAR NOT NULL,
    fact_key     VARCHAR NOT NULL,
    version      INTEGER NOT NULL,
    note_id      BIGINT NOT NULL,
    content      VARCHAR NOT NULL,
    recorded_at  TIMESTAMP NOT NULL,
    supersedes   BIGINT,          -- the previous version's note id (NULL for version 1)
    edge_id      BIGINT,          -- the kg edge note_id → supersedes
    PRIMARY KEY (namespace, fact_key, version)
);

-- PageRank of each note over its namespace's positive memory edges (memory.centrality), normalised so the top
-- note is 1.0; replaced for the whole namespace on each run. Notes without a row count as 0.
CREATE TABLE memory.centrality (
    note_id      BIGINT PRIMARY KEY,
    namespace    VARCHAR NOT NULL,
    score        DOUBLE NOT NULL,
    computed_at  TIMESTAMP NOT NULL
);

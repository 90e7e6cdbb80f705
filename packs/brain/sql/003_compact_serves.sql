-- The serve ledger keeps only what feedback needs (issue 16.13): one row per serve, with the served note ids and
-- their three score components as lists in rank order, the weights the recall ranked with, who it was made for
-- and the profile that ranked it. The query text and the scores are no longer kept, and neither are the two
-- primary-key indexes (DuckDB rewrites an index at every checkpoint: with them 100k recalls grew a file by
-- ~130 MB). `seq` is the order serves were written, so the oldest are dropped first when a namespace holds more
-- than `serve_max_per_namespace` (ADR 0010). Existing serves are converted, in served order.
CREATE TABLE brain.serve_ledger (
    recall_id          VARCHAR NOT NULL,
    namespace          VARCHAR NOT NULL,
    seq                BIGINT NOT NULL,
    served_at          TIMESTAMP NOT NULL,
    actor              VARCHAR,                  -- NULL: a recall made for nobody in particular
    profile            VARCHAR,                  -- NULL only for serves written before 002
    relevance_weight   DOUBLE NOT NULL,          -- the score weights the recall ranked with (0 if not recorded)
    salience_weight    DOUBLE NOT NULL,
    temporal_weight    DOUBLE NOT NULL,
    note_ids           BIGINT[] NOT NULL,        -- in rank order; the lists below align with it
    relevance          DOUBLE[] NOT NULL,
    effective_salience DOUBLE[] NOT NULL,
    recency            DOUBLE[] NOT NULL
);
INSERT INTO brain.serve_ledger
    WITH items AS (
        SELECT recall_id, list(note_id ORDER BY rank) AS note_ids, list(relevance ORDER BY rank) AS relevance,
               list(effective_salience ORDER BY rank) AS effective_salience, list(recency ORDER BY rank) AS recency
        FROM brain.serve_items GROUP BY recall_id)
    SELECT s.recall_id, s.namespace, row_number() OVER (ORDER BY s.served_at, s.recall_id), s.served_at, s.actor,
           s.profile,
           coalesce(TRY_CAST(json_extract_string(s.weights, '$.relevance') AS DOUBLE), 0),
           coalesce(TRY_CAST(json_extract_string(s.weights, '$.salience') AS DOUBLE), 0),
           coalesce(TRY_CAST(json_extract_string(s.weights, '$.temporal') AS DOUBLE), 0),
           coalesce(i.note_ids, []), coalesce(i.relevance, []), coalesce(i.effective_salience, []),
           coalesce(i.recency, [])
    FROM brain.serves s LEFT JOIN items i ON i.recall_id = s.recall_id;
DROP TABLE brain.serve_items;
DROP TABLE brain.serves;
ALTER TABLE brain.serve_ledger RENAME TO serves;
-- One row per served note, for reading (nothing is stored twice).
CREATE VIEW brain.serve_items AS
    SELECT recall_id, unnest(note_ids) AS note_id, unnest(range(len(note_ids))) AS rank,
           unnest(relevance) AS relevance, unnest(effective_salience) AS effective_salience, unnest(recency) AS recency
    FROM brain.serves;

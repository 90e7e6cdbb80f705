-- PostgreSQL's version of 003_compact_serves.sql (ADR 0016): the same layout and conversion, in PostgreSQL's
-- dialect (array_agg instead of list, ->> for JSON, array literals), and the serve_items view numbers each served
-- note with generate_subscripts instead of DuckDB's range(len(...)).
CREATE TABLE brain.serve_ledger (
    recall_id          VARCHAR NOT NULL,
    namespace          VARCHAR NOT NULL,
    seq                BIGINT NOT NULL,
    served_at          TIMESTAMP NOT NULL,
    actor              VARCHAR,
    profile            VARCHAR,
    relevance_weight   DOUBLE PRECISION NOT NULL,
    salience_weight    DOUBLE PRECISION NOT NULL,
    temporal_weight    DOUBLE PRECISION NOT NULL,
    note_ids           BIGINT[] NOT NULL,
    relevance          DOUBLE PRECISION[] NOT NULL,
    effective_salience DOUBLE PRECISION[] NOT NULL,
    recency            DOUBLE PRECISION[] NOT NULL
);
INSERT INTO brain.serve_ledger
    WITH items AS (
        SELECT recall_id, array_agg(note_id ORDER BY rank) AS note_ids, array_agg(relevance ORDER BY rank) AS relevance,
               array_agg(effective_salience ORDER BY rank) AS effective_salience,
               array_agg(recency ORDER BY rank) AS recency
        FROM brain.serve_items GROUP BY recall_id)
    SELECT s.recall_id, s.namespace, row_number() OVER (ORDER BY s.served_at, s.recall_id), s.served_at, s.actor,
           s.profile,
           coalesce((s.weights::jsonb ->> 'relevance')::DOUBLE PRECISION, 0),
           coalesce((s.weights::jsonb ->> 'salience')::DOUBLE PRECISION, 0),
           coalesce((s.weights::jsonb ->> 'temporal')::DOUBLE PRECISION, 0),
           coalesce(i.note_ids, '{}'), coalesce(i.relevance, '{}'), coalesce(i.effective_salience, '{}'),
           coalesce(i.recency, '{}')
    FROM brain.serves s LEFT JOIN items i ON i.recall_id = s.recall_id;
DROP TABLE brain.serve_items;
DROP TABLE brain.serves;
ALTER TABLE brain.serve_ledger RENAME TO serves;
CREATE VIEW brain.serve_items AS
    SELECT recall_id, unnest(note_ids) AS note_id, generate_subscripts(note_ids, 1) - 1 AS rank,
           unnest(relevance) AS relevance, unnest(effective_salience) AS effective_salience, unnest(recency) AS recency
    FROM brain.serves;

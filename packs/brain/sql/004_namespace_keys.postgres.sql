-- PostgreSQL's version of 004_namespace_keys.sql (issue 41 item 8, ADR 0016 "Citus layout"): brain.events' key
-- changed in place, and brain.serves keyed by (namespace, recall_id) (a recall id is served once; on DuckDB the
-- table keeps no index, see 003_compact_serves.sql).
ALTER TABLE brain.events DROP CONSTRAINT events_pkey, ADD PRIMARY KEY (namespace, seq);
ALTER TABLE brain.serves ADD PRIMARY KEY (namespace, recall_id);

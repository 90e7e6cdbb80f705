-- PostgreSQL's version of 005_namespace_keys.sql (issue 41 item 8, ADR 0016 "Citus layout"): the same keys, set
-- in place with ALTER TABLE instead of rebuilding each table; the new `seq` columns are numbered from their
-- sequences as they are added.
ALTER TABLE kg.entities DROP CONSTRAINT entities_pkey, ADD PRIMARY KEY (namespace, id);
ALTER TABLE kg.facts ADD PRIMARY KEY (namespace, version_id);

CREATE SEQUENCE kg.fact_source_seq START 1;
ALTER TABLE kg.fact_sources ADD COLUMN seq BIGINT NOT NULL DEFAULT nextval('kg.fact_source_seq');
ALTER TABLE kg.fact_sources ADD PRIMARY KEY (namespace, seq);

ALTER TABLE kg.edges ADD PRIMARY KEY (namespace, id);
ALTER TABLE kg.centrality ADD PRIMARY KEY (namespace, scope, node_id);
ALTER TABLE kg.claims ADD PRIMARY KEY (namespace, claim_id);

CREATE SEQUENCE kg.tombstone_seq START 1;
ALTER TABLE kg.tombstones ADD COLUMN seq BIGINT NOT NULL DEFAULT nextval('kg.tombstone_seq');
ALTER TABLE kg.tombstones ADD PRIMARY KEY (namespace, seq);

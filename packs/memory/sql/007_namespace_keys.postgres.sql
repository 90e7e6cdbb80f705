-- PostgreSQL's version of 007_namespace_keys.sql (issue 41 item 8, ADR 0016 "Citus layout"): the same keys, set
-- in place with ALTER TABLE instead of rebuilding each table. The (namespace, id) index 006 added for a
-- namespace's load is the new primary key's, so it is dropped.
ALTER TABLE memory.notes DROP CONSTRAINT notes_pkey, ADD PRIMARY KEY (namespace, id);
DROP INDEX memory.notes_namespace_id;

ALTER TABLE memory.vectors ADD COLUMN namespace VARCHAR;
UPDATE memory.vectors v SET namespace = n.namespace FROM memory.notes n WHERE n.id = v.note_id;
DELETE FROM memory.vectors WHERE namespace IS NULL;
ALTER TABLE memory.vectors ALTER COLUMN namespace SET NOT NULL, DROP CONSTRAINT vectors_pkey,
    ADD PRIMARY KEY (namespace, note_id, model);

ALTER TABLE memory.centrality DROP CONSTRAINT centrality_pkey, ADD PRIMARY KEY (namespace, note_id);

ALTER TABLE memory.note_audit ADD PRIMARY KEY (namespace, seq);

DELETE FROM memory.tombstones a USING memory.tombstones b
    WHERE a.namespace = b.namespace AND a.note_id = b.note_id
      AND (a.forgotten_at, a.ctid) > (b.forgotten_at, b.ctid);
ALTER TABLE memory.tombstones ADD PRIMARY KEY (namespace, note_id);

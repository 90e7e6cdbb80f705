CREATE SEQUENCE memory.note_ids START 1;
CREATE TABLE memory.notes (id BIGINT PRIMARY KEY DEFAULT nextval('memory.note_ids'), ns VARCHAR NOT NULL,
                           content VARCHAR NOT NULL, key VARCHAR);
CREATE SEQUENCE memory.edge_ids START 1;
CREATE TABLE memory.edges (id BIGINT PRIMARY KEY DEFAULT nextval('memory.edge_ids'), ns VARCHAR NOT NULL,
                           source_id BIGINT NOT NULL, target_id BIGINT NOT NULL, relation VARCHAR NOT NULL);

CREATE SEQUENCE kg.fact_ids START 1;
CREATE TABLE kg.facts (id BIGINT PRIMARY KEY DEFAULT nextval('kg.fact_ids'), ns VARCHAR NOT NULL,
                       subject VARCHAR NOT NULL, predicate VARCHAR NOT NULL, object VARCHAR NOT NULL);

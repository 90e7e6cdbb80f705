-- PostgreSQL's version of 003_claims.sql (ADR 0016): the same, with the NULL typed (PostgreSQL types an untyped
-- NULL in a subquery as text).
-- Every assertion kept as a claim with its own interval (issue 15, ADR 0006): a timeline is recomputed from its
-- claims, so a later arrival can split a merged interval again and the answers do not depend on arrival order.
CREATE SEQUENCE kg.claim_seq START 1;

CREATE TABLE kg.claims (
    claim_id      BIGINT NOT NULL,           -- arrival order: the last tie-break of equal claims
    namespace     VARCHAR NOT NULL,
    subject_id    BIGINT NOT NULL,
    predicate     VARCHAR NOT NULL,
    object_id     BIGINT,
    object_value  VARCHAR,
    object_text   VARCHAR NOT NULL,
    valid_from    TIMESTAMP,                 -- NULL: since an unknown time
    valid_to      TIMESTAMP,                 -- the asserted end, NULL: open
    confidence    DOUBLE NOT NULL,
    coexisting    BOOLEAN NOT NULL,
    recorded_at   TIMESTAMP NOT NULL,
    retracted_at  TIMESTAMP                  -- set when the fact it stood on is retracted
);

-- Facts stored before claims existed: each current, non-empty fact stands for one claim of its interval (an end
-- inferred from a successor is not a claim's end).
INSERT INTO kg.claims
SELECT nextval('kg.claim_seq'), * FROM (
    SELECT namespace, subject_id, predicate, object_id, object_value, object_text, valid_from,
           CASE WHEN valid_to_source = 'explicit' THEN valid_to END, confidence, coexisting, first_recorded_at, NULL::TIMESTAMP
    FROM kg.facts WHERE retracted_at IS NULL AND (valid_to IS NULL OR valid_from IS NULL OR valid_to > valid_from)
    ORDER BY first_recorded_at, fact_id);

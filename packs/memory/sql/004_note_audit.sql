-- memory.update's audit trail: every metadata change made in place, field by field (content changes are new
-- versions linked by a supersedes edge, so the old text stays as it was).
CREATE SEQUENCE memory.audit_seq START 1;
CREATE TABLE memory.note_audit (
    seq        BIGINT NOT NULL,
    namespace  VARCHAR NOT NULL,
    note_id    BIGINT NOT NULL,
    field      VARCHAR NOT NULL,
    old_value  JSON,
    new_value  JSON,
    actor      VARCHAR,
    changed_at TIMESTAMP NOT NULL
);

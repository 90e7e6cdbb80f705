-- What memory.forget erased (issue 17, ADR 0018): the note's row, vectors, audit trail, edges and postings are
-- deleted for real; a tombstone keeps that a note was here, when it was forgotten, why and for whom.
CREATE TABLE memory.tombstones (
    namespace    VARCHAR NOT NULL,
    note_id      BIGINT NOT NULL,
    forgotten_at TIMESTAMP NOT NULL,
    reason       VARCHAR NOT NULL,
    actor        VARCHAR                    -- who the forgetting call was made for (NULL: nobody in particular)
);

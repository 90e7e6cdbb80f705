-- What kg.forget erased (issue 17, ADR 0018): erasing deletes rows for real, and a tombstone per erased entity and
-- fact says that something was here, when, why and for whom, without what it was.
CREATE TABLE kg.tombstones (
    namespace    VARCHAR NOT NULL,
    ref          VARCHAR NOT NULL,          -- 'e:<entity id>', 'f:<fact id>', or 'namespace'
    forgotten_at TIMESTAMP NOT NULL,
    reason       VARCHAR NOT NULL,
    actor        VARCHAR                    -- who the forgetting call was made for (NULL: nobody in particular)
);

-- Profiles are served per actor (ADR 0010): the weights projected for each actor bound to a profile are kept
-- beside the namespace's (actor '*'), and each serve records the actor it was made for and the profile whose
-- weights ranked it.
CREATE TABLE brain.projections_by_actor (
    namespace  VARCHAR NOT NULL,
    actor      VARCHAR NOT NULL,                 -- '*': the namespace's own weights
    profile    VARCHAR NOT NULL,
    relevance  DOUBLE NOT NULL,
    salience   DOUBLE NOT NULL,
    temporal   DOUBLE NOT NULL,
    sampled    BOOLEAN NOT NULL,
    set_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, actor)
);
INSERT INTO brain.projections_by_actor
    SELECT namespace, '*', profile, relevance, salience, temporal, sampled, set_at FROM brain.projections;
DROP TABLE brain.projections;
ALTER TABLE brain.projections_by_actor RENAME TO projections;
ALTER TABLE brain.serves ADD COLUMN actor VARCHAR;      -- NULL: a recall made for nobody in particular
ALTER TABLE brain.serves ADD COLUMN profile VARCHAR;    -- NULL only for serves written before this migration

-- The entity detectors are a mirror fed with committed changes (adr/0014-kg-scale.md): the revision token that
-- told a cached detector from a stale one is no longer read or written.
DROP TABLE kg.entity_revisions;

-- PostgreSQL form of ../../migrations/014_fragment_aliases.sql (same number, same end state)
-- Ids that redirect to the fragment they became: an accepted proposal takes an id by the org's
-- convention, and its prop-... id names it still. One row per old id.
CREATE TABLE fragment_aliases (
    alias         VARCHAR COLLATE "C" PRIMARY KEY,
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    created_at    TIMESTAMP NOT NULL
);
CREATE INDEX fragment_aliases_by_target ON fragment_aliases (fragment_id);

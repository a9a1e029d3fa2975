-- Ids that redirect to the fragment they became: an accepted proposal takes an id by the org's
-- convention (nw-note-..., as ingest and new fragments get), and its prop-... id names it still
-- (get, show, history, MCP get). One row per old id; a renamed fragment's older aliases follow it.
CREATE TABLE fragment_aliases (
    alias         VARCHAR PRIMARY KEY,
    fragment_id   VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL
);

-- Curated sets: named, owned selections defined by a scope, an optional query, and manual
-- includes and excludes.
CREATE TABLE sets (
    name          VARCHAR PRIMARY KEY,
    owner         VARCHAR NOT NULL,
    scope         VARCHAR NOT NULL,
    query         VARCHAR,
    created_at    TIMESTAMP NOT NULL
);

CREATE TABLE set_members (
    set_name      VARCHAR NOT NULL,
    fragment_id   VARCHAR NOT NULL,
    mode          VARCHAR NOT NULL,   -- include | exclude
    PRIMARY KEY (set_name, fragment_id)
);

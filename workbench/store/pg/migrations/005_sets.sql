-- PostgreSQL form of ../../migrations/005_sets.sql (same number, same end state)
-- Curated sets: named, owned selections defined by a scope, an optional query, and manual
-- includes and excludes.
CREATE TABLE sets (
    name          VARCHAR COLLATE "C" PRIMARY KEY,
    owner         VARCHAR COLLATE "C" NOT NULL,
    scope         VARCHAR COLLATE "C" NOT NULL,
    query         VARCHAR COLLATE "C",
    created_at    TIMESTAMP NOT NULL
);

CREATE TABLE set_members (
    set_name      VARCHAR COLLATE "C" NOT NULL,
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    mode          VARCHAR COLLATE "C" NOT NULL,   -- include | exclude
    PRIMARY KEY (set_name, fragment_id)
);

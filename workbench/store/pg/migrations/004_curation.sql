-- PostgreSQL form of ../../migrations/004_curation.sql (same number, same end state)
-- Curation: SimHash cache, nudges sent, snoozes, and the git repositories ingested
-- (their local paths, for code-drift checks).
CREATE TABLE simhashes (
    content_hash  VARCHAR COLLATE "C" PRIMARY KEY,
    simhash       NUMERIC(20, 0) NOT NULL
);

CREATE TABLE nudges (
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    owner         VARCHAR COLLATE "C" NOT NULL,
    nudged_at     TIMESTAMP NOT NULL,
    reason        VARCHAR COLLATE "C" NOT NULL
);

CREATE TABLE snoozes (
    fragment_id   VARCHAR COLLATE "C" PRIMARY KEY,
    until         TIMESTAMP NOT NULL,
    snoozed_by    VARCHAR COLLATE "C" NOT NULL,
    snoozed_at    TIMESTAMP NOT NULL
);

CREATE TABLE git_repos (
    name          VARCHAR COLLATE "C" PRIMARY KEY,
    path          VARCHAR COLLATE "C" NOT NULL,
    head          VARCHAR COLLATE "C",
    ingested_at   TIMESTAMP NOT NULL
);

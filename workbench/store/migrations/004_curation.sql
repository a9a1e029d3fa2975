-- Curation: SimHash cache, nudges sent, snoozes, and the git repositories ingested
-- (their local paths, for code-drift checks).
CREATE TABLE simhashes (
    content_hash  VARCHAR PRIMARY KEY,
    simhash       UBIGINT NOT NULL
);

CREATE TABLE nudges (
    fragment_id   VARCHAR NOT NULL,
    owner         VARCHAR NOT NULL,
    nudged_at     TIMESTAMP NOT NULL,
    reason        VARCHAR NOT NULL
);

CREATE TABLE snoozes (
    fragment_id   VARCHAR PRIMARY KEY,
    until         TIMESTAMP NOT NULL,
    snoozed_by    VARCHAR NOT NULL,
    snoozed_at    TIMESTAMP NOT NULL
);

CREATE TABLE git_repos (
    name          VARCHAR PRIMARY KEY,
    path          VARCHAR NOT NULL,
    head          VARCHAR,
    ingested_at   TIMESTAMP NOT NULL
);

-- PostgreSQL form of ../../migrations/001_fragments.sql (same number, same end state)
-- Fragments (current state), their full version history, and recorded events.
CREATE TABLE fragments (
    id            VARCHAR COLLATE "C" PRIMARY KEY,
    version       INTEGER NOT NULL,
    kind          VARCHAR COLLATE "C" NOT NULL,
    title         VARCHAR COLLATE "C" NOT NULL,
    body          VARCHAR COLLATE "C" NOT NULL,
    org           VARCHAR COLLATE "C" NOT NULL,
    repo          VARCHAR COLLATE "C",
    persona       VARCHAR COLLATE "C",
    session       VARCHAR COLLATE "C",
    owner         VARCHAR COLLATE "C" NOT NULL,
    status        VARCHAR COLLATE "C" NOT NULL,
    tags          VARCHAR[] COLLATE "C" NOT NULL,
    links         VARCHAR[] COLLATE "C" NOT NULL,
    supersedes    VARCHAR[] COLLATE "C" NOT NULL,
    sources       JSON NOT NULL,
    details       JSON NOT NULL,
    content_hash  VARCHAR COLLATE "C" NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    verified_at   TIMESTAMP,
    origin        VARCHAR COLLATE "C"
);

CREATE TABLE fragment_versions (
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    version       INTEGER NOT NULL,
    author        VARCHAR COLLATE "C" NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    reason        VARCHAR COLLATE "C" NOT NULL,
    content_hash  VARCHAR COLLATE "C" NOT NULL,
    content       JSON NOT NULL,
    PRIMARY KEY (fragment_id, version)
);

CREATE SEQUENCE event_seq START 1;
CREATE TABLE events (
    id            BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
    occurred_at   TIMESTAMP NOT NULL,
    actor         VARCHAR COLLATE "C",
    action        VARCHAR COLLATE "C" NOT NULL,
    fragment_id   VARCHAR COLLATE "C",
    detail        JSON
);

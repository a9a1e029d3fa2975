-- Fragments (current state), their full version history, and recorded events.
CREATE TABLE fragments (
    id            VARCHAR PRIMARY KEY,
    version       INTEGER NOT NULL,
    kind          VARCHAR NOT NULL,
    title         VARCHAR NOT NULL,
    body          VARCHAR NOT NULL,
    org           VARCHAR NOT NULL,
    repo          VARCHAR,
    persona       VARCHAR,
    session       VARCHAR,
    owner         VARCHAR NOT NULL,
    status        VARCHAR NOT NULL,
    tags          VARCHAR[] NOT NULL,
    links         VARCHAR[] NOT NULL,
    supersedes    VARCHAR[] NOT NULL,
    sources       JSON NOT NULL,
    details       JSON NOT NULL,
    content_hash  VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    verified_at   TIMESTAMP,
    origin        VARCHAR
);

CREATE TABLE fragment_versions (
    fragment_id   VARCHAR NOT NULL,
    version       INTEGER NOT NULL,
    author        VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    reason        VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,
    content       JSON NOT NULL,
    PRIMARY KEY (fragment_id, version)
);

CREATE SEQUENCE event_seq START 1;
CREATE TABLE events (
    id            BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
    occurred_at   TIMESTAMP NOT NULL,
    actor         VARCHAR,
    action        VARCHAR NOT NULL,
    fragment_id   VARCHAR,
    detail        JSON
);

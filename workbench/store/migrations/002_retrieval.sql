-- Retrieval: cached embeddings, a write generation for index invalidation,
-- citation authority, pins and replayable traces.
CREATE TABLE embeddings (
    text_hash     VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    vector        FLOAT[384] NOT NULL,
    PRIMARY KEY (text_hash, model)
);

CREATE TABLE meta (
    key           VARCHAR PRIMARY KEY,
    value         VARCHAR NOT NULL
);
INSERT INTO meta VALUES ('generation', '0');

CREATE TABLE authority (
    fragment_id   VARCHAR PRIMARY KEY,
    score         DOUBLE NOT NULL,
    in_links      INTEGER NOT NULL,
    out_links     INTEGER NOT NULL,
    generation    BIGINT NOT NULL
);

CREATE TABLE pins (
    fragment_id   VARCHAR NOT NULL,
    scope         VARCHAR NOT NULL,
    pinned_by     VARCHAR NOT NULL,
    pinned_at     TIMESTAMP NOT NULL,
    reason        VARCHAR,
    until         TIMESTAMP,
    PRIMARY KEY (fragment_id, scope)
);

CREATE TABLE traces (
    id            VARCHAR PRIMARY KEY,
    created_at    TIMESTAMP NOT NULL,
    kind          VARCHAR NOT NULL,
    query         VARCHAR NOT NULL,
    principal     VARCHAR NOT NULL,
    scope         VARCHAR,
    settings      JSON NOT NULL,
    served        JSON NOT NULL
);

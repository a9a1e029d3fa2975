-- PostgreSQL form of ../../migrations/002_retrieval.sql (same number, same end state)
-- Retrieval: cached embeddings, a write generation for index invalidation,
-- citation authority, pins and replayable traces.
CREATE TABLE embeddings (
    text_hash     VARCHAR COLLATE "C" NOT NULL,
    model         VARCHAR COLLATE "C" NOT NULL,
    vector        vector(384) NOT NULL,
    PRIMARY KEY (text_hash, model)
);

CREATE TABLE meta (
    key           VARCHAR COLLATE "C" PRIMARY KEY,
    value         VARCHAR COLLATE "C" NOT NULL
);
INSERT INTO meta VALUES ('generation', '0');

CREATE TABLE authority (
    fragment_id   VARCHAR COLLATE "C" PRIMARY KEY,
    score         DOUBLE PRECISION NOT NULL,
    in_links      INTEGER NOT NULL,
    out_links     INTEGER NOT NULL,
    generation    BIGINT NOT NULL
);

CREATE TABLE pins (
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    scope         VARCHAR COLLATE "C" NOT NULL,
    pinned_by     VARCHAR COLLATE "C" NOT NULL,
    pinned_at     TIMESTAMP NOT NULL,
    reason        VARCHAR COLLATE "C",
    until         TIMESTAMP,
    PRIMARY KEY (fragment_id, scope)
);

CREATE TABLE traces (
    id            VARCHAR COLLATE "C" PRIMARY KEY,
    created_at    TIMESTAMP NOT NULL,
    kind          VARCHAR COLLATE "C" NOT NULL,
    query         VARCHAR COLLATE "C" NOT NULL,
    principal     VARCHAR COLLATE "C" NOT NULL,
    scope         VARCHAR COLLATE "C",
    settings      JSON NOT NULL,
    served        JSON NOT NULL
);

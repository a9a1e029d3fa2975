-- PostgreSQL form of ../../migrations/003_ingested_files.sql (same number, same end state)
-- Files already ingested, by path and content hash, so re-ingesting an unchanged file
-- skips parsing and validation entirely.
CREATE TABLE ingested_files (
    path          VARCHAR COLLATE "C" PRIMARY KEY,
    file_hash     VARCHAR COLLATE "C" NOT NULL,
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    content_hash  VARCHAR COLLATE "C" NOT NULL,
    ingested_at   TIMESTAMP NOT NULL
);

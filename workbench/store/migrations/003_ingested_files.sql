-- Files already ingested, by path and content hash, so re-ingesting an unchanged file
-- skips parsing and validation entirely.
CREATE TABLE ingested_files (
    path          VARCHAR PRIMARY KEY,
    file_hash     VARCHAR NOT NULL,
    fragment_id   VARCHAR NOT NULL,
    content_hash  VARCHAR NOT NULL,
    ingested_at   TIMESTAMP NOT NULL
);

-- Sync with a base: per fragment, the content hash of the file it was last in step with (the
-- file an ingest took, or the file export-files wrote back). An ingest compares the file and the
-- database with it: a file unchanged since its base never overwrites newer database versions,
-- and a file and a database both changed since it is a conflict (ingest/sync.py).
-- Existing workspaces: the base is what the last ingest of a file took for the fragment (its
-- ingested_files row, the newest if the fragment came from several paths), or for a git chunk
-- the content its last git ingest wrote. Fragments no ingest ever wrote have no base.
-- read-compatible: only ingest and export-files read or write it
CREATE TABLE sync_bases (
    fragment_id   VARCHAR PRIMARY KEY,
    content_hash  VARCHAR NOT NULL,
    source        VARCHAR,
    taken_at      TIMESTAMP NOT NULL
);
INSERT INTO sync_bases
SELECT fragment_id, content_hash, path, ingested_at FROM (
    SELECT fragment_id, content_hash, path, ingested_at,
           row_number() OVER (PARTITION BY fragment_id ORDER BY ingested_at DESC, path) AS n
    FROM ingested_files) AS newest
WHERE n = 1;
INSERT INTO sync_bases
SELECT fragment_id, content_hash, NULL, created_at FROM (
    SELECT v.fragment_id, v.content_hash, v.created_at,
           row_number() OVER (PARTITION BY v.fragment_id ORDER BY v.version DESC) AS n
    FROM fragment_versions v
    WHERE starts_with(v.reason, 'git ingest ')
      AND v.fragment_id NOT IN (SELECT fragment_id FROM sync_bases)) AS newest
WHERE n = 1;

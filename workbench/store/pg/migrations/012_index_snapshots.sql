-- PostgreSQL form of ../../migrations/012_index_snapshots.sql: the files of the index snapshot a
-- replica shared last (retrieval/snapshot.py's format), one row per file; meta.json is written
-- last, so a snapshot without it is incomplete and never read. A cache, left out of backups.
-- read-compatible: only replicas starting without a snapshot read it
CREATE TABLE index_snapshot_files (
    snapshot  INTEGER NOT NULL,
    name      VARCHAR COLLATE "C" NOT NULL,
    data      BYTEA NOT NULL,
    PRIMARY KEY (snapshot, name)
);

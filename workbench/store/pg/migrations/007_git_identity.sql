-- PostgreSQL form of ../../migrations/007_git_identity.sql (same number, same end state)
-- Git repositories are identified by their root commit and origin remote, not their folder name:
-- two same-named folders may hold different repositories. The table is rebuilt keyed by the repo
-- key that chunk origins carry (git:KEY:PATH); rows from before keep their name as key and a NULL
-- root_commit (legacy rows: their chunks' origins are git:NAME:PATH), and keep working for drift.
CREATE TABLE git_repos_007 (
    repo_key      VARCHAR COLLATE "C" PRIMARY KEY,   -- ROOT12[-REMOTE8]; the folder name for legacy rows
    name          VARCHAR COLLATE "C" NOT NULL,      -- folder name (or --scope repo): the fragments' scope repo
    path          VARCHAR COLLATE "C" NOT NULL,      -- resolved working tree
    head          VARCHAR COLLATE "C",
    ingested_at   TIMESTAMP NOT NULL,
    root_commit   VARCHAR COLLATE "C",               -- full sha; NULL for legacy rows
    remote        VARCHAR COLLATE "C",               -- origin URL, credentials stripped
    include_globs VARCHAR COLLATE "C",               -- JSON list: the --include globs of the last ingest
    adopted       VARCHAR COLLATE "C"                -- JSON list of older keys whose chunks belong to this repository
);
INSERT INTO git_repos_007 (repo_key, name, path, head, ingested_at)
    SELECT name, name, path, head, ingested_at FROM git_repos;
DROP TABLE git_repos;
ALTER TABLE git_repos_007 RENAME TO git_repos;

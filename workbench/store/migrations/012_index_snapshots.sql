-- Index snapshots shared through the database are PostgreSQL's: a replica starting on another
-- machine loads one instead of building its index from every fragment. A DuckDB workspace's
-- snapshot lives beside its file (workbench.duckdb.index/), where every process finds it.
-- read-compatible: it changes nothing
SELECT 1;

-- The change log is PostgreSQL's: server replicas follow it to learn what other processes wrote.
-- A DuckDB workspace is written by one process at a time and has no replicas: nothing to add here,
-- and the number is taken so that both backends number their migrations alike.
-- read-compatible: it changes nothing
SELECT 1;

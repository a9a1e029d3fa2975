-- PostgreSQL form of ../../migrations/011_change_log.sql: the change log server replicas follow.
-- Every write transaction that changes what retrieval sees (the generation) or the tokens adds a
-- row, and NOTIFYs workbench_changes at its commit (a wake-up only). Readers never go by seq (a
-- sequence number is taken before commit, so a lower one can become visible later): they read
-- the rows of transactions whose xid lies between the xmin they last saw and the current
-- snapshot's xmin, every one of which has ended.
CREATE TABLE changes (
    seq   BIGSERIAL PRIMARY KEY,
    xid   xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at    TIMESTAMP NOT NULL DEFAULT (clock_timestamp() AT TIME ZONE 'UTC'),
    kind  VARCHAR COLLATE "C" NOT NULL        -- generation | tokens
);
CREATE INDEX changes_by_xid ON changes (xid);

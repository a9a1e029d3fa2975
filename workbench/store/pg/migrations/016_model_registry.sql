-- PostgreSQL form of ../../migrations/016_model_registry.sql (same number, same end state)
-- read-compatible: a table only the `model` commands write; without it the bundled model serves, as before
-- Embedding models (issue 31): the registry of model generations. One row per model added with
-- `workbench model add`; the bundled model gets its row on the first change (kind 'bundled', path '').
-- state: serving (the one whose vectors the index holds and whose vectors queries are scored against;
-- at most one), shadow (embedded alongside while the serving one serves), retired (replaced by a
-- promote: its vectors are kept for the rollback window, then dropped and dropped_at set).
-- previous: the model the serving one replaced (what `model rollback` switches back to).
-- shadow_done / shadow_total: the last progress `model shadow` recorded (texts embedded / to embed).
CREATE TABLE embedding_models (
    name            VARCHAR COLLATE "C" PRIMARY KEY,
    path            VARCHAR NOT NULL,
    kind            VARCHAR NOT NULL,         -- bundled | onnx | sentence-transformers
    dimension       INTEGER NOT NULL,
    added_at        TIMESTAMP NOT NULL,
    state           VARCHAR NOT NULL,         -- serving | shadow | retired
    promoted_at     TIMESTAMP,
    previous        VARCHAR,
    retired_at      TIMESTAMP,
    dropped_at      TIMESTAMP,
    shadow_done     INTEGER NOT NULL DEFAULT 0,
    shadow_total    INTEGER NOT NULL DEFAULT 0,
    shadow_at       TIMESTAMP
);

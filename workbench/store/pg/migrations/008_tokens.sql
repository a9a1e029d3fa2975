-- PostgreSQL form of ../../migrations/008_tokens.sql (same number, same end state)
-- API tokens: a bearer token authenticates its principal to the team server. Only the sha256 of
-- the whole token is stored; the id is the token's public part (list, revoke) and the key of the
-- one lookup authentication makes.
-- read-compatible: only token commands and authentication read it, and a database without it holds no tokens
CREATE TABLE tokens (
    id            VARCHAR COLLATE "C" PRIMARY KEY,   -- 12 lowercase hex characters, the public part of the token
    principal     VARCHAR COLLATE "C" NOT NULL,      -- the principal the token authenticates (a name in workbench.yaml)
    token_hash    VARCHAR COLLATE "C" NOT NULL,      -- sha256 hex of the whole token
    created_at    TIMESTAMP NOT NULL,
    expires_at    TIMESTAMP,             -- NULL: never expires
    revoked_at    TIMESTAMP,             -- NULL: not revoked
    last_used_at  TIMESTAMP,             -- updated at most once a minute
    note          VARCHAR COLLATE "C"
);

-- PostgreSQL form of ../../migrations/006_secret_overrides.sql (same number, same end state)
-- Versions stored with a secret-guard override (--allow-secret): who allowed it, when, and what
-- the guard found. A fragment whose current version is listed here is withheld from exports and
-- from agents unless the caller asks for it.
CREATE TABLE secret_overrides (
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    version       INTEGER NOT NULL,
    actor         VARCHAR COLLATE "C" NOT NULL,
    allowed_at    TIMESTAMP NOT NULL,
    findings      VARCHAR COLLATE "C" NOT NULL,
    PRIMARY KEY (fragment_id, version)
);

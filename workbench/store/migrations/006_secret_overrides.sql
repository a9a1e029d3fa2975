-- Versions stored with a secret-guard override (--allow-secret): who allowed it, when, and what
-- the guard found. A fragment whose current version is listed here is withheld from exports and
-- from agents unless the caller asks for it.
CREATE TABLE secret_overrides (
    fragment_id   VARCHAR NOT NULL,
    version       INTEGER NOT NULL,
    actor         VARCHAR NOT NULL,
    allowed_at    TIMESTAMP NOT NULL,
    findings      VARCHAR NOT NULL,
    PRIMARY KEY (fragment_id, version)
);

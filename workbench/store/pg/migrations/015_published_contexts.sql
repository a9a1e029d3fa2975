-- PostgreSQL form of ../../migrations/015_published_contexts.sql (same number, same end state)
-- Published contexts (issue 30): a set published under ORG/SET, materialised as numbered
-- versions (which fragment, at which fragment version, in which scope, pinned by the publisher)
-- with a changelog per version, and the subscriptions of other scopes to it. Ending either side
-- sets ended_at; rows are kept (the publisher's changelog, who subscribed).
CREATE TABLE published_contexts (
    name            VARCHAR COLLATE "C" PRIMARY KEY,      -- ORG/SET, ORG the org of the set's scope
    set_name        VARCHAR COLLATE "C" NOT NULL,
    set_scope       VARCHAR COLLATE "C" NOT NULL,
    owner           VARCHAR COLLATE "C" NOT NULL,         -- who published it (the set's owner or a lead of its scope)
    version_policy  VARCHAR COLLATE "C" NOT NULL,         -- latest | pinned: what a new subscription follows
    with_pins       BOOLEAN NOT NULL,         -- the publisher's pins travel with the context
    created_at      TIMESTAMP NOT NULL,
    ended_at        TIMESTAMP
);

CREATE TABLE published_versions (
    context           VARCHAR COLLATE "C" NOT NULL,
    version           INTEGER NOT NULL,
    fragment_id       VARCHAR COLLATE "C" NOT NULL,
    fragment_version  INTEGER NOT NULL,
    fragment_scope    VARCHAR COLLATE "C" NOT NULL,       -- the scope it was published with
    pinned            BOOLEAN NOT NULL,       -- pinned by the publisher (travels when with_pins)
    PRIMARY KEY (context, version, fragment_id)
);

CREATE TABLE published_changes (
    context         VARCHAR COLLATE "C" NOT NULL,
    version         INTEGER NOT NULL,
    published_by    VARCHAR COLLATE "C" NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    reason          VARCHAR COLLATE "C" NOT NULL,         -- publish | set-add | set-remove
    changelog       VARCHAR COLLATE "C" NOT NULL,         -- JSON {"added": [...], "removed": [...], "changed": [...]}
    PRIMARY KEY (context, version)
);

CREATE TABLE subscriptions (
    context         VARCHAR COLLATE "C" NOT NULL,
    scope           VARCHAR COLLATE "C" NOT NULL,         -- where the published fragments apply
    subscribed_by   VARCHAR COLLATE "C" NOT NULL,
    version         INTEGER,                  -- a pinned subscription's context version; NULL follows the latest
    created_at      TIMESTAMP NOT NULL,
    ended_at        TIMESTAMP,
    PRIMARY KEY (context, scope)
);

-- A picked set (set create --picked) holds exactly the fragments included by hand: no scope-wide
-- base, no query. A curated context (a platform team's rules) is published from one; NULL: false.
ALTER TABLE sets ADD COLUMN picked BOOLEAN DEFAULT false;

INSERT INTO meta VALUES ('published', '0');  -- bumped by every change above: receipts are cached on it

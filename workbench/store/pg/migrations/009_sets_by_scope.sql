-- PostgreSQL form of ../../migrations/009_sets_by_scope.sql (same number, same end state)
-- Curated sets are named within their scope: the key is (name, scope), and a member row names its
-- set by both. Two sets may then share a name when whoever made the second could not see the
-- first, so `set create` of a name that exists only in a scope the actor cannot see answers exactly
-- like a free name (005 made names one namespace per workspace, which told that such a set exists).
CREATE TABLE sets_by_scope (
    name          VARCHAR COLLATE "C" NOT NULL,
    owner         VARCHAR COLLATE "C" NOT NULL,
    scope         VARCHAR COLLATE "C" NOT NULL,
    query         VARCHAR COLLATE "C",
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (name, scope)
);
INSERT INTO sets_by_scope SELECT name, owner, scope, query, created_at FROM sets;

CREATE TABLE set_members_by_scope (
    set_name      VARCHAR COLLATE "C" NOT NULL,
    set_scope     VARCHAR COLLATE "C" NOT NULL,
    fragment_id   VARCHAR COLLATE "C" NOT NULL,
    mode          VARCHAR COLLATE "C" NOT NULL,   -- include | exclude
    PRIMARY KEY (set_name, set_scope, fragment_id)
);
INSERT INTO set_members_by_scope
    SELECT m.set_name, s.scope, m.fragment_id, m.mode FROM set_members m JOIN sets s ON s.name = m.set_name;

DROP TABLE set_members;
DROP TABLE sets;
ALTER TABLE sets_by_scope RENAME TO sets;
ALTER TABLE set_members_by_scope RENAME TO set_members;

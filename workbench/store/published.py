"""Store queries for published contexts and subscriptions (migration 015).

A published context is a set made public under ``ORG/SET``: each version is a snapshot of the
set's members (fragment, fragment version, the scope it was published with, whether the
publisher pinned it) with a changelog row; subscriptions name the scope where a context's
fragments apply. Ending either side sets ``ended_at``; rows are replaced (deleted and inserted
again), never updated in place. Every change bumps the ``published`` meta counter, on which the
service caches who receives what. Portable SQL (DuckDB and PostgreSQL run it as written).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

_CONTEXT = "name, set_name, set_scope, owner, version_policy, with_pins, created_at, ended_at"
_SUBSCRIPTION = "context, scope, subscribed_by, version, created_at, ended_at"


def _context(row: tuple) -> dict[str, Any]:
    return dict(zip(("name", "set_name", "set_scope", "owner", "version_policy", "with_pins", "created_at",
                     "ended_at"), row))


def _subscription(row: tuple) -> dict[str, Any]:
    return dict(zip(("context", "scope", "subscribed_by", "version", "created_at", "ended_at"), row))


class PublishQueries:
    # The host class provides _q and transaction().

    # -- contexts -------------------------------------------------------------------------

    def published_context(self, name: str) -> dict[str, Any] | None:
        """The context named ``name`` (live or ended), with its latest version number, or None."""
        rows = self._q(f"SELECT {_CONTEXT} FROM published_contexts WHERE name = ?", [name])
        if not rows:
            return None
        found = _context(rows[0])
        found["latest"] = self.published_latest(name)
        return found

    def published_contexts(self) -> list[dict[str, Any]]:
        """Every context (live and ended), by name, each with its latest version number."""
        rows = self._q(f"SELECT {_CONTEXT} FROM published_contexts ORDER BY name")
        latest = dict(self._q("SELECT context, max(version) FROM published_changes GROUP BY context"))
        return [{**_context(r), "latest": int(latest.get(r[0]) or 0)} for r in rows]

    def put_published_context(self, name: str, set_name: str, set_scope: str, owner: str, version_policy: str,
                              with_pins: bool, at: datetime) -> None:
        """Publish (or publish again, after an unpublish) the context ``name``: live from now."""
        with self.transaction():
            old = self._q("SELECT created_at FROM published_contexts WHERE name = ?", [name])
            self._q("DELETE FROM published_contexts WHERE name = ?", [name])
            self._q(f"INSERT INTO published_contexts ({_CONTEXT}) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                    [name, set_name, set_scope, owner, version_policy, bool(with_pins), old[0][0] if old else at])
            self.bump_published()

    def end_published_context(self, name: str, at: datetime) -> None:
        with self.transaction():
            rows = self._q(f"SELECT {_CONTEXT} FROM published_contexts WHERE name = ?", [name])
            self._q("DELETE FROM published_contexts WHERE name = ?", [name])
            self._q(f"INSERT INTO published_contexts ({_CONTEXT}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [*rows[0][:7], at])
            self.bump_published()

    # -- versions -------------------------------------------------------------------------

    def published_latest(self, name: str) -> int:
        rows = self._q("SELECT max(version) FROM published_changes WHERE context = ?", [name])
        return int(rows[0][0] or 0) if rows else 0

    def published_members(self, name: str, version: int) -> list[dict[str, Any]]:
        """The members of version ``version`` of ``name``, by fragment id."""
        rows = self._q("SELECT fragment_id, fragment_version, fragment_scope, pinned FROM published_versions "
                       "WHERE context = ? AND version = ? ORDER BY fragment_id", [name, version])
        return [{"id": r[0], "version": int(r[1]), "scope": r[2], "pinned": bool(r[3])} for r in rows]

    def published_changes(self, name: str) -> list[dict[str, Any]]:
        """The changelog of ``name``, oldest version first."""
        rows = self._q("SELECT version, published_by, created_at, reason, changelog FROM published_changes "
                       "WHERE context = ? ORDER BY version", [name])
        return [{"version": int(r[0]), "by": r[1], "at": r[2], "reason": r[3], **json.loads(r[4])} for r in rows]

    def put_published_version(self, name: str, version: int, members: list[dict[str, Any]], *, by: str,
                              at: datetime, reason: str, changelog: dict[str, Any]) -> None:
        """Version ``version`` of ``name``: its members (``published_members``' shape) and changelog row."""
        with self.transaction():
            for m in members:
                self._q("INSERT INTO published_versions VALUES (?, ?, ?, ?, ?, ?)",
                        [name, version, m["id"], m["version"], m["scope"], bool(m["pinned"])])
            self._q("INSERT INTO published_changes VALUES (?, ?, ?, ?, ?, ?)",
                    [name, version, by, at, reason, json.dumps(changelog, sort_keys=True)])
            self.bump_published()

    # -- subscriptions --------------------------------------------------------------------

    def subscriptions(self, context: str | None = None, *, live: bool = True) -> list[dict[str, Any]]:
        """Subscriptions (to ``context``, when given; only those not ended when ``live``)."""
        rows = self._q(f"SELECT {_SUBSCRIPTION} FROM subscriptions WHERE (? IS NULL OR context = ?) "
                       "AND (NOT ? OR ended_at IS NULL) ORDER BY context, scope", [context, context, live])
        return [_subscription(r) for r in rows]

    def put_subscription(self, context: str, scope: str, by: str, version: int | None, at: datetime) -> None:
        """Subscribe ``scope`` to ``context`` (again, after an unsubscribe), following ``version``
        (None: the latest)."""
        with self.transaction():
            self._q("DELETE FROM subscriptions WHERE context = ? AND scope = ?", [context, scope])
            self._q(f"INSERT INTO subscriptions ({_SUBSCRIPTION}) VALUES (?, ?, ?, ?, ?, NULL)",
                    [context, scope, by, version, at])
            self.bump_published()

    def end_subscription(self, context: str, scope: str, at: datetime) -> None:
        with self.transaction():
            rows = self._q(f"SELECT {_SUBSCRIPTION} FROM subscriptions WHERE context = ? AND scope = ?",
                           [context, scope])
            self._q("DELETE FROM subscriptions WHERE context = ? AND scope = ?", [context, scope])
            self._q(f"INSERT INTO subscriptions ({_SUBSCRIPTION}) VALUES (?, ?, ?, ?, ?, ?)", [*rows[0][:5], at])
            self.bump_published()

    # -- receiving ------------------------------------------------------------------------

    # Whether this backend may keep the counter until ``forget_generation`` (DuckDB: every commit,
    # rollback and reconnect forgets it, and no other process writes while this one holds the file);
    # PostgreSQL reads it on each call, as another process may have changed it.
    KEEPS_PUBLISHED_STAMP = False

    def published_stamp(self) -> int | None:
        """The counter every change of contexts, versions and subscriptions bumps (None: a store
        opened read-only before migration 015, which has no published contexts)."""
        held = getattr(self, "_published_held", None)
        if held is not None and held[0] == self.gen_epoch and not self._depth:
            return held[1]
        epoch = self.gen_epoch
        rows = self._q("SELECT value FROM meta WHERE key = 'published'")
        found = int(rows[0][0]) if rows else None
        if self.KEEPS_PUBLISHED_STAMP and epoch == self.gen_epoch and not self._depth:
            self._published_held = (epoch, found)
        return found

    def bump_published(self) -> None:
        """Count a change of contexts, versions or subscriptions (what a principal receives is cached
        on it and the generation: service/receipts.py)."""
        self._q("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) WHERE key = 'published'")
        self.forget_generation()   # the counter kept (DuckDB) is read again, after the commit too
        self._local.bumped = True

    def received_rows(self) -> list[tuple]:
        """What every live subscription of a live context serves: (context, subscription scope,
        subscription's pinned version or None, served version, fragment id, fragment version,
        published scope, publisher's pin, with_pins, and the fragment's current org, repo, persona,
        session and status), by context, scope and fragment; fragments no longer stored are left out."""
        return [tuple(r) for r in self._q(
            "SELECT s.context, s.scope, s.version, v.version, v.fragment_id, v.fragment_version, v.fragment_scope, "
            "v.pinned, c.with_pins, f.org, f.repo, f.persona, f.session, f.status "
            "FROM subscriptions s JOIN published_contexts c ON c.name = s.context "
            "JOIN published_versions v ON v.context = s.context AND v.version = COALESCE(s.version, "
            "(SELECT max(version) FROM published_changes p WHERE p.context = s.context)) "
            "JOIN fragments f ON f.id = v.fragment_id "
            "WHERE s.ended_at IS NULL AND c.ended_at IS NULL ORDER BY s.context, s.scope, v.fragment_id")]

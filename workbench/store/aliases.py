"""Store queries for ids that redirect (migration 014): an accepted proposal's ``prop-...`` id names
the fragment it became. ``rename_fragment`` moves a fragment, its versions, events, ingest records
and secret-guard overrides to a new id in one transaction and records the old id as an alias.

Portable SQL (DuckDB and PostgreSQL run it as written). A key column is never UPDATEd (DuckDB
refuses to update an indexed column in place): rows under a new key are inserted, then the old
ones deleted.
"""

from __future__ import annotations

from datetime import datetime

_FRAGMENT = ("version, kind, title, body, org, repo, persona, session, owner, status, tags, links, supersedes, "
             "sources, details, content_hash, created_at, updated_at, verified_at, origin")
_VERSION = "version, author, created_at, reason, content_hash, content"
_OVERRIDE = "version, actor, allowed_at, findings"


class AliasQueries:
    # The host class provides _q, transaction() and bump_generation().

    def alias_target(self, alias: str) -> str | None:
        """The id of the fragment ``alias`` (an old id) redirects to, or None."""
        rows = self._q("SELECT fragment_id FROM fragment_aliases WHERE alias = ?", [alias])
        return rows[0][0] if rows else None

    def alias_ids(self) -> set[str]:
        """Every old id that redirects (never given to a new fragment)."""
        return {r[0] for r in self._q("SELECT alias FROM fragment_aliases")}

    def rename_fragment(self, old: str, new: str, at: datetime) -> None:
        """Move fragment ``old`` (current state, versions, events, ingest records, overrides) to id
        ``new`` and make ``old`` an alias of it (aliases of ``old`` follow to ``new``)."""
        with self.transaction():
            self._q(f"INSERT INTO fragments (id, {_FRAGMENT}) SELECT ?, {_FRAGMENT} FROM fragments WHERE id = ?",
                    [new, old])
            self._q("DELETE FROM fragments WHERE id = ?", [old])
            self._q(f"INSERT INTO fragment_versions (fragment_id, {_VERSION}) SELECT ?, {_VERSION} "
                    "FROM fragment_versions WHERE fragment_id = ?", [new, old])
            self._q("DELETE FROM fragment_versions WHERE fragment_id = ?", [old])
            self._q(f"INSERT INTO secret_overrides (fragment_id, {_OVERRIDE}) SELECT ?, {_OVERRIDE} "
                    "FROM secret_overrides WHERE fragment_id = ?", [new, old])
            self._q("DELETE FROM secret_overrides WHERE fragment_id = ?", [old])
            for table in ("events", "ingested_files", "fragment_aliases"):
                self._q(f"UPDATE {table} SET fragment_id = ? WHERE fragment_id = ?", [new, old])
            self._q("INSERT INTO fragment_aliases (alias, fragment_id, created_at) VALUES (?, ?, ?)", [old, new, at])
            self.bump_generation()

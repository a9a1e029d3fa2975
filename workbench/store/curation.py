"""Store queries for curation: SimHash cache, nudges, snoozes, git repositories, usage."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import numpy as np

from .rows import text_column


class CurationQueries:
    # The host class (Store) provides _q, _guard, con and transaction().

    def simhashes(self) -> dict[str, int]:
        """content hash → simhash."""
        return {r[0]: int(r[1]) for r in self._q("SELECT content_hash, simhash FROM simhashes")}

    def simhash_rows(self) -> list[tuple]:
        """(id, title, content hash, org, repo, persona, session, owner, cached SimHash or None) of
        every active fragment, by id: what near-duplicate detection reads instead of whole fragments."""
        return self._q("SELECT f.id, f.title, f.content_hash, f.org, f.repo, f.persona, f.session, f.owner, "
                       "s.simhash FROM fragments f LEFT JOIN simhashes s ON s.content_hash = f.content_hash "
                       "WHERE f.status = 'active' ORDER BY f.id")

    def put_simhashes(self, values: dict[str, int]) -> bool:
        """Cache SimHashes (derived data): False, storing nothing, on a read-only workspace."""
        if not values or not self.can_store_derived():
            return False
        keys = list(values)
        batch = {"h": text_column(keys), "s": np.array([values[k] for k in keys], dtype=np.uint64)}

        def insert(sim_batch=batch):  # DuckDB's replacement scan reads ``sim_batch`` from this frame
            return self.con.execute("INSERT OR IGNORE INTO simhashes SELECT h, s FROM sim_batch")

        self._guard(insert)
        return True

    def in_degrees(self) -> dict[str, int]:
        rows = self._q("SELECT dst, count(*) FROM (SELECT unnest(list_concat(links, supersedes)) AS dst "
                       "FROM fragments WHERE status = 'active') GROUP BY dst")
        return {r[0]: r[1] for r in rows}

    def replace_links(self, old: str, new: str) -> list[str]:
        """Ids of active fragments that link to ``old`` (the caller versions each change)."""
        rows = self._q("SELECT id FROM fragments WHERE list_contains(links, ?) OR list_contains(supersedes, ?) "
                       "ORDER BY id", [old, old])
        return [r[0] for r in rows if r[0] != new]

    # -- nudges and snoozes ------------------------------------------------------------

    def last_nudges(self) -> dict[tuple[str, str], datetime]:
        rows = self._q("SELECT fragment_id, owner, max(nudged_at) FROM nudges GROUP BY fragment_id, owner")
        return {(r[0], r[1]): r[2] for r in rows}

    def add_nudges(self, rows: list[tuple[str, str, datetime, str]]) -> None:
        for row in rows:
            self._q("INSERT INTO nudges VALUES (?, ?, ?, ?)", list(row))

    def snoozes(self) -> dict[str, datetime]:
        return {r[0]: r[1] for r in self._q("SELECT fragment_id, until FROM snoozes")}

    def put_snooze(self, fragment_id: str, until: datetime, by: str, at: datetime) -> None:
        with self.transaction():
            self._q("DELETE FROM snoozes WHERE fragment_id = ?", [fragment_id])
            self._q("INSERT INTO snoozes VALUES (?, ?, ?, ?)", [fragment_id, until, by, at])

    def clear_snooze(self, fragment_id: str) -> None:
        self._q("DELETE FROM snoozes WHERE fragment_id = ?", [fragment_id])

    # -- git repositories ----------------------------------------------------------------

    def git_repos(self) -> dict[str, dict[str, Any]]:
        """repo key → the repository as last ingested. The key is what ``git:KEY:PATH`` origins carry:
        ROOT12[-REMOTE8] for rows written since migration 007, the folder name for older (legacy)
        rows, whose ``root`` is None. ``adopted`` lists older keys whose chunks are this repository's."""
        rows = self._q("SELECT repo_key, name, path, head, ingested_at, root_commit, remote, include_globs, adopted "
                       "FROM git_repos ORDER BY repo_key")
        return {r[0]: {"name": r[1], "path": r[2], "head": r[3], "ingested_at": r[4], "root": r[5], "remote": r[6],
                       "include": json.loads(r[7]) if r[7] else None, "adopted": json.loads(r[8]) if r[8] else []}
                for r in rows}

    def put_git_repo(self, key: str, name: str, path: str, head: str | None, at: datetime, *,
                     root: str | None = None, remote: str | None = None, include: list[str] | None = None,
                     adopted: list[str] | tuple[str, ...] = ()) -> None:
        """Record (or replace) one repository; ``root`` None writes a legacy-style row keyed by name."""
        self._q("INSERT OR REPLACE INTO git_repos (repo_key, name, path, head, ingested_at, root_commit, remote, "
                "include_globs, adopted) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [key, name, path, head, at, root, remote, json.dumps(list(include)) if include is not None else None,
                 json.dumps(list(adopted)) if adopted else None])

    def drop_git_repos(self, keys: list[str]) -> None:
        """Forget repositories another row has adopted (their fragments stay, under the adopter)."""
        for key in keys:
            self._q("DELETE FROM git_repos WHERE repo_key = ?", [key])

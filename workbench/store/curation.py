"""Store queries for curation: SimHash cache, nudges, snoozes, git repositories, usage."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np


class CurationQueries:
    # The host class (Store) provides _q, _guard, con and transaction().

    def simhashes(self) -> dict[str, int]:
        """content hash → simhash."""
        return {r[0]: int(r[1]) for r in self._q("SELECT content_hash, simhash FROM simhashes")}

    def put_simhashes(self, values: dict[str, int]) -> None:
        if not values:
            return
        keys = list(values)
        batch = {"h": np.array(keys, dtype=object), "s": np.array([values[k] for k in keys], dtype=np.uint64)}

        def insert(sim_batch=batch):  # DuckDB's replacement scan reads ``sim_batch`` from this frame
            return self.con.execute("INSERT OR IGNORE INTO simhashes SELECT h, s FROM sim_batch")

        self._guard(insert)

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
        return {r[0]: {"path": r[1], "head": r[2], "ingested_at": r[3]}
                for r in self._q("SELECT name, path, head, ingested_at FROM git_repos")}

    def put_git_repo(self, name: str, path: str, head: str | None, at: datetime) -> None:
        self._q("INSERT OR REPLACE INTO git_repos VALUES (?, ?, ?, ?)", [name, path, head, at])

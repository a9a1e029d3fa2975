"""Store queries for agent proposals: how many a principal made lately (the rate limit)."""

from __future__ import annotations

from datetime import datetime


class ProposalQueries:
    # The host class (Store) provides _q.

    def proposals_since(self, author: str, since: datetime) -> int:
        """How many proposals ``author`` made at or after ``since``: first versions written by it
        in status ``proposed`` (what became of them since does not matter)."""
        rows = self._q("SELECT count(*) FROM fragment_versions WHERE author = ? AND version = 1 AND created_at >= ? "
                       "AND json_extract_string(content, '$.status') = 'proposed'", [author, since])
        return int(rows[0][0])

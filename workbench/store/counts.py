"""Store queries that count: per fragment, how many versions and events it has (what ``info``
counts for a principal who may not see the whole workspace)."""

from __future__ import annotations


class CountQueries:
    # The host class (Store) provides _q.

    def tallies(self) -> list[tuple]:
        """(org, repo, persona, session, owner, status, versions, events) of every fragment: enough
        to decide who sees it without reading it, and what it adds to the counts."""
        return self._q("SELECT f.org, f.repo, f.persona, f.session, f.owner, f.status, "
                       "(SELECT count(*) FROM fragment_versions v WHERE v.fragment_id = f.id), "
                       "(SELECT count(*) FROM events e WHERE e.fragment_id = f.id) FROM fragments f")

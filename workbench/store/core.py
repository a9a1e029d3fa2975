"""The store's portable queries: fragments, versions, events and ingested files, read and written
in SQL that DuckDB and PostgreSQL both run as written.

Mixed into each backend's store class (``Store`` for DuckDB, ``pg.PgStore``), which provides the
plumbing: ``_q`` (``?`` placeholders), ``transaction()``, ``write_versions`` (bulk, backend-native)
and ``bump_generation``. A query that needs one backend's own functions does not belong here:
the backend class defines it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from ..models import Content, Fragment, Scope, Version, utcnow
from .rows import Stamp, Stored, Summary, VersionWrite
from .rows import fragment_from_row as _fragment
from .rows import version_from_row as _version

_FRAGMENT_COLS = ("id, version, kind, title, body, org, repo, persona, session, owner, status, tags, links, "
                  "supersedes, sources, details, content_hash, created_at, updated_at, verified_at")


class CoreQueries:
    # The host class provides _q, transaction(), write_versions() and bump_generation().

    def get(self, fragment_id: str) -> Fragment | None:
        rows = self._q(f"SELECT {_FRAGMENT_COLS} FROM fragments WHERE id = ?", [fragment_id])
        return _fragment(rows[0]) if rows else None

    def fragments(self, *, owner: str | None = None, kind: str | None = None, within: Scope | None = None,
                  status: str | None = None, ids: list[str] | None = None, id_from: str | None = None,
                  id_to: str | None = None) -> list[Fragment]:
        """Fragments read whole, in id order, filtered; ``id_from`` / ``id_to``: ids in that range (both ends in)."""
        where, params = _filters(owner, kind, within, status)
        for bound, op in ((id_from, ">="), (id_to, "<=")):
            if bound is not None:
                where.append(f"id {op} ?")
                params.append(bound)
        if ids is not None:
            ids = list(ids)
            if not ids:
                return []
            where.append(f"id IN ({', '.join('?' * len(ids))})")  # a key lookup (list_contains scans)
            params.extend(ids)
        sql = f"SELECT {_FRAGMENT_COLS} FROM fragments" + (" WHERE " + " AND ".join(where) if where else "")
        return [_fragment(r) for r in self._q(sql + " ORDER BY id", params)]

    def listing(self, *, owner: str | None = None, kind: str | None = None, within: Scope | None = None,
                status: str | None = None, after: str | None = None, limit: int = 5000) -> list[tuple]:
        """(id, org, repo, persona, session, owner, status) in id order after ``after``, at most ``limit``,
        filtered as ``fragments``: enough to decide who may see a fragment without reading its body."""
        where, params = _filters(owner, kind, within, status, after)
        return self._q("SELECT id, org, repo, persona, session, owner, status FROM fragments"
                       + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id LIMIT ?", [*params, limit])

    def stamps(self, *, status: str = "active") -> list[Stamp]:
        """(id, version, verified_at) in id order: enough to tell what changed since an index was built."""
        return [Stamp(*r) for r in self._q("SELECT id, version, verified_at FROM fragments WHERE status = ? "
                                           "ORDER BY id", [status])]

    def fragment_pages(self, *, status: str = "active", size: int = 2000) -> Iterator[list[Fragment]]:
        """Every fragment with ``status``, in id order, a page at a time (a full index build reads
        each text once without holding every fragment in memory)."""
        after = ""
        while True:
            rows = self._q(f"SELECT {_FRAGMENT_COLS} FROM fragments WHERE status = ? AND id > ? ORDER BY id LIMIT ?",
                           [status, after, size])
            if not rows:
                return
            page = [_fragment(r) for r in rows]
            yield page
            after = page[-1].id

    def summaries(self) -> list[Summary]:
        """Light rows for browsing, without bodies or JSON columns."""
        return [Summary(*r) for r in self._q("SELECT id, kind, title, owner, org, repo, persona, session, status, "
                                             "updated_at, verified_at FROM fragments ORDER BY id")]

    def hashes(self) -> dict[str, Stored]:
        """id → (content hash, version, updated_at, verified_at), for change detection."""
        rows = self._q("SELECT id, content_hash, version, updated_at, verified_at FROM fragments")
        return {r[0]: Stored(*r[1:]) for r in rows}

    def origins(self, *, prefix: str) -> dict[str, str]:
        """id → origin (file path, or git:REPO:PATH) of fragments whose origin starts with ``prefix``."""
        rows = self._q("SELECT id, origin FROM fragments WHERE starts_with(coalesce(origin, ''), ?)", [prefix])
        return {r[0]: r[1] for r in rows}

    def ids(self) -> set[str]:
        return {r[0] for r in self._q("SELECT id FROM fragments")}

    def versions(self, fragment_id: str) -> list[Version]:
        rows = self._q("SELECT fragment_id, version, author, created_at, reason, content_hash, content "
                       "FROM fragment_versions WHERE fragment_id = ? ORDER BY version", [fragment_id])
        return [_version(r) for r in rows]

    def version(self, fragment_id: str, number: int) -> Version | None:
        rows = self._q("SELECT fragment_id, version, author, created_at, reason, content_hash, content "
                       "FROM fragment_versions WHERE fragment_id = ? AND version = ?", [fragment_id, number])
        return _version(rows[0]) if rows else None

    def counts(self) -> dict[str, int]:
        frag, ver, ev = self._q("SELECT (SELECT count(*) FROM fragments), (SELECT count(*) FROM fragment_versions), "
                                "(SELECT count(*) FROM events)")[0]
        return {"fragments": frag, "versions": ver, "events": ev}

    def events(self, *, fragment_id: str | None = None, action: str | None = None) -> list[dict[str, Any]]:
        where, params = [], []
        if fragment_id is not None:
            where.append("fragment_id = ?")
            params.append(fragment_id)
        if action is not None:
            where.append("action = ?")
            params.append(action)
        sql = "SELECT id, occurred_at, actor, action, fragment_id, detail FROM events"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self._q(sql + " ORDER BY id", params)
        return [{"id": r[0], "at": r[1], "actor": r[2], "action": r[3], "fragment_id": r[4],
                 "detail": json.loads(r[5]) if r[5] else None} for r in rows]

    def append_version(self, fragment_id: str, content: Content, *, author: str, reason: str,
                       at: datetime, created_at: datetime | None = None,
                       verified_at: datetime | None = None, origin: str | None = None) -> int:
        """Record a new version of one fragment and make it current. Returns its number."""
        with self.transaction():
            rows = self._q("SELECT coalesce(max(version), 0) FROM fragment_versions WHERE fragment_id = ?",
                           [fragment_id])
            number = rows[0][0] + 1
            self.write_versions([VersionWrite(fragment_id, number, content, author, reason, at,
                                              created_at, verified_at, origin)])
        return number

    def ingested_files(self) -> dict[str, tuple[str, str, str]]:
        """path → (file hash, fragment id, content hash) of files ingested before."""
        return {r[0]: (r[1], r[2], r[3]) for r in
                self._q("SELECT path, file_hash, fragment_id, content_hash FROM ingested_files")}

    def sync_bases(self, ids: list[str] | None = None) -> dict[str, str]:
        """fragment id → the content hash of the file it was last in step with (its sync base),
        for ``ids`` (default: every fragment that has one). A fragment without a recorded base (data
        older than migration 013's) takes what the last ingest of a file took for it, else (only
        for ``ids``) the content its last git ingest wrote."""
        recorded = "SELECT fragment_id, content_hash FROM sync_bases"
        by_file = ("SELECT fragment_id, content_hash FROM (SELECT fragment_id, content_hash, row_number() OVER "
                   "(PARTITION BY fragment_id ORDER BY ingested_at DESC, path) AS n FROM ingested_files "
                   "WHERE fragment_id NOT IN (SELECT fragment_id FROM sync_bases){and_ids}) AS newest WHERE n = 1")
        by_git = ("SELECT fragment_id, content_hash FROM (SELECT fragment_id, content_hash, row_number() OVER "
                  "(PARTITION BY fragment_id ORDER BY version DESC) AS n FROM fragment_versions "
                  "WHERE starts_with(reason, 'git ingest ') AND fragment_id NOT IN (SELECT fragment_id FROM sync_bases)"
                  "{and_ids}) AS newest WHERE n = 1")
        if ids is None:
            found = {r[0]: r[1] for r in self._q(by_file.format(and_ids=""))}
            found.update({r[0]: r[1] for r in self._q(recorded)})
            return found
        found = {}
        ids = list(ids)
        for start in range(0, len(ids), 5000):
            part = ids[start:start + 5000]
            among = f" AND fragment_id IN ({', '.join('?' * len(part))})"
            for sql in (by_git, by_file):  # a file's base before a git ingest's
                found.update({r[0]: r[1] for r in self._q(sql.format(and_ids=among), part)})
            found.update({r[0]: r[1] for r in self._q(f"{recorded} WHERE{among[4:]}", part)})
        return found

    def set_verified(self, fragment_id: str, at: datetime) -> None:
        with self.transaction():
            self._q("UPDATE fragments SET verified_at = ? WHERE id = ?", [at, fragment_id])
            self.bump_generation()

    def add_event(self, action: str, *, actor: str | None = None, fragment_id: str | None = None,
                  detail: dict[str, Any] | None = None, at: datetime | None = None) -> None:
        self._q("INSERT INTO events (occurred_at, actor, action, fragment_id, detail) VALUES (?, ?, ?, ?, ?)",
                [at or utcnow(), actor, action, fragment_id, json.dumps(detail) if detail is not None else None])


def _filters(owner: str | None, kind: str | None, within: Scope | None, status: str | None,
             after: str | None = None) -> tuple[list[str], list[Any]]:
    """WHERE clauses and their parameters for fragments of this owner, kind, status, within a scope
    (and with an id after ``after``)."""
    where: list[str] = [] if after is None else ["id > ?"]
    params: list[Any] = [] if after is None else [after]
    for column, value in (("owner", owner), ("kind", kind), ("status", status)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if within is not None:
        for level, value in within.to_dict().items():
            if value is not None:
                where.append(f"{level} = ?")
                params.append(value)
    return where, params

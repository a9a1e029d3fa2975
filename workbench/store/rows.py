"""Typed records the store hands out and takes in (named tuples: positional code keeps working,
new code reads fields by name). ``VersionWrite`` lives here, not in store.py, so the query mixins
can name it without importing the Store."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from ..models import Content, Fragment, Version


class Stamp(NamedTuple):
    """What tells an index that a fragment changed."""
    id: str
    version: int
    verified_at: datetime | None


class Summary(NamedTuple):
    """A light row for browsing (no body, no JSON columns)."""
    id: str
    kind: str
    title: str
    owner: str
    org: str
    repo: str | None
    persona: str | None
    session: str | None
    status: str
    updated_at: datetime
    verified_at: datetime | None


class Stored(NamedTuple):
    """A fragment's current content hash and version, for change detection at ingest."""
    content_hash: str
    version: int
    updated_at: datetime
    verified_at: datetime | None


@dataclass(frozen=True)
class VersionWrite:
    """One version to append (see ``Store.write_versions``)."""

    fragment_id: str
    number: int
    content: Content
    author: str
    reason: str
    at: datetime
    created_at: datetime | None = None
    verified_at: datetime | None = None
    origin: str | None = None
    content_hash: str | None = None  # ``content.content_hash()`` when the caller has it already (ingest)

    def row(self) -> dict[str, Any]:
        c = self.content
        data = c.to_dict()
        ts = lambda v: None if v is None else v.isoformat()  # noqa: E731
        return {"id": self.fragment_id, "version": self.number, "author": self.author, "written_at": ts(self.at),
                "reason": self.reason, "content_hash": self.content_hash or c.content_hash(), "content": data,
                "kind": c.kind, "title": c.title, "body": c.body, **data["scope"], "owner": c.owner,
                "status": c.status, "tags": data["tags"], "links": data["links"],
                "supersedes": data["supersedes"], "sources": data["sources"], "details": data["details"],
                "created_at": ts(self.created_at or self.at), "verified_at": ts(self.verified_at),
                "origin": self.origin}



def text_column(values):
    """Strings as a numpy unicode column for a DuckDB replacement scan. Not dtype=object: DuckDB
    tries ``import pandas`` (to test for pd.NA) for every element of an object column, which
    without pandas installed is a failed import search per row (22 ms for one 384-row vector)."""
    import numpy as np

    return np.array(list(values), dtype=str)


def fragment_from_row(row: tuple) -> Fragment:
    """A fragment from the store's columns (``store._FRAGMENT_COLS``, in that order)."""
    (fid, version, kind, title, body, org, repo, persona, session, owner, status, tags, links, supersedes,
     sources, details, digest, created_at, updated_at, verified_at) = row
    content = Content.from_dict({
        "kind": kind, "title": title, "body": body,
        "scope": {"org": org, "repo": repo, "persona": persona, "session": session},
        "owner": owner, "status": status, "tags": tags, "links": links, "supersedes": supersedes,
        "sources": json.loads(sources), "details": json.loads(details),
    })
    return Fragment(id=fid, version=version, content=content, content_hash=digest,
                    created_at=created_at, updated_at=updated_at, verified_at=verified_at)


def version_from_row(row: tuple) -> Version:
    """A version from (fragment_id, version, author, created_at, reason, content_hash, content)."""
    fid, number, author, created_at, reason, digest, content = row
    return Version(fragment_id=fid, number=number, author=author, created_at=created_at, reason=reason,
                   content_hash=digest, content=Content.from_dict(json.loads(content)))

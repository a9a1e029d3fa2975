"""The columns of an index: what ranking needs of each active fragment, without its text.

``Rows`` holds them as arrays in id order; ``read_rows`` reads them from the store, after an
edit only for the fragments whose stamp (version, verified) changed; ``Source`` reads whole
fragments when an index needs one (a hit, a text to embed or tokenize). ``index_text`` is what
retrieval sees of a fragment, and its hash keys the stored vectors.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Iterable, Iterator

import numpy as np

from ..models import Fragment

CHUNKER_VERSION = "fragment-v1"
EPOCH = datetime(1970, 1, 1)
COLUMNS = ("id", "version", "verified", "updated", "kind", "owner", "org", "repo", "persona", "session",
           "tags", "supersedes", "content_hash", "text_hash")


def index_text(f: Fragment) -> str:
    """What retrieval sees of a fragment: title, anti-pattern fields, body, tags."""
    parts = [f.title]
    parts += [f"{label}: {value}" for label, value in f.content.antipattern()]
    parts.append(f.body)
    if f.tags:
        parts.append("Tags: " + ", ".join(f.tags))
    return "\n\n".join(p for p in parts if p)


def text_hash(text: str) -> str:
    return hashlib.sha256(f"{CHUNKER_VERSION}\n{text}".encode("utf-8")).hexdigest()


def _us(value: datetime | None) -> int:
    return -1 if value is None else int((value - EPOCH).total_seconds() * 1_000_000)


def _object_array(values: Iterable) -> np.ndarray:
    values = list(values)
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class Rows:
    """The columns of the active fragments that ranking needs, in id order (``COLUMNS``; times in
    microseconds since 1970, -1 for never verified; tags and supersedes as tuples)."""

    def __init__(self, columns: dict[str, np.ndarray]):
        self.c = columns
        self.n = len(columns["id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.c[name]

    @classmethod
    def of(cls, fragments: list[Fragment], text_hashes: list[str]) -> "Rows":
        return cls({
            "id": _object_array(f.id for f in fragments),
            "version": np.array([f.version for f in fragments], dtype=np.int64),
            "verified": np.array([_us(f.verified_at) for f in fragments], dtype=np.int64),
            "updated": np.array([_us(f.updated_at) for f in fragments], dtype=np.int64),
            "kind": _object_array(f.kind for f in fragments),
            "owner": _object_array(f.owner for f in fragments),
            "org": _object_array(f.scope.org for f in fragments),
            "repo": _object_array(f.scope.repo for f in fragments),
            "persona": _object_array(f.scope.persona for f in fragments),
            "session": _object_array(f.scope.session for f in fragments),
            "tags": _object_array(tuple(f.tags) for f in fragments),
            "supersedes": _object_array(tuple(f.content.supersedes) for f in fragments),
            "content_hash": _object_array(f.content_hash for f in fragments),
            "text_hash": _object_array(text_hashes)})

    def take(self, order: np.ndarray) -> "Rows":
        return Rows({k: v[order] for k, v in self.c.items()})


class Source:
    """Where an index reads fragments it does not hold: the store (by id, a page at a time), or,
    for an index over fragments held in memory (a BEIR corpus), those objects."""

    def __init__(self, store=None, fragments: list[Fragment] | None = None):
        self.store = store
        self._held = {f.id: f for f in fragments} if fragments is not None else None

    def load(self, ids: list[str]) -> dict[str, Fragment]:
        if self._held is not None:
            return {i: self._held[i] for i in ids if i in self._held}
        out: dict[str, Fragment] = {}
        for start in range(0, len(ids), 2000):
            out.update((f.id, f) for f in self.store.fragments(ids=ids[start:start + 2000]))  # any status: an
        return out  # archived one is still what this generation ranked

    def pages(self) -> Iterator[list[Fragment]]:
        if self._held is not None:
            yield list(self._held.values())
            return
        yield from self.store.fragment_pages(status="active")



def read_rows(store, previous: Rows | None, *, known: dict[tuple[str, str], str] | None = None
              ) -> tuple[Rows, dict[str, str]]:
    """The active fragments' rows, reusing ``previous`` rows whose stamp (version, verified) did
    not change; returns (rows, texts of the fragments read in full: their text hash was needed).
    Without ``previous``, the columns come from one query and the text hashes from ``known``
    ((id, content hash) → text hash: a snapshot's) where they match."""
    if previous is None:
        return _all_rows(store, known or {})
    stamp_ids, versions, verified = store.stamp_arrays(status="active")
    n = len(stamp_ids)
    if n == previous.n and np.array_equal(stamp_ids, previous["id"]):  # the same fragments (an edit)
        same = (previous["version"] == versions) & (previous["verified"] == verified)
        if same.all():
            return Rows(dict(previous.c)), {}  # the arrays are never written in place
        changed_at = np.flatnonzero(~same)
        fresh = {f.id: (f, text) for f, text in _fresh_rows(store, [stamp_ids[i] for i in changed_at.tolist()])}
        if len(fresh) != changed_at.size:  # rows that vanished between the two reads: read again, whole
            return read_rows(store, None)
        columns = {name: previous[name].copy() for name in COLUMNS}
        texts = {}
        for i in changed_at.tolist():
            f, text = fresh[stamp_ids[i]]
            for name, value in _row(f, text).items():
                columns[name][i] = value
            texts[f.id] = text
        return Rows(columns), texts
    if previous.n:
        prev_pos = {fid: i for i, fid in enumerate(previous["id"].tolist())}
        src = np.fromiter((prev_pos.get(fid, -1) for fid in stamp_ids.tolist()), dtype=np.int64, count=n)
        same = src >= 0
        same[same] = (previous["version"][src[same]] == versions[same]) & (previous["verified"][src[same]] == verified[same])
    else:
        src = np.full(n, -1, dtype=np.int64)
        same = np.zeros(n, dtype=bool)
    changed = [stamp_ids[i] for i in np.flatnonzero(~same)]
    if not changed:
        return (previous.take(src) if previous is not None else Rows.of([], [])), {}
    fresh = _fresh_rows(store, changed)
    columns: dict[str, np.ndarray] = {}
    for name in COLUMNS:
        col = (np.empty(n, dtype=object) if name not in ("version", "verified", "updated")
               else np.zeros(n, dtype=np.int64))
        if previous is not None and same.any():
            col[same] = previous[name][src[same]]
        columns[name] = col
    texts: dict[str, str] = {}
    at = {fid: i for i, fid in zip(np.flatnonzero(~same).tolist(), changed)}
    for f, text in fresh:
        i = at.get(f.id)
        if i is None:
            continue
        for name, value in _row(f, text).items():
            columns[name][i] = value
        texts[f.id] = text
        at.pop(f.id)
    rows = Rows(columns)
    if at:  # rows that vanished between the two reads (another process): read again, whole
        return read_rows(store, None)
    return rows, texts


def _row(f: Fragment, text: str) -> dict[str, object]:
    """One fragment's values of ``COLUMNS``."""
    return {"id": f.id, "version": f.version, "verified": _us(f.verified_at), "updated": _us(f.updated_at),
            "kind": f.kind, "owner": f.owner, "org": f.scope.org, "repo": f.scope.repo,
            "persona": f.scope.persona, "session": f.scope.session, "tags": tuple(f.tags),
            "supersedes": tuple(f.content.supersedes), "content_hash": f.content_hash,
            "text_hash": text_hash(text)}


def _all_rows(store, known: dict[tuple[str, str], str]) -> tuple[Rows, dict[str, str]]:
    table = store.index_columns(status="active")
    ids = table["id"].tolist()
    n = len(ids)
    columns = {name: _object_array(table[name].tolist()) for name in
               ("id", "kind", "owner", "org", "repo", "persona", "session", "content_hash")}
    for name in ("version", "verified", "updated"):
        columns[name] = np.asarray(table[name], dtype=np.int64)
    columns["tags"] = _object_array(tuple(t) for t in table["tags"])
    columns["supersedes"] = _object_array(tuple(t) for t in table["supersedes"])
    hashes = [known.get(key) for key in zip(ids, columns["content_hash"].tolist())]
    missing = [i for i, h in enumerate(hashes) if h is None]
    texts: dict[str, str] = {}
    if missing:
        pos = {fid: i for i, fid in enumerate(ids)}
        fragments = (f for page in store.fragment_pages(status="active") for f in page) if len(missing) == n \
            else (f for f, _ in _fresh_rows(store, [ids[i] for i in missing], text=False))
        for f in fragments:
            i = pos.get(f.id)
            if i is not None and hashes[i] is None:
                text = texts[f.id] = index_text(f)
                hashes[i] = text_hash(text)
    columns["text_hash"] = _object_array(h or "" for h in hashes)
    return Rows(columns), texts


def _fresh_rows(store, ids: list[str], *, text: bool = True) -> Iterator[tuple[Fragment, str | None]]:
    """(fragment, its indexed text) for these ids, read in batches."""
    for start in range(0, len(ids), 2000):
        for f in store.fragments(status="active", ids=ids[start:start + 2000]):
            yield f, index_text(f) if text else None

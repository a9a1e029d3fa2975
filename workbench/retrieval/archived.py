"""The index ``search --include-archived`` ranks in: the active fragments and the archived ones, one
corpus, so an archived observation competes with what is current on the same scores.

Built on demand (the default search never pays for it) from the fragments themselves, kept for one
store generation, never persisted: its generation is negative, so nothing derived that is keyed by
generation (the persisted FTS table, the base snapshot, stored PageRank) is ever written for it.
Vectors come from the same embedding cache (archived text was embedded when it was active). Links
and source pointers are those of the active fragments (the stored ones); archived fragments carry
the workspace PageRank they last had, none.

Archiving is a new version with the same text: an archived fragment's freshness counts from its last
*content* version (``content_time``), never from when it was archived, so archiving an old observation
does not make it look fresh.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from .columns import Rows, Source, _us, index_text, text_hash
from .index import SearchIndex

__all__ = ["LEXICAL", "content_time", "wide_index"]

LEXICAL = "bm25"   # the only lexical backend this index has (duckdb-fts is a persisted, active-only table)


def wide_index(store, derived) -> SearchIndex:
    """An index over every active and archived fragment of the store's current generation."""
    generation = store.generation()
    fragments = [f for status in ("active", "archived") for page in store.fragment_pages(status=status)
                 for f in page]
    fragments.sort(key=lambda f: f.id)
    texts = {f.id: index_text(f) for f in fragments}
    rows = Rows.of(fragments, [text_hash(texts[f.id]) for f in fragments])
    for i, f in enumerate(fragments):
        if f.status == "archived":   # its freshness: the last change of what it says, not the archiving
            rows["updated"][i] = _us(content_time(store.versions(f.id), f.updated_at))
    _, authority = store.authority()
    return SearchIndex(rows, -1 - generation, derived, authority, Source(fragments=fragments),
                       links=store.links(), source_links=store.source_edges(), texts=texts)


def content_time(versions, default: datetime) -> datetime:
    """When the newest version's content was written: the first of the latest run of versions that
    differ only in status (archive, restore), oldest first in ``versions``; ``default`` when none."""
    if not versions:
        return default
    same = lambda v: replace(v.content, status="active")   # noqa: E731
    newest = same(versions[-1])
    at = versions[-1].created_at
    for v in reversed(versions[:-1]):
        if same(v) != newest:
            break
        at = v.created_at
    return at

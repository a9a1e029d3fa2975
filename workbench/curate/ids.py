"""New fragment ids that follow the workspace's convention: ``<prefix>-<kind>-<slug>``.

The sample corpus names fragments ``nw-ap-float-for-money`` (northwind), ``tw-ap-...``
(tidewater): a prefix per org, a kind abbreviation, a slug of the title. A new id copies the
prefix the org already uses for that kind, else the org's most common prefix, else the org's
name, and never collides with an existing id (``-2``, ``-3``, ...). Pure: the caller passes the
ids it knows; no store here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Container, Iterable

SLUG_MAX = 60
# kind → the id abbreviation the sample corpus uses (nw-rb-..., tw-note-...)
ABBREVIATIONS = {"decision": "adr", "runbook": "rb", "policy": "pol", "note": "note", "code": "code",
                 "session-summary": "ss", "anti-pattern": "ap", "observation": "obs"}


def slug(title: str, default: str) -> str:
    """Lower-case letters and digits joined by '-', at most ``SLUG_MAX`` characters."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower())[:SLUG_MAX].strip("-") or default


def _most_common(prefixes: Iterable[str]) -> str | None:
    counts = Counter(p for p in prefixes if re.fullmatch(r"[a-z0-9][a-z0-9._]*", p))
    if not counts:
        return None
    return min(counts, key=lambda p: (-counts[p], p))  # ties: alphabetical, so the choice is stable


def org_prefix(org: str, org_ids: Iterable[tuple[str, str]], kind: str, abbreviation: str) -> str:
    """The prefix the org's ids use: the most common ``<prefix>-<abbreviation>-`` among its
    fragments of ``kind``, else the most common first segment of all its ids, else ``org``."""
    rows = list(org_ids)
    marker = f"-{abbreviation}-"
    same_kind = _most_common(i.split(marker, 1)[0] for i, k in rows if k == kind and marker in i)
    return same_kind or _most_common(i.split("-", 1)[0] for i, _ in rows if "-" in i) or org


def new_id(title: str, *, org: str, org_ids: Iterable[tuple[str, str]], taken: Container[str],
           kind: str = "anti-pattern", abbreviation: str = "ap") -> str:
    """``<prefix>-<abbreviation>-<slug of title>``, with ``-2``, ``-3``, ... when taken.
    ``org_ids`` are (id, kind) of the fragments in ``org``; ``taken`` every id in the workspace."""
    base = f"{org_prefix(org, org_ids, kind, abbreviation)}-{abbreviation}-{slug(title, kind)}"
    fid, n = base, 1
    while fid in taken:
        n += 1
        fid = f"{base}-{n}"
    return fid

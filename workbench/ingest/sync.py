"""Sync with a base: how a file (or a git chunk) and the database relate, so an ingest never
silently reverts an edit made in the workbench.

Each fragment has a *base*: the content hash of the file it was last in step with (the file an
ingest took, or the file ``export-files`` wrote back), kept in the store's ``sync_bases``. An
ingest compares three hashes per fragment, the file's, the database's and the base:

==============================  ==========  ===============================================
file vs database vs base        verdict     what an ingest does
==============================  ==========  ===============================================
no fragment in the database     new         adds it; the base is the file
file == database                same        nothing (the base moves to the file)
file == base != database        ahead       nothing: "database ahead of file"
database == base != file        update      a new version from the file; the base moves
file, database, base all differ conflict    nothing, reported; non-zero exit
no base, file is an older       ahead       nothing (a stale copy, e.g. exported before
version of the fragment                     bases were kept)
no base, any other file         update      a new version from the file (nothing was ever in
                                            step, so nothing is reverted); the base moves
==============================  ==========  ===============================================

``--theirs`` makes the file win an ahead or a conflicted fragment (a new version from the file, the
base moves to it); ``--ours`` makes the database win a conflict (nothing written, the base moves to
the file's hash, so the next ingest reports "database ahead" and ``export-files`` writes it back).
A git chunk removed from its repository while the database changed since its base is a conflict
too (``--theirs`` archives it; ``--ours`` keeps it, its base set to ``REMOVED`` so later ingests
report it ahead instead of archiving it).

Pure decisions: no I/O; the importer and the git ingest apply them.
"""

from __future__ import annotations

NEW, SAME, AHEAD, UPDATE, CONFLICT = "new", "same", "ahead", "update", "conflict"
RESOLUTIONS = ("theirs", "ours")
REMOVED = "removed"  # the base of a git chunk whose removal the database's version outlived (--ours)


def verdict(file_hash: str, db_hash: str | None, base: str | None, older: frozenset[str] = frozenset()) -> str:
    """How a file relates to the database (one of NEW, SAME, AHEAD, UPDATE, CONFLICT); see the
    table. ``older``: the content hashes of the fragment's earlier versions (read for a fragment
    without a base only)."""
    if db_hash is None:
        return NEW
    if file_hash == db_hash:
        return SAME
    if base is None:
        return AHEAD if file_hash in older else UPDATE
    if file_hash == base:
        return AHEAD
    if db_hash == base:
        return UPDATE
    return CONFLICT


def removal_verdict(db_hash: str, base: str | None) -> str:
    """A git chunk gone from its repository: UPDATE (archive it) when the database did not change
    since its base, AHEAD when ``--ours`` kept it before, else CONFLICT."""
    if base == REMOVED:
        return AHEAD
    if base is not None and db_hash == base:
        return UPDATE
    return CONFLICT


def conflict_message(file: str, fragment_id: str, *, removed: bool = False) -> str:
    """Why ``fragment_id`` from ``file`` was not written, and how to resolve it."""
    if removed:
        why = f"{file}: {fragment_id} was removed from the repository but changed in the workbench since its last ingest"
    else:
        why = f"{file}: {fragment_id} changed both in the file and in the workbench since the file was last in step"
    return f"{why}; nothing overwritten (ingest --theirs: the file wins; --ours: the workbench's version wins)"


__all__ = ["AHEAD", "CONFLICT", "NEW", "REMOVED", "RESOLUTIONS", "SAME", "UPDATE", "conflict_message",
           "removal_verdict", "verdict"]

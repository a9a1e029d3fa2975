"""Write fragments back to fragment files that re-ingest to the same state.

File names come from data (org, repo, fragment id); ``export.writer`` refuses any that
would land outside the folder, so a hostile id cannot write elsewhere. The export is recorded
in the folder's manifest (kind ``fragment-files``): a re-export replaces its files and removes
those of fragments no longer exported (moved, or no longer visible), and never touches others.
A fragment an ingest took from a file inside the folder is written back to that file (the two-way
sync of ingest/sync.py), which may be replaced while it is exactly what the ingest took.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..inert import inert
from ..ingest.files import render_fragment
from ..models import Fragment
from .manifest import MANIFEST, check_export_folder, write_export

KIND = "fragment-files"


def planned(fragments: list[Fragment], places: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """(relative path, text) for each fragment, as ``export_files`` writes them: inert text (a control
    or bidi character someone wrote is shown as ``\\uXXXX``; bundles keep values exact). ``places``:
    fragment id → the relative path of its own file (see ``own_files``), else ORG/REPO/ID.md."""
    places = places or {}
    return [(place(f, places), inert(render_fragment(f))) for f in fragments]


def place(fragment: Fragment, places: dict[str, str]) -> str:
    """Where ``export_files`` writes ``fragment``, relative to its folder."""
    return places.get(fragment.id) or f"{fragment.scope.org}/{fragment.scope.repo or '_org'}/{fragment.id}.md"


def own_files(out: Path, ingested: dict[str, tuple[str, str, str]]) -> dict[str, tuple[str, str, str]]:
    """Fragment id → (path relative to ``out``, real path, sha256 an ingest took it with) of the
    fragment files under ``out`` that an ingest took (``store.ingested_files()``: real path →
    (sha256, fragment id, content hash)) and that are still there: the files ``export_files``
    writes each fragment back to, so the folder a team syncs keeps its own layout."""
    root = os.path.realpath(out)
    if not os.path.isdir(root):
        return {}
    found: dict[str, tuple[str, str, str]] = {}
    for path, (file_hash, fragment_id, _) in sorted(ingested.items()):
        if fragment_id in found or not path.startswith(root.rstrip(os.sep) + os.sep):
            continue
        relative = os.path.relpath(path, root).replace(os.sep, "/")
        if os.path.isfile(path) and not os.path.islink(path) and os.path.realpath(path) == path:
            found[fragment_id] = (relative, path, file_hash)
    return found


def export_files(fragments: list[Fragment], out: Path, *, force: bool = False, progress=None,
                 meta: dict | None = None, own: dict[str, tuple[str, str, str]] | None = None
                 ) -> list[tuple[Path, str]]:
    """Write the fragment files; returns (path, text) of each (the manifest not included). ``meta``
    (e.g. the principal and scope) is recorded in the manifest with the newest update time, not the
    clock. ``own`` (from ``own_files``): fragments written back to their own files, which may be
    replaced while they hold what the ingest took."""
    check_export_folder(out, force=force)  # before rendering: a refusal costs nothing
    own = own or {}
    newest = max((f.updated_at for f in fragments), default=None)
    info = {"generated_at": newest.isoformat() + "Z" if newest else None, **(meta or {})}
    plan = planned(fragments, {fid: place[0] for fid, place in own.items()})
    known = {relative: own[f.id][2] for f, (relative, _) in zip(fragments, plan) if f.id in own}
    written = write_export(out, plan, kind=KIND, meta=info, force=force, progress=progress,
                           stage="export", known=known)
    texts = dict(plan)
    return [(Path(out) / relative, texts[relative]) for relative in written.files if relative != MANIFEST]

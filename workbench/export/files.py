"""Write fragments back to fragment files that re-ingest to the same state.

File names come from data (org, repo, fragment id); ``export.writer`` refuses any that
would land outside the folder, so a hostile id cannot write elsewhere. The export is recorded
in the folder's manifest (kind ``fragment-files``): a re-export replaces its files and removes
those of fragments no longer exported (moved, or no longer visible), and never touches others.
"""

from __future__ import annotations

from pathlib import Path

from ..inert import inert
from ..ingest.files import render_fragment
from ..models import Fragment
from .manifest import MANIFEST, check_export_folder, write_export

KIND = "fragment-files"


def planned(fragments: list[Fragment]) -> list[tuple[str, str]]:
    """(relative path, text) for each fragment, as ``export_files`` writes them: inert text (a control
    or bidi character someone wrote is shown as ``\\uXXXX``; bundles keep values exact)."""
    return [(f"{f.scope.org}/{f.scope.repo or '_org'}/{f.id}.md", inert(render_fragment(f))) for f in fragments]


def export_files(fragments: list[Fragment], out: Path, *, force: bool = False, progress=None,
                 meta: dict | None = None) -> list[Path]:
    """Write the fragment files; returns their paths (the manifest not included). ``meta`` (e.g.
    the principal and scope) is recorded in the manifest with the newest update time, not the clock."""
    check_export_folder(out, force=force)  # before rendering: a refusal costs nothing
    newest = max((f.updated_at for f in fragments), default=None)
    info = {"generated_at": newest.isoformat() + "Z" if newest else None, **(meta or {})}
    written = write_export(out, planned(fragments), kind=KIND, meta=info, force=force, progress=progress,
                           stage="export")
    return [Path(out) / relative for relative in written.files if relative != MANIFEST]

"""Write fragments back to fragment files that re-ingest to the same state.

File names come from data (org, repo, fragment id); ``export.writer`` refuses any that
would land outside the folder, so a hostile id cannot write elsewhere.
"""

from __future__ import annotations

from pathlib import Path

from ..ingest.files import render_fragment
from ..models import Fragment
from .writer import check_folder, write_tree


def planned(fragments: list[Fragment]) -> list[tuple[str, str]]:
    """(relative path, text) for each fragment, as ``export_files`` writes them."""
    return [(f"{f.scope.org}/{f.scope.repo or '_org'}/{f.id}.md", render_fragment(f)) for f in fragments]


def export_files(fragments: list[Fragment], out: Path, *, force: bool = False, progress=None) -> list[Path]:
    check_folder(out, force=force)  # before rendering: a refusal costs nothing
    return write_tree(out, planned(fragments), force=force, progress=progress, stage="export")

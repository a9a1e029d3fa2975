"""Write fragments back to fragment files that re-ingest to the same state."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..ingest.files import render_fragment
from ..models import Fragment


def planned(fragments: list[Fragment]) -> list[tuple[str, str]]:
    """(relative path, text) for each fragment, as ``export_files`` writes them."""
    return [(f"{f.scope.org}/{f.scope.repo or '_org'}/{f.id}.md", render_fragment(f)) for f in fragments]


def export_files(fragments: list[Fragment], out: Path, *, force: bool = False, progress=None) -> list[Path]:
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty (use --force to write into it)")
    written = []
    plan = planned(fragments)
    for done, (relative, text) in enumerate(plan, start=1):
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
        if progress and (done % 50 == 0 or done == len(plan)):
            progress("export", done, len(plan))
    return written

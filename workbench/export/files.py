"""Write fragments back to fragment files that re-ingest to the same state."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..ingest.files import render_fragment
from ..models import Fragment


def export_files(fragments: list[Fragment], out: Path, *, force: bool = False) -> list[Path]:
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty (use --force to write into it)")
    written = []
    for fragment in fragments:
        folder = out / fragment.scope.org / (fragment.scope.repo or "_org")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{fragment.id}.md"
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(render_fragment(fragment), encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written

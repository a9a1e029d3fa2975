"""The nudge digest's "Proposals to review" section: the proposals awaiting one reviewer.

Pure: the caller passes the proposals (fragments in status ``proposed`` that the reviewer may
review, oldest first) and gets markdown lines; who may review what is policy.py's to decide.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..models import Fragment


def _md(text: str) -> str:
    """Text from agents, safe inside a markdown list item (no line breaks, no emphasis markers)."""
    return " ".join(str(text).split()).replace("*", "\\*").replace("_", "\\_").replace("`", "'")


def digest_section(proposals: Iterable[Fragment], reviewer: str) -> list[str]:
    """The "Proposals to review" section (markdown lines, its heading included) for ``reviewer``."""
    items = list(proposals)
    if not items:
        return []
    intro = (f"{len(items)} proposal(s) from agents await your review, oldest first. Accept one (choosing its "
             "scope and owner), edit then accept, or reject it with a reason its author reads: in the TUI inbox "
             f"(`i`), or read it with `workbench show ID --as {reviewer}`, then "
             f"`workbench review accept ID --base N --as {reviewer}` (N: the version you read, so a later change "
             f"is not accepted unread) / `workbench review reject ID --reason R --as {reviewer}`.")
    lines = ["## Proposals to review", "", intro, ""]
    for f in items:
        author = f.content.detail("proposed_by") or f.owner
        lines.append(f"- **{_md(f.title)}** (`{f.id}`, v{f.version}) — {f.kind} by {_md(author)} in {f.scope}, "
                     f"proposed {f.created_at:%Y-%m-%d}")
    lines.append("")
    return lines

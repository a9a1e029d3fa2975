"""Plain-text rendering of core results for the terminal (JSON goes out as-is); tables through
rich, imported only when a table is printed so `workbench --help` stays fast."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime
from typing import Any, Iterable

from ..models import antipattern_parts


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def age(ts: datetime | None, now: datetime | None = None) -> str:
    from ..tui.format import age as _age

    return _age(ts, now or datetime.utcnow())


RULE = "    \n    \n -  \n    \n    \n    \n    \n    \n"  # rich box: only dashes under the header


def table(headers: list[str], rows: Iterable[list[str]], *, width: int | None = None) -> str:
    """``rows`` under ``headers`` (a rule of dashes between), columns two spaces apart, through rich.

    On a terminal the table fits its width (long cells wrap, a long word folds: nothing is cut);
    piped or redirected, every value is printed whole on its row's line. ``width`` forces a width (tests, callers that know better)."""
    from rich.box import Box
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = [[str(c) if c is not None else "" for c in row] for row in rows]
    terminal = width is None and _isatty(sys.stdout)
    grid = Table(box=Box(RULE, ascii=True), show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold",
                 highlight=False)
    for h in headers:
        grid.add_column(h, overflow="fold")
    for row in rows:
        grid.add_row(*(Text(c) for c in row))  # Text: a value is never read as markup
    if width is None and not terminal:  # piped: wide enough for every value on one line
        width = sum(max([cell_len(h)] + [cell_len(r[i]) for r in rows]) + 2 for i, h in enumerate(headers))
    console = Console(file=sys.stdout, width=width, highlight=False, emoji=False, markup=False,
                      force_terminal=terminal or None, no_color=not terminal or None, soft_wrap=False)
    with console.capture() as out:
        console.print(grid)
    lines = out.get().rstrip("\n").split("\n")
    return "\n".join(re.sub(r" +((?:\x1b\[[0-9;]*m)*)$", r"\1", line) for line in lines)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def fragment_text(data: dict[str, Any]) -> str:
    scope = ",".join(f"{k}={v}" for k, v in data["scope"].items() if v)
    lines = [f"# {data['title']}", "",
             f"id: {data['id']}  version: {data['version']}  kind: {data['kind']}  status: {data['status']}",
             f"scope: {scope}  owner: {data['owner']}",
             f"updated: {data['updated_at']}  verified: {data.get('verified_at') or '-'}"]
    if data.get("superseded_by"):
        newer = data["superseded_by"]
        lines.append(f"superseded by {newer['id']}@v{newer['version']}: prefer it")
    if data.get("tags"):
        lines.append("tags: " + ", ".join(data["tags"]))
    if data.get("links"):
        lines.append("links: " + ", ".join(data["links"]))
    for src in data.get("sources") or []:
        where = src["path"] + (f"#L{src['lines'][0]}-L{src['lines'][1]}" if src.get("lines") else "")
        lines.append(f"source: {src.get('repo') or ''}:{where}" + (f"@{src['commit']}" if src.get("commit") else ""))
    lines += [f"{label}: {value}" for label, value in antipattern_parts(data.get("details") or {})]
    lines += _proposal_lines(data.get("details") or {})
    lines += ["", data["body"]]
    return "\n".join(lines)


def _proposal_lines(details: dict[str, Any]) -> list[str]:
    """A proposal's author and, once reviewed, the decision, the reviewer and the reason."""
    lines = [f"proposed by: {details['proposed_by']}"] if details.get("proposed_by") else []
    review = details.get("review")
    if isinstance(review, dict):
        lines.append(f"review: {review.get('decision')} by {review.get('by')} at {review.get('at')}"
                     + (f": {review['reason']}" if review.get("reason") else ""))
    return lines

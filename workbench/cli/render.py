"""Plain-text rendering of core results for the terminal, and the one gate all of the command
line's output passes: tables through rich, imported only when a table is printed so
`workbench --help` stays fast.

Text from others is inert in every line the command line prints (workbench.inert). ``main``
runs each command inside ``inert_output()``: sys.stdout and sys.stderr become ``InertStream`` objects,
so every write of every command, error message and usage line is made inert on its way out,
and no command has to remember to. The only text let through as it is is text this module made
safe itself (``Inert``): a table styled for this terminal, its cells made inert one by one before
rich laid them out, and ``--json`` output, JSON text made inert (still valid, exactly equal in value).
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from ..inert import inert
from ..models import antipattern_parts


def emit_json(data: Any) -> None:
    sys.stdout.write(Inert(inert(json.dumps(data, indent=2, ensure_ascii=False, default=str)) + "\n"))


class Inert(str):
    """Text this module already made safe for a terminal (inert JSON; a table styled for this
    terminal from inert cells, its bold header the only escape sequences): an ``InertStream`` writes
    it as it is. ``print`` passes it on whole (``__str__`` keeps the type)."""

    def __str__(self) -> str:
        return self


class InertStream(io.TextIOBase):
    """sys.stdout or sys.stderr while a command runs: every write made inert (except ``Inert``).
    The binary ``buffer`` under it stays reachable for the protocols that write bytes (MCP on stdio)."""

    def __init__(self, raw) -> None:
        self.raw = raw

    @property
    def encoding(self) -> str:  # click writes to a stream whose encoding and errors it knows
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:
        return getattr(self.raw, "errors", None) or "strict"

    @property
    def buffer(self):
        return self.raw.buffer

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        self.raw.write(text if type(text) is Inert else inert(text))
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return _isatty(self.raw)

    def fileno(self) -> int:
        return self.raw.fileno()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # what else a caller asks of the real stream (columns, name)
        return getattr(self.raw, name)


@contextmanager
def inert_output() -> Iterator[None]:
    """Run a command with sys.stdout and sys.stderr made inert; put them back afterwards."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if isinstance(s, InertStream) else InertStream(s) for s in saved)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def age(ts: datetime | None, now: datetime | None = None) -> str:
    from ..tui.format import age as _age

    return _age(ts, now or datetime.utcnow())


RULE = "    \n    \n -  \n    \n    \n    \n    \n    \n"  # rich box: only dashes under the header


def table(headers: list[str], rows: Iterable[list[str]], *, width: int | None = None) -> str:
    """``rows`` under ``headers`` (a rule of dashes between), columns two spaces apart, through rich.

    On a terminal the table fits its width (long cells wrap, a long word folds: nothing is cut);
    piped or redirected, every value is printed whole on its row's line. ``width`` forces a width (tests, callers that know better).

    Every cell is made inert before it is laid out (so widths count what is shown); on this process's
    own terminal the header is bold and the table comes back ``Inert``. A command run in the team
    server for a caller on a terminal gets the caller's width and no styling (the caller's stream makes
    everything it receives inert)."""
    from rich.box import Box
    from rich.cells import cell_len
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    rows = [[inert(str(c)) if c is not None else "" for c in row] for row in rows]
    terminal = width is None and _isatty(sys.stdout)
    served_columns = getattr(sys.stdout, "columns", None)  # cli/remote.py: the caller's terminal width
    styled = terminal and not served_columns
    if terminal and served_columns:
        width, terminal = served_columns, False
    grid = Table(box=Box(RULE, ascii=True), show_edge=False, pad_edge=False, padding=(0, 1, 0, 0),
                 header_style="bold" if styled else "", highlight=False)
    for h in headers:
        grid.add_column(inert(h), overflow="fold")
    for row in rows:
        grid.add_row(*(Text(c) for c in row))  # Text: a value is never read as markup
    if width is None and not terminal:  # piped: wide enough for every value on one line
        width = sum(max([cell_len(h)] + [cell_len(r[i]) for r in rows]) + 2 for i, h in enumerate(headers))
    console = Console(file=sys.stdout, width=width, highlight=False, emoji=False, markup=False,
                      force_terminal=styled or None, no_color=not styled or None, soft_wrap=False)
    with console.capture() as out:
        console.print(grid)
    lines = out.get().rstrip("\n").split("\n")
    text = "\n".join(re.sub(r" +((?:\x1b\[[0-9;]*m)*)$", r"\1", line) for line in lines)
    return Inert(text) if styled else inert(text)


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
    if data.get("via"):
        lines.append(f"via: {data['via']} (received through a subscription: read-only here)")
    if data.get("superseded_by"):
        newer = data["superseded_by"]
        lines.append(f"superseded by {newer['id']}@v{newer['version']} (archived): it was replaced, and its "
                     "replacement is archived: neither is current" if newer.get("archived")
                     else f"superseded by {newer['id']}@v{newer['version']}: prefer it")
    if data.get("tags"):
        lines.append("tags: " + ", ".join(data["tags"]))
    if data.get("links"):
        lines.append("links: " + ", ".join(data["links"]))
    for src in data.get("sources") or []:
        where = src["path"] + (f"#L{src['lines'][0]}-L{src['lines'][1]}" if src.get("lines") else "")
        lines.append(f"source: {src.get('repo') or ''}:{where}" + (f"@{src['commit']}" if src.get("commit") else ""))
    if (data.get("details") or {}).get("applies_to"):
        lines.append("applies to: " + ", ".join(data["details"]["applies_to"]))
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

"""Plain-text rendering of core results for the terminal (JSON goes out as-is)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any, Iterable


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def age(ts: datetime | None, now: datetime | None = None) -> str:
    from ..service.browse import age as _age

    return _age(ts, now or datetime.utcnow())


def table(headers: list[str], rows: Iterable[list[str]], *, max_width: int = 60) -> str:
    rows = [[str(c) if c is not None else "" for c in row] for row in rows]
    rows = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


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
    details = data.get("details") or {}
    for key, label in (("dont", "Don't"), ("why", "Why"), ("instead", "Instead")):
        if details.get(key):
            lines.append(f"{label}: {details[key]}")
    lines += ["", data["body"]]
    return "\n".join(lines)

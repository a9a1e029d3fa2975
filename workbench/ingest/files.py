"""Fragment files: markdown with YAML front matter, parsed, validated and rendered.

``parse_fragment`` turns file text into a ``ParsedFragment`` or raises a
``ValidationError`` naming the file, the field and the problem.
``render_fragment`` writes the inverse, so export → ingest is a round trip.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..errors import ValidationError
from ..models import ANTIPATTERN_FIELDS, Content, Fragment, Scope, Source
from ..schemas import plain_yaml, validate

FENCE = "---"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_ORDER = ("id", "kind", "title", "scope", "owner", "status", "tags", "links", "supersedes", "sources",
          "created", "updated", "verified", *ANTIPATTERN_FIELDS)


@dataclass(frozen=True)
class ParsedFragment:
    id: str
    content: Content
    created: datetime | None
    updated: datetime | None
    verified: datetime | None
    file: str


def split_front_matter(text: str, *, file: str) -> tuple[str, str, int]:
    """Return (front matter, body, line number where the front matter starts)."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip() != FENCE:
        raise ValidationError("no YAML front matter (the file must start with a '---' line)", file=file)
    for i in range(1, len(lines)):
        if lines[i].rstrip() == FENCE:
            return "".join(lines[1:i]), "".join(lines[i + 1:]), 2
    raise ValidationError("front matter is not closed by a '---' line", file=file)


def load_front_matter(front: str, *, file: str, first_line: int = 2) -> dict[str, Any]:
    try:
        data = yaml.load(front, Loader=_LOADER)  # noqa: S506 - a safe loader (libyaml's when present)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + first_line}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or "parse error"
        raise ValidationError(f"malformed YAML ({where}{problem})", file=file) from e
    if not isinstance(data, dict):
        raise ValidationError("front matter must be a YAML mapping", file=file)
    return plain_yaml(data)


def parse_timestamp(value: str | None) -> datetime | None:
    """ISO date or datetime → naive UTC datetime."""
    if value is None:
        return None
    text = value.strip().replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(timezone.utc).replace(tzinfo=None)
    return parsed


def content_from_data(data: dict[str, Any], body: str, *, file: str) -> Content:
    """Build versioned content from validated front matter and a body."""
    kind = data["kind"]
    body = normalise_body(body)
    if not body and kind != "anti-pattern":
        raise ValidationError("is empty", file=file, field="body")
    details = {k: data[k] for k in ANTIPATTERN_FIELDS if k in data}
    return Content.from_dict({
        "kind": kind, "title": data["title"].strip(), "body": body, "scope": data["scope"],
        "owner": data["owner"], "status": data.get("status", "active"), "tags": data.get("tags", []),
        "links": data.get("links", []), "supersedes": data.get("supersedes", []),
        "sources": data.get("sources", []), "details": details,
    })


def parse_fragment(text: str, *, file: str, default_id: str | None = None) -> ParsedFragment:
    front, body, first_line = split_front_matter(text, file=file)
    data = load_front_matter(front, file=file, first_line=first_line)
    if default_id is not None:
        data.setdefault("id", default_id)
    validate("fragment", data, file=file)
    try:
        created, updated, verified = (parse_timestamp(data.get(k)) for k in ("created", "updated", "verified"))
    except ValueError as e:
        raise ValidationError(f"bad timestamp ({e})", file=file) from e
    if created and updated and updated < created:
        raise ValidationError("is earlier than created", file=file, field="updated")
    return ParsedFragment(id=data["id"], content=content_from_data(data, body, file=file),
                          created=created, updated=updated, verified=verified, file=file)


def normalise_body(body: str) -> str:
    """Bodies are stored without leading blank lines or trailing whitespace."""
    return body.strip("\n").rstrip()


def _ts(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


def front_matter_data(fragment_id: str, content: Content, *, created: datetime | None = None,
                      updated: datetime | None = None, verified: datetime | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": fragment_id, "kind": content.kind, "title": content.title,
        "scope": {k: v for k, v in content.scope.to_dict().items() if v is not None},
        "owner": content.owner, "status": content.status,
        "tags": list(content.tags), "links": list(content.links), "supersedes": list(content.supersedes),
        "sources": [s.to_dict() for s in content.sources],
        "created": _ts(created), "updated": _ts(updated), "verified": _ts(verified),
    }
    data.update({k: (list(v) if isinstance(v, tuple) else v) for k, v in content.details})
    for key in ("tags", "links", "supersedes", "sources"):
        if not data[key]:
            del data[key]
    return {k: data[k] for k in _ORDER if data.get(k) is not None}


def render(fragment_id: str, content: Content, **timestamps: datetime | None) -> str:
    """Render a fragment file (front matter + body)."""
    front = yaml.safe_dump(front_matter_data(fragment_id, content, **timestamps), sort_keys=False,
                           allow_unicode=True, width=100, default_flow_style=None)
    body = content.body
    return f"{FENCE}\n{front}{FENCE}\n" + (f"\n{body}\n" if body else "")


def render_fragment(fragment: Fragment) -> str:
    return render(fragment.id, fragment.content, created=fragment.created_at, updated=fragment.updated_at,
                  verified=fragment.verified_at)


def collect(paths: Iterable[str | Path]) -> tuple[list[Path], list[dict[str, str]]]:
    """Expand files and folders into fragment files (*.md, hidden folders skipped)."""
    found: list[Path] = []
    errors: list[dict[str, str]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.md")
                                if not any(part.startswith(".") for part in p.relative_to(path).parts)))
        elif path.is_file():
            found.append(path)
        else:
            errors.append({"file": str(path), "message": "no such file or folder"})
    return found, errors


__all__ = ["ParsedFragment", "parse_fragment", "render", "render_fragment", "collect", "Scope", "Source"]

"""Fragment files: markdown with YAML front matter, parsed, validated and rendered.

``parse_fragment`` turns file text into a ``ParsedFragment`` or raises a
``ValidationError`` naming the file, the field and the problem.
``render_fragment`` writes the inverse, so export → ingest is a round trip.
``collect`` expands folders into files. Files come from anyone (a shared folder,
a cloned repo), so everything here treats them as hostile: front matter goes
through ``safeyaml``, ids are safe slugs (exports turn them into file names),
timestamps are real dates in the past, and symlinks out of the ingested folder,
special files and oversized files are per-file errors, never read.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

import yaml

from .. import safeyaml
from ..errors import ValidationError
from ..models import ANTIPATTERN_FIELDS, ARCHIVE_FIELDS, PATH_FIELDS, PROPOSAL_FIELDS, Content, Fragment, Scope, Source, TextFile
from ..schemas import plain_yaml, shown, validate
from .schema_check import accepts

FENCE = "---"
MAX_FILE_BYTES = 1024 * 1024         # a fragment file; larger ones are refused without being read
MAX_FRONT_MATTER_BYTES = 64 * 1024   # real front matter is well under 4 KiB
MAX_FRONT_MATTER_NODES = 5_000
FUTURE_SLACK = timedelta(days=1)     # clock skew; later dates would boost freshness forever
TIMESTAMP_FIELDS = ("created", "updated", "verified")
ID_RULE = "1-128 characters of a-z, 0-9, '.', '_', '-', starting with a letter or digit, no '..'"
_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,127}")
_TIMESTAMP = re.compile(r"(\d{4,5})-(\d{2})-(\d{2})"
                        r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?)?")
_ORDER = ("id", "kind", "title", "scope", "owner", "status", "tags", "links", "supersedes", "sources",
          "created", "updated", "verified", *PATH_FIELDS, *ANTIPATTERN_FIELDS, *PROPOSAL_FIELDS, *ARCHIVE_FIELDS)


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
    data = safeyaml.load(front, file=file, first_line=first_line, max_bytes=MAX_FRONT_MATTER_BYTES,
                         max_nodes=MAX_FRONT_MATTER_NODES)
    if not isinstance(data, dict):
        raise ValidationError("front matter must be a YAML mapping", file=file)
    return plain_yaml(data)


def check_fragment_id(value: str, *, file: str | None = None) -> str:
    """Return ``value`` if it is a safe fragment id (never a path), else raise ValidationError.
    The one rule for front matter, bundles and the CLI (the schema's ``$defs/id`` says the same)."""
    if not isinstance(value, str):
        raise ValidationError(f"expected string, got {type(value).__name__} {shown(value)}", file=file, field="id")
    if not _ID.fullmatch(value) or ".." in value:
        size = f" ({len(value)} characters)" if len(value) > 128 else ""
        raise ValidationError(f"{shown(value)}{size} has the wrong form (expected a safe id: {ID_RULE})",
                              file=file, field="id")
    return value


def check_timestamp(field: str, value: Any, *, file: str | None = None,
                    now: datetime | None = None) -> datetime | None:
    """A front-matter timestamp → naive UTC datetime, or ValidationError naming ``field``:
    YYYY-MM-DD or an ISO datetime (Z, an offset, or none for UTC), a real date in
    1970..9999, not more than a day after ``now`` (default: the real clock)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"expected a date like 2025-06-03, got {type(value).__name__} {shown(value)}",
                              file=file, field=field)
    m = _TIMESTAMP.fullmatch(value.strip())
    if m is None:
        raise ValidationError(f"{shown(value)} is not a date (expected YYYY-MM-DD or an ISO datetime "
                              "like 2025-06-03T10:00:00Z)", file=file, field=field)
    text = m.group(0)
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not 1970 <= year <= 9999:
        raise ValidationError(f"{text} is outside the years 1970..9999", file=file, field=field)
    try:
        date(year, month, day)
    except ValueError:
        raise ValidationError(f"{text} is not a real date", file=file, field=field) from None
    try:
        parsed = parse_timestamp(text)
    except (ValueError, OverflowError):
        raise ValidationError(f"{text} is not a real date and time", file=file, field=field) from None
    now = now or datetime.now(timezone.utc)
    if now.tzinfo is not None:
        now = now.astimezone(timezone.utc).replace(tzinfo=None)
    if parsed > now + FUTURE_SLACK:
        raise ValidationError(f"{text} is in the future", file=file, field=field)
    return parsed


def parse_timestamp(value: str | None) -> datetime | None:
    """ISO date or datetime → naive UTC datetime (ValueError or OverflowError if it is not one)."""
    if value is None:
        return None
    text = value.strip().replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    text = re.sub(r"(\.\d{6})\d+", r"\1", text)  # fromisoformat takes at most microseconds
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
    details = {k: data[k] for k in (*PATH_FIELDS, *ANTIPATTERN_FIELDS, *PROPOSAL_FIELDS, *ARCHIVE_FIELDS) if k in data}
    return Content.from_dict({
        "kind": kind, "title": data["title"].strip(), "body": body, "scope": data["scope"],
        "owner": data["owner"], "status": data.get("status", "active"), "tags": data.get("tags", []),
        "links": data.get("links", []), "supersedes": data.get("supersedes", []),
        "sources": data.get("sources", []), "details": details,
    })


def check_applies_to(globs: Any, *, file: str | None = None) -> None:
    """``applies_to`` globs (None: not given) checked by the matching rule's grammar
    (rank/paths.py), or ValidationError naming the file, the field and the bad glob."""
    if globs is None:
        return
    from ..rank.paths import GLOB_RULE, glob_problem

    for glob in globs if isinstance(globs, (list, tuple)) else [globs]:
        problem = glob_problem(glob)
        if problem:
            raise ValidationError(f"bad glob {problem} ({GLOB_RULE})", file=file, field="applies_to")


def parse_fragment(text: str, *, file: str, default_id: str | None = None,
                   now: datetime | None = None) -> ParsedFragment:
    """Parse and validate one fragment file's text; ``now`` (naive UTC) bounds future timestamps."""
    front, body, first_line = split_front_matter(text, file=file)
    data = load_front_matter(front, file=file, first_line=first_line)
    if default_id is not None:
        data.setdefault("id", default_id)
    if "id" in data:
        check_fragment_id(data["id"], file=file)
    created, updated, verified = (check_timestamp(k, data.get(k), file=file, now=now) for k in TIMESTAMP_FIELDS)
    if accepts("fragment", data) is not True:  # certainly valid needs no jsonschema pass (schema_check.py)
        validate("fragment", data, file=file)
    check_applies_to(data.get("applies_to"), file=file)
    for later, stamp in (("updated", updated), ("verified", verified)):
        if created and stamp and stamp < created:
            raise ValidationError("is earlier than created", file=file, field=later)
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
    for key in ("tags", "links", "supersedes", "sources", "applies_to"):
        if key in data and not data[key]:
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


def collect(paths: Iterable[str | Path | TextFile], *, max_bytes: int = MAX_FILE_BYTES
            ) -> tuple[list[Path | TextFile], list[dict[str, str]]]:
    """Expand files and folders into fragment files (*.md; hidden files and folders skipped).

    Inside a folder, a symlink (file or folder, at any depth) that resolves outside that
    folder, a broken or looping symlink, a special file (a FIFO would block the reader)
    and a file over ``max_bytes`` are per-file errors and are skipped. Symlinked folders
    that stay inside are not followed (their files are found by their real paths, so no
    loop and no file twice). A path named directly is trusted as named.
    """
    found: list[Path] = []
    errors: list[dict[str, str]] = []
    for raw in paths:
        if isinstance(raw, TextFile):
            size = len(raw.text.encode("utf-8", "surrogatepass"))
            if size > max_bytes:
                errors.append({"file": raw.name, "message": f"too large ({size} bytes, at most {max_bytes})"})
            else:
                found.append(raw)
            continue
        path = Path(raw)
        if path.is_dir():
            files, problems = _walk(path, max_bytes)
            found.extend(files)
            errors.extend(problems)
        elif path.exists():
            problem = _file_problem(os.stat(path), max_bytes)
            if problem:
                errors.append({"file": str(path), "message": problem})
            else:
                found.append(path)
        elif path.is_symlink():
            errors.append({"file": str(path), "message": "broken symlink (or a symlink loop)"})
        else:
            errors.append({"file": str(path), "message": "no such file or folder"})
    return found, errors


def read_capped(path: str | Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """A file's bytes, re-checked on the open handle (a file swapped for a FIFO or grown since
    ``collect`` is refused, never read whole or blocked on); ValidationError names the file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        raise ValidationError(f"cannot read: {e.strerror or e}", file=str(path)) from e
    with os.fdopen(fd, "rb") as f:
        problem = _file_problem(os.fstat(fd), max_bytes)
        data = b"" if problem else f.read(max_bytes + 1)
    if not problem and len(data) > max_bytes:
        problem = f"file is too large (more than {max_bytes} bytes)"
    if problem:
        raise ValidationError(problem, file=str(path))
    return data


def _file_problem(st: os.stat_result, max_bytes: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_size > max_bytes:
        return f"file is too large ({st.st_size} bytes, at most {max_bytes})"
    return None


def _inside(target: str, root: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: Path, max_bytes: int) -> tuple[list[Path], list[dict[str, str]]]:
    """Fragment files under ``root`` without following symlinked folders (iterative: no
    recursion limit, no loops)."""
    real_root = os.path.realpath(root)
    found: dict[str, tuple[bool, Path]] = {}  # real path → (reached through a symlink, path)
    errors: list[dict[str, str]] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            errors.append({"file": str(folder), "message": f"cannot read folder: {e.strerror or e}"})
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            is_md = entry.name.endswith(".md")
            try:
                link = entry.is_symlink()
                if not link:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(path)
                        continue
                    if not is_md:
                        continue
                    real = os.path.join(real_root, os.path.relpath(entry.path, root))  # no links on the way
                    st = entry.stat(follow_symlinks=False)
                else:
                    try:
                        real = os.path.realpath(entry.path, strict=True)
                        st = os.stat(real)
                    except (OSError, RuntimeError):
                        if is_md:
                            errors.append({"file": str(path), "message": "broken symlink (or a symlink loop)"})
                        continue
                    if not (is_md or stat.S_ISDIR(st.st_mode)):
                        continue
                    if not _inside(real, real_root):
                        errors.append({"file": str(path), "message": f"symlink points outside {root}"})
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        continue  # inside: its files are reached by their real paths
            except OSError as e:
                errors.append({"file": str(path), "message": f"cannot read: {e.strerror or e}"})
                continue
            problem = _file_problem(st, max_bytes)
            if problem:
                errors.append({"file": str(path), "message": problem})
            elif real not in found or (found[real][0] and not link):
                found[real] = (link, path)
    return sorted(path for _, path in found.values()), errors


__all__ = ["ParsedFragment", "parse_fragment", "check_fragment_id", "check_timestamp", "render", "render_fragment",
           "collect", "read_capped", "MAX_FILE_BYTES", "Scope", "Source"]

"""Import fragment files into the store.

All files are read and validated first; every valid one is then written in a
single transaction, so an ingest is all-or-nothing on disk (a bad file is
reported and skipped, a crash leaves the previous state). Re-ingesting an
unchanged file changes nothing; a changed file appends a version.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

from ..config import WorkspaceConfig
from ..errors import SecretFound, ValidationError, WorkbenchError
from ..models import IngestReport
from ..store import Store
from ..store.store import VersionWrite, utcnow
from .files import ParsedFragment, collect, parse_fragment
from .secrets import scan

Progress = Callable[[str, int, int], None]
WRITE_CHUNK = 500


def check_semantics(parsed: ParsedFragment, config: WorkspaceConfig) -> None:
    """Rules the JSON schema cannot express: known owner, declared scope, owner in scope."""
    content = parsed.content
    problem = config.check_scope(content.scope)
    if problem:
        raise ValidationError(problem, file=parsed.file, field="scope")
    owner = config.principals.get(content.owner)
    if owner is None:
        raise ValidationError(f"unknown owner {content.owner!r} (not a principal in workbench.yaml)",
                              file=parsed.file, field="owner")
    if not owner.can_see(content.scope, owner=content.owner):
        raise ValidationError(f"owner {content.owner!r} is not a member of scope {content.scope}",
                              file=parsed.file, field="owner")


def guard_secrets(text: str, *, file: str, allow: bool, overrides: list[dict[str, str]],
                  first_line: int = 1) -> None:
    """Refuse text holding a credential, naming the file and line, unless ``allow``: then
    the override is collected (the caller records it)."""
    findings = scan(text)
    if not findings:
        return
    where = "; ".join(f"line {f.line + first_line - 1}: {f.kind}" for f in findings[:3])
    if not allow:
        raise SecretFound(f"{file}: contains a credential ({where}); nothing stored "
                          "(remove it, or pass --allow-secret to store it anyway)")
    overrides.append({"file": file, "findings": where})


def read_files(paths: Iterable[str | Path], config: WorkspaceConfig, report: IngestReport,
               known_files: dict[str, tuple[str, str, str]] | None = None,
               current: dict[str, tuple] | None = None, *, allow_secret: bool = False,
               overrides: list[dict[str, str]] | None = None
               ) -> tuple[list[ParsedFragment], list[tuple[str, str, str, str]]]:
    """Parse and validate every file. A file whose bytes match what was ingested from the same
    path, for a fragment still at that content, is reported unchanged without parsing."""
    files, missing = collect(paths)
    report.errors.extend(missing)
    parsed: list[ParsedFragment] = []
    seen: dict[str, str] = {}
    file_rows: list[tuple[str, str, str, str]] = []
    known_files = known_files or {}
    current = current or {}
    for path in files:
        name = str(path)
        try:
            raw = path.read_bytes()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            report.errors.append({"file": name, "message": f"cannot read: {e}"})
            continue
        key = str(path.resolve())
        digest = hashlib.sha256(raw).hexdigest()
        cached = known_files.get(key)
        if cached and cached[0] == digest and cached[1] not in seen and \
                current.get(cached[1], ("",))[0] == cached[2]:
            seen[cached[1]] = name
            report.unchanged.append(cached[1])
            continue
        try:
            item = parse_fragment(text, file=name)
            check_semantics(item, config)
            guard_secrets(text, file=name, allow=allow_secret, overrides=overrides if overrides is not None else [])
        except WorkbenchError as e:
            report.errors.append({"file": name, "message": e.message})
            continue
        if item.id in seen:
            report.errors.append({"file": name, "message": f"{name}: id: duplicate id {item.id!r} "
                                                           f"(also in {seen[item.id]})"})
            continue
        seen[item.id] = name
        parsed.append(item)
        file_rows.append((key, digest, item.id, item.content.content_hash()))
    return parsed, file_rows


def plan_writes(items: list, known: dict[str, tuple], report: IngestReport, *, now: datetime,
                actor: str | None, reason: str | None, origin=lambda item: item.file
                ) -> tuple[list[VersionWrite], list[tuple[str, datetime]]]:
    """Versions to append for ``items`` (anything with id, content, created, updated,
    verified and file): new fragments, changed ones; unchanged ones change nothing."""
    writes: list[VersionWrite] = []
    newly_verified: list[tuple[str, datetime]] = []
    for item in items:
        current = known.get(item.id)
        author = actor or item.content.owner
        why = reason or f"ingest {Path(item.file).name}"
        if current is None:
            at = item.updated or now
            writes.append(VersionWrite(item.id, 1, item.content, author, why, at, item.created or at,
                                       item.verified, origin(item)))
            report.added.append(item.id)
        elif current[0] == item.content.content_hash():
            report.unchanged.append(item.id)
            if item.verified and (current[3] is None or item.verified > current[3]):
                newly_verified.append((item.id, item.verified))
        else:
            at = item.updated if item.updated and item.updated > current[2] else now
            writes.append(VersionWrite(item.id, current[1] + 1, item.content, author, why, at, None,
                                       item.verified, origin(item)))
            report.updated.append(item.id)
    return writes, newly_verified


def ingest_files(store: Store, config: WorkspaceConfig, paths: Iterable[str | Path], *,
                 actor: str | None = None, reason: str | None = None,
                 progress: Progress | None = None, allow_secret: bool = False) -> IngestReport:
    report = IngestReport()
    known = store.hashes()
    overrides: list[dict[str, str]] = []
    parsed, file_rows = read_files(paths, config, report, store.ingested_files(), known,
                                   allow_secret=allow_secret, overrides=overrides)
    now = utcnow()
    batch_ids = {p.id for p in parsed}
    all_ids = known.keys() | batch_ids
    for item in parsed:
        dangling = [link for link in (*item.content.links, *item.content.supersedes) if link not in all_ids]
        if dangling:
            report.warnings.append({"file": item.file, "message": f"dangling link(s): {', '.join(dangling)}"})
    writes, newly_verified = plan_writes(parsed, known, report, now=now, actor=actor, reason=reason)
    if not writes and not newly_verified and not file_rows:
        return report
    with store.transaction():
        for start in range(0, len(writes), WRITE_CHUNK):
            store.write_versions(writes[start:start + WRITE_CHUNK])
            if progress:
                progress("write", min(start + WRITE_CHUNK, len(writes)), len(writes))
        for fragment_id, verified in newly_verified:
            store.set_verified(fragment_id, verified)
        store.put_ingested_files(file_rows, now)
        for override in overrides:
            store.add_event("allow-secret", actor=actor, detail=override)
        if not writes:
            return report
        store.add_event("ingest", actor=actor, detail={"added": len(report.added), "updated": len(report.updated),
                                                        "errors": len(report.errors)})
    return report

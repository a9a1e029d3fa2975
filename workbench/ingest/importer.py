"""Import fragment files into the store.

All files are read and validated first; every valid one is then written in a
single transaction, so an ingest is all-or-nothing on disk (a bad file is
reported and skipped, a crash leaves the previous state). Re-ingesting an
unchanged file changes nothing; a changed file appends a version. Every file is a write
like any other: validated, scanned for secrets and authorized by the policy for the actor,
who is the author of every version written (never a field of the file).
"""

from __future__ import annotations

import hashlib
import os
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from .. import policy
from ..config import WorkspaceConfig
from ..errors import SecretFound, ValidationError, WorkbenchError
from ..models import Content, Fragment, IngestReport, Principal, TextFile
from ..store import Store
from ..store.rows import VersionWrite
from ..models import utcnow
from .files import ParsedFragment, check_applies_to, collect, parse_fragment, read_capped
from .secrets import scan, scan_content
from .sync import AHEAD, SAME, UPDATE, conflict_message, verdict

Progress = Callable[[str, int, int], None]
WRITE_CHUNK = 4_000  # versions per bulk write (a progress step); each write joins against the whole table


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
    check_applies_to(content.detail("applies_to"), file=parsed.file)


def guard_secrets(subject: Content | str, *, file: str, allow: bool, overrides: list[dict[str, str]],
                  first_line: int = 1) -> None:
    """Refuse content (every stored text field) or raw text holding a credential, naming the file,
    field and line, unless ``allow``: then the override is collected (the caller records it).
    ``first_line`` is where the body (or the raw text) starts in the file, so lines are the file's."""
    if isinstance(subject, Content):
        findings = scan_content(subject)
        where = "; ".join(f"line {f.line + first_line - 1}: {f.kind}" if f.field == "body"
                          else f"{f.field}: {f.kind}" for f in findings[:3])
    else:
        findings = scan(subject)
        where = "; ".join(f"line {f.line + first_line - 1}: {f.kind}" for f in findings[:3])
    if not findings:
        return
    if not allow:
        raise SecretFound(f"{file}: contains a credential ({where}); nothing stored "
                          "(remove it, or pass --allow-secret to store it anyway)")
    overrides.append({"file": file, "findings": where})


def read_files(paths: Iterable[str | Path], config: WorkspaceConfig, report: IngestReport,
               known_files: dict[str, tuple[str, str, str]] | None = None,
               current: dict[str, tuple] | None = None, *, allow_secret: bool = False,
               overrides: dict[str, list[dict[str, str]]] | None = None, bases: dict[str, str] | None = None
               ) -> tuple[list[ParsedFragment], list[tuple[str, str, str, str]]]:
    """Parse and validate every file. A file whose bytes match what was ingested from the same
    path, for a fragment still at that content and based on it (``bases``), is reported unchanged
    without parsing.
    ``overrides`` collects, per fragment id, the secret-guard overrides (with ``allow_secret``)."""
    files, missing = collect(paths)
    report.errors.extend(missing)
    parsed: list[ParsedFragment] = []
    seen: dict[str, str] = {}
    file_rows: list[tuple[str, str, str, str]] = []
    known_files = known_files or {}
    current = current or {}
    bases = bases or {}
    real_dirs: dict[str, str] = {}
    for path in files:
        given = isinstance(path, TextFile)   # text handed over (stdin): no file to record or compare
        name = path.name if given else str(path)
        try:
            text = path.text if given else read_capped(path).decode("utf-8")
        except WorkbenchError as e:
            report.errors.append({"file": name, "message": e.message})
            continue
        except (OSError, UnicodeDecodeError) as e:
            report.errors.append({"file": name, "message": f"cannot read: {e}"})
            continue
        key = None if given else _real_path(path, real_dirs)
        digest = "" if given else hashlib.sha256(text.encode("utf-8")).hexdigest()
        cached = known_files.get(key) if key else None
        if cached and cached[0] == digest and cached[1] not in seen and \
                current.get(cached[1], ("",))[0] == cached[2] and bases.get(cached[1]) == cached[2]:
            seen[cached[1]] = name
            report.unchanged.append(cached[1])
            continue
        found: list[dict[str, str]] = []
        try:
            item = parse_fragment(text, file=name)
            check_semantics(item, config)
            guard_secrets(item.content, file=name, allow=allow_secret, overrides=found,
                          first_line=_body_line(text, item.content.body))
        except WorkbenchError as e:
            report.errors.append({"file": name, "message": e.message})
            continue
        if item.id in seen:
            report.errors.append({"file": name, "message": f"{name}: id: duplicate id {item.id!r} "
                                                           f"(also in {seen[item.id]})"})
            continue
        seen[item.id] = name
        parsed.append(item)
        if found and overrides is not None:
            overrides[item.id] = found
        if key:
            file_rows.append((key, digest, item.id, item.content.content_hash()))
    return parsed, file_rows


def _real_path(path: Path, real_dirs: dict[str, str]) -> str:
    """``str(path.resolve())``, resolving each folder once: a file that is not a symlink resolves
    to its folder's real path joined with its name."""
    if path.is_symlink():
        return str(path.resolve())
    folder = str(path.parent)
    real = real_dirs.get(folder)
    if real is None:
        real = real_dirs[folder] = str(path.parent.resolve())
    return os.path.join(real, path.name)


def _body_line(text: str, body: str) -> int:
    """The line of ``text`` (a fragment file) where its stored body starts: after the closing
    front-matter fence and the blank lines that ``normalise_body`` strips."""
    lines = text.lstrip("\ufeff").splitlines()
    fence = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if fence is None:
        return 1
    n = fence + 1
    while n < len(lines) and not lines[n].strip():
        n += 1
    return n + 1


def authorizer(actor: Principal, currents: dict[str, Fragment], principals) -> Callable[[Any], str | None]:
    """A check for ``plan_writes``: None when ``actor`` may write the item, else the refusal.
    An id held by a fragment the actor may not see is refused without naming anything about it."""
    def check(item) -> str | None:
        current = currents.get(item.id)
        decision = policy.may_write(actor, current, item.content, principals=principals)
        if decision:
            return None
        return policy.taken_message(item.id) if decision.hidden else decision.message
    return check


def plan_writes(items: list, known: dict[str, tuple], report: IngestReport, *, now: datetime,
                actor: str | None, reason: str | None, origin=lambda item: item.file,
                authorize: Callable[[Any], str | None] | None = None, owner_verifies: bool = True,
                ignored: set[str] | None = None, hashes: dict[str, str] | None = None,
                bases: dict[str, str] | None = None, resolve: str | None = None,
                moved: dict[str, str] | None = None, older: dict[str, frozenset[str]] | None = None
                ) -> tuple[list[VersionWrite], list[tuple[str, datetime]]]:
    """Versions to append for ``items`` (anything with id, content, created, updated,
    verified and file): new fragments, changed ones; unchanged ones change nothing.
    ``actor`` is the author of every version; ``authorize`` (see ``authorizer``) refuses an item
    as a per-file error before anything about it is compared. A later ``verified`` date counts
    as a verification of an existing fragment only when the actor is its owner. ``hashes``: id →
    content hash of items whose hash the caller computed already.

    With ``bases`` (id → sync base, see ingest/sync.py) an existing fragment is written only when
    the file changed since its base and the database did not (or ``resolve`` is "theirs"); a
    database ahead of its file and a conflict are reported (``report.ahead``, ``report.conflicts``)
    and nothing is written. ``moved`` receives id → content hash of each fragment whose base moves
    to its file; ``older``: id → the hashes of earlier versions of fragments without a base. Without
    ``bases`` a changed item always appends a version (bundles)."""
    hashes = hashes or {}
    moved = {} if moved is None else moved
    writes: list[VersionWrite] = []
    newly_verified: list[tuple[str, datetime]] = []
    for item in items:
        if authorize is not None:
            refusal = authorize(item)
            if refusal is not None:
                report.errors.append({"file": item.file, "message": f"{item.file}: {refusal}"})
                continue
        current = known.get(item.id)
        digest = hashes.get(item.id) or item.content.content_hash()
        if current is not None and bases is not None and not _sync_takes(item, digest, current[0], bases, resolve,
                                                                         report, moved, older or {}):
            continue
        author = actor or item.content.owner
        why = reason or f"ingest {Path(item.file).name}"
        verified = item.verified
        if current is not None and verified and (current[3] is None or verified > current[3]) \
                and owner_verifies and actor is not None and actor != item.content.owner:
            report.warnings.append({"file": item.file, "message": f"verified date ignored: only the owner "
                                                                  f"({item.content.owner}) may verify {item.id}"})
            verified = None
            if ignored is not None:
                ignored.add(item.id)
        if current is None:
            at = item.updated or now
            writes.append(VersionWrite(item.id, 1, item.content, author, why, at, item.created or at,
                                       verified, origin(item), digest))
            report.added.append(item.id)
        elif current[0] == digest:
            report.unchanged.append(item.id)
            if verified and (current[3] is None or verified > current[3]):
                newly_verified.append((item.id, verified))
        else:
            at = item.updated if item.updated and item.updated > current[2] else now
            writes.append(VersionWrite(item.id, current[1] + 1, item.content, author, why, at, None,
                                       verified, origin(item), digest))
            report.updated.append(item.id)
        moved[item.id] = digest
    return writes, newly_verified


def _sync_takes(item, digest: str, db_hash: str, bases: dict[str, str], resolve: str | None,
                report: IngestReport, moved: dict[str, str], older: dict[str, frozenset[str]]) -> bool:
    """True when ``item`` (an existing fragment's file) is to be taken as usual (same or a file-only
    change, or the file wins by ``--theirs``); else it is reported ahead or in conflict (or the
    database wins by ``--ours``: its base moves to the file) and nothing is written."""
    base = bases.get(item.id)
    found = verdict(digest, db_hash, base, older.get(item.id, frozenset()))
    if found in (SAME, UPDATE):
        return True
    where = {"id": item.id, "file": item.file}
    if resolve == "theirs":
        report.resolved.append({**where, "winner": "file"})
        return True
    if found == AHEAD:
        report.ahead.append(where)
    elif resolve == "ours":
        report.resolved.append({**where, "winner": "database"})
        moved[item.id] = digest
    else:
        report.conflicts.append({**where, "message": conflict_message(item.file, item.id)})
    return False


def visible_ids(store: Store, actor: Principal, ids: Iterable[str]) -> set[str]:
    """The ids among ``ids`` that name fragments ``actor`` may see (for link warnings that must not
    reveal fragments outside the actor's scope)."""
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    return {f.id for f in store.fragments(ids=wanted) if policy.sees(actor, f)}


def ingest_files(store: Store, config: WorkspaceConfig, paths: Iterable[str | Path], *,
                 actor: Principal, reason: str | None = None,
                 progress: Progress | None = None, allow_secret: bool = False,
                 dry_run: bool = False, written: list[VersionWrite] | None = None,
                 resolve: str | None = None) -> IngestReport:
    """Import the fragment files under ``paths`` as ``actor`` in one transaction (see the module
    docstring), in step with each fragment's sync base (ingest/sync.py; ``resolve``: "theirs" or
    "ours" settles conflicts). ``written`` receives the versions written, once they are committed."""
    report = IngestReport()
    known = store.hashes()
    bases = store.sync_bases()
    overrides: dict[str, list[dict[str, str]]] = {}
    parsed, file_rows = read_files(paths, config, report, store.ingested_files(), known,
                                   allow_secret=allow_secret, overrides=overrides, bases=bases)
    now = utcnow()
    currents = {f.id: f for f in store.fragments(ids=[p.id for p in parsed if p.id in known])}
    unverified: set[str] = set()
    moved: dict[str, str] = {}
    hashes = {row[2]: row[3] for row in file_rows}
    taken = {p.id: hashes.get(p.id) or p.content.content_hash() for p in parsed}   # stdin has no file row
    older = {p.id: frozenset(v.content_hash for v in store.versions(p.id)) for p in parsed  # rare: no base
             if p.id in known and p.id not in bases and known[p.id][0] != taken[p.id]}
    writes, newly_verified = plan_writes(parsed, known, report, now=now, actor=actor.name, reason=reason,
                                         authorize=authorizer(actor, currents, config.principals),
                                         ignored=unverified, hashes=hashes, bases=bases, resolve=resolve,
                                         moved=moved, older=older)
    refused = {e["file"] for e in report.errors}
    held = {c["id"] for c in report.conflicts}  # a conflicted file is not taken: its ingested row stays
    kept = {a["id"] for a in report.ahead} | {r["id"] for r in report.resolved if r["winner"] == "database"}
    accepted = [p for p in parsed if p.file not in refused]
    batch_ids = {p.id for p in accepted}
    targets = {link for item in accepted for link in (*item.content.links, *item.content.supersedes)}
    linkable = batch_ids | visible_ids(store, actor, targets - batch_ids)
    for item in accepted:
        if item.id in held or item.id in kept:
            continue  # not written: its links are the database's
        dangling = [link for link in (*item.content.links, *item.content.supersedes) if link not in linkable]
        if dangling:
            report.warnings.append({"file": item.file, "message": f"dangling link(s): {', '.join(dangling)}"})
    # a file is remembered as ingested only when all of it took effect (an ignored verified date did not)
    base_rows = [(row[2], moved[row[2]], row[0]) for row in file_rows if row[2] in batch_ids and row[2] in moved]
    file_rows = [row for row in file_rows if row[2] in batch_ids and row[2] not in unverified and row[2] not in held]
    report.dry_run = dry_run
    if dry_run or (not writes and not newly_verified and not file_rows and not base_rows):
        return report
    numbers = {w.fragment_id: w.number for w in writes}
    with store.transaction():
        for start in range(0, len(writes), WRITE_CHUNK):
            store.write_versions(writes[start:start + WRITE_CHUNK])
            if progress:
                progress("write", min(start + WRITE_CHUNK, len(writes)), len(writes))
        for fragment_id, verified in newly_verified:
            store.set_verified(fragment_id, verified)
        store.put_ingested_files(file_rows, now)
        store.put_sync_bases(base_rows, now)
        for fragment_id, found in sorted(overrides.items()):
            if fragment_id in numbers:
                store.put_secret_override(fragment_id, numbers[fragment_id], actor.name, now, found)
        if not writes and not report.resolved:
            return report
        won = [r["winner"] for r in report.resolved]  # a conflict settled by --theirs / --ours is on record
        store.add_event("ingest", actor=actor.name, detail={"added": len(report.added),
                                                             "updated": len(report.updated),
                                                             "errors": len(report.errors),
                                                             **({"resolved": {"file": won.count("file"),
                                                                              "database": won.count("database")}}
                                                                if won else {})})
    if written is not None:
        written.extend(writes)
    return report

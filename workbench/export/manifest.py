"""Exports that own their files: a manifest in ``out``, and re-exports that replace and prune.

Agent context files and fragment files are re-exported into the same folder, often a
repository root full of other people's files. ``write_export`` records each export in
``out/.workbench-export.json``: per kind of export, its metadata and every file it wrote
with its sha256. A re-export of a kind replaces its files and removes the ones it no longer
writes, without ``force``. A file in the way that workbench did not write (or that changed
since it wrote it, or that another kind of export wrote) is refused unless ``force``; every
other file in ``out`` is never looked at. The manifest is data in a folder anyone may write:
a malformed one is refused, and no path it names is followed out of ``out``.

Containment is ``export.writer``'s, checked before the first byte; a new or empty ``out``
appears at once through ``write_tree``. Otherwise the commit writes the manifest first, marked
as in progress (it names the old and the new content of every file, so a killed run is
recognised by the next one), then each file, then the pruning, then the final manifest; any
failure, Ctrl-C included, puts every file back as it was.

Like the writer, this module knows nothing about fragments or formats.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from .writer import (STAGING_MARK, Files, Progress, _check_target, _inside, _make_durable, _make_staging, _plan,
                     _write_file, _write_staged, path_problem, remove_abandoned, write_tree)

MANIFEST = ".workbench-export.json"
MANIFEST_VERSION = 1
_MANIFEST_MAX_BYTES = 64 * 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Written:
    """What ``write_export`` did, as paths relative to ``out``: ``files`` in commit order (the
    manifest last), ``pruned`` the files of the previous export of the same kind it removed."""

    files: list[str]
    pruned: list[str]

    @property
    def manifest(self) -> str:
        return MANIFEST


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha(path: Path) -> str | None:
    """The sha256 of a regular file (never through a symlink), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _bad_manifest(out: Path, why: str) -> UserError:
    return UserError(f"{out / MANIFEST} is not a workbench export manifest ({why}): remove it, or use --force "
                     "to replace it; nothing was written")


def _check_entry(entry: Any) -> str | None:
    """Why an export recorded in a manifest is malformed, or None. ``files`` maps each path to its
    sha256; ``previous`` (only while an export is in progress) maps paths to the sha256s they may
    still have from before it."""
    if not isinstance(entry, dict):
        return "an export is not an object"
    for key in ("files", "previous"):
        files = entry.get(key, {})
        if not isinstance(files, dict):
            return f"{key!r} is not an object"
        for relative, digest in files.items():
            problem = path_problem(relative)
            if problem or relative == MANIFEST:
                return f"{relative!r}: {problem or 'the manifest itself'}"
            digests = digest if key == "previous" and isinstance(digest, list) else [digest]
            if not all(isinstance(d, str) and _SHA256.fullmatch(d) for d in digests):
                return f"{relative!r}: not a sha256"
    return None


def read_manifest(out: Path, *, force: bool = False) -> dict[str, dict[str, Any]]:
    """The exports recorded in ``out`` ({kind: entry}); {} when there is no manifest. A manifest
    that is not one (a symlink, unreadable, malformed, or naming a path outside ``out``) is refused,
    or with ``force`` ignored (and then replaced)."""
    path = Path(out) / MANIFEST
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UserError(f"cannot read {path}: {e.strerror or e}") from e
    try:
        if not stat.S_ISREG(info.st_mode):
            raise _bad_manifest(out, "not a regular file")
        if info.st_size > _MANIFEST_MAX_BYTES:
            raise _bad_manifest(out, "too large")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
        with os.fdopen(fd, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
        if not isinstance(data, dict) or data.get("manifest") != MANIFEST_VERSION:
            raise _bad_manifest(out, f"not manifest version {MANIFEST_VERSION}")
        exports = data.get("exports")
        if not isinstance(exports, dict):
            raise _bad_manifest(out, "no exports")
        for kind, entry in exports.items():
            problem = _check_entry(entry)
            if problem:
                raise _bad_manifest(out, f"{kind}: {problem}")
        return exports
    except UserError:
        if force:
            return {}
        raise
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        if force:
            return {}
        raise _bad_manifest(out, type(e).__name__) from e


def check_export_folder(out: Path, *, force: bool = False) -> None:
    """The checks that need no file list, so a refusal costs nothing: ``out`` is a folder or does
    not exist, and its manifest (if any) is one."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is not a folder")
    if out.is_dir():
        read_manifest(out, force=force)


def _manifest_text(exports: dict[str, dict[str, Any]]) -> bytes:
    data = {"manifest": MANIFEST_VERSION, "generator": "workbench", "exports": exports}
    return (json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _plan_export(base: Path, out: Path, plan: list[tuple[str, bytes]], kind: str, force: bool,
                 known: dict[str, str] | None = None
                 ) -> tuple[dict[str, dict[str, Any]], list[str], dict[str, list[str]]]:
    """Check every file against what is there, before the first byte: (the exports recorded, the
    paths to prune, {path: [sha256]} of what may be there now from earlier exports). ``known``:
    {path: sha256} of files the caller knows it may replace as they are (see ``write_export``)."""
    exports = read_manifest(base, force=force)
    entry = exports.get(kind, {})
    known = known or {}
    accepted: dict[str, set[str]] = {}
    for relative, digests in entry.get("previous", {}).items():
        accepted.setdefault(relative, set()).update(digests if isinstance(digests, list) else [digests])
    for relative, digest in entry.get("files", {}).items():
        accepted.setdefault(relative, set()).add(digest)
    others = {p: (k, e["files"][p]) for k, e in exports.items() if k != kind for p in e.get("files", {})}
    problems: list[str] = []
    for relative, _ in plan:
        _check_target(base, relative)
        target = base / relative
        if not os.path.lexists(target):
            continue
        current = _file_sha(target)
        if current is not None and current == known.get(relative):
            accepted.setdefault(relative, set()).add(current)  # recorded as "previous" while the export runs
        if current is not None and current in accepted.get(relative, ()):
            continue
        if relative in known:
            why = "changed since it was last ingested (ingest it first; a conflict is settled by ingest --theirs " \
                  "or --ours)"
        elif relative in accepted:
            why = "changed since workbench wrote it"
        elif relative in others:
            why = f"written by the {others[relative][0]} export"
            if current == others[relative][1]:  # with force, this export takes it over
                accepted[relative] = {current}
        else:
            why = "not written by workbench"
        problems.append(f"refusing to overwrite {relative!r} in {out}: {why} (use --force to replace it)")
    names = {relative for relative, _ in plan}
    prune = []
    for relative in sorted(set(accepted) - names):
        target = base / relative
        try:
            parent = target.parent.resolve()
        except (OSError, RuntimeError):
            continue
        if not _inside(parent, base) or not os.path.lexists(target) or (target.is_dir() and not target.is_symlink()):
            continue  # gone, or no longer a file of ours: forget it, touch nothing
        if _file_sha(target) not in accepted[relative]:
            problems.append(f"refusing to remove {relative!r} from {out}: changed since workbench wrote it "
                            "(use --force to remove it)")
        prune.append(relative)
    if problems and not force:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UserError(f"{problems[0]}{more}; nothing was written")
    return exports, prune, {relative: sorted(digests) for relative, digests in accepted.items()}


def _keep(target: Path, backup: Path) -> None:
    """A copy of ``target`` (a hard link where it can be) to put back if the export fails."""
    backup.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError:
        shutil.copy2(target, backup, follow_symlinks=False)


def _put_back(backup: Path, target: Path) -> None:
    try:
        os.replace(backup, target)
    except OSError:  # another filesystem: copy next to it, then replace
        temp = target.with_name(f".{target.name}{STAGING_MARK}{secrets.token_hex(4)}")
        shutil.copy2(backup, temp, follow_symlinks=False)
        os.replace(temp, target)


def write_export(out: Path, files: Files, *, kind: str, meta: dict[str, Any] | None = None, force: bool = False,
                 progress: Progress | None = None, stage: str = "export", known: dict[str, str] | None = None
                 ) -> Written:
    """Write an export of ``kind`` into ``out`` and record it in ``out/.workbench-export.json``
    (per kind: ``meta``, and each file with its sha256).

    A re-export of the same kind replaces its files and removes those it no longer writes, with
    no ``force``. Files it did not write are never touched: a file in the way that workbench did
    not write (or that changed since it wrote it, or that another kind of export wrote) is refused
    unless ``force``; other files in ``out`` do not matter, so ``out`` may be a repository root.
    ``known`` ({path: sha256}) names files workbench did not write that it may replace while they
    hold exactly that content (fragment files as an ingest took them: nothing in them is lost).
    Containment as in ``write_tree``, checked before the first byte. A new or empty ``out``
    appears at once; otherwise files are replaced one by one, the manifest first marked as in
    progress and committed last, and any failure puts back every file as it was.
    """
    out = Path(out)
    plan = _plan(files)
    if any(relative == MANIFEST for relative, _ in plan):
        raise UserError(f"refusing to export {MANIFEST!r}: the name is reserved for the manifest; nothing was written")
    meta = dict(meta or {})
    if {"files", "previous"} & set(meta):
        raise ValueError("meta may not hold 'files' or 'previous'")
    try:
        check_export_folder(out, force=force)
        base = out.resolve()
        fresh = not base.is_dir() or not any(base.iterdir())
        exports, prune, before = ({}, [], {}) if fresh else _plan_export(base, out, plan, kind, force, known)
    except (OSError, RuntimeError) as e:
        raise UserError(f"cannot write to {out}: {getattr(e, 'strerror', None) or e}") from e
    entry = {**meta, "format": kind, "files": {relative: _sha(data) for relative, data in plan}}
    recorded = {k: {**e, "files": {p: d for p, d in e.get("files", {}).items() if p not in entry["files"]}}
                for k, e in exports.items() if k != kind}  # a file taken over (with force) is this kind's now
    final = _manifest_text({**recorded, kind: entry})
    if fresh:
        write_tree(out, [*plan, (MANIFEST, final)], progress=progress, stage=stage)
        return Written([relative for relative, _ in plan] + [MANIFEST], [])
    pending = _manifest_text({**recorded, kind: {**entry, "previous": before}})
    try:
        base.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned(base)
        staging, lock = _make_staging(base)
    except OSError as e:
        raise UserError(f"cannot write to {out}: {e.strerror or e}") from e
    try:
        new = staging / "new"
        new.mkdir()
        _write_file(staging / "pending", pending)
        _write_staged(new, [*plan, (MANIFEST, final)], progress, stage)
        _make_durable(staging, [staging / "pending"], {staging})
        _commit(base, staging, plan, prune)
    except FileExistsError as e:
        name = os.path.relpath(e.filename, staging) if e.filename else "a file"
        raise UserError(f"refusing to export {name!r}: two files map to the same name on this "
                        "filesystem; nothing was written") from e
    except OSError as e:
        raise UserError(f"cannot write to {out}: {e.strerror or e}; the previous export is as it was") from e
    finally:
        os.close(lock)
        if os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    return Written([relative for relative, _ in plan] + [MANIFEST], prune)


def _commit(base: Path, staging: Path, plan: list[tuple[str, bytes]], prune: list[str]) -> None:
    """Move the staged files into ``base``: the manifest marked in progress first (it names the old
    and the new content of every file, so a killed run is recognised by the next one), then each
    file, then the pruning, then the final manifest. Any failure (Ctrl-C included) puts it all back."""
    new, old = staging / "new", staging / "old"
    undo: list[tuple[str, Path, bool]] = []  # (action, path, had a previous file)
    made: list[Path] = []
    manifest = base / MANIFEST
    try:
        for relative in (MANIFEST, *(r for r, _ in plan)):
            _check_target(base, relative)  # again, right before the first move
        had = os.path.lexists(manifest)
        if had:
            _keep(manifest, old / MANIFEST)
        undo.append(("manifest", manifest, had))
        os.replace(staging / "pending", manifest)
        touched = {base}
        for relative, _ in plan:
            target = base / relative
            _check_target(base, relative)
            for folder in reversed([p for p in target.parents if _inside(p, base) and p != base]):
                if not folder.exists():
                    folder.mkdir()
                    made.append(folder)
            if not _inside(target.parent.resolve(), base):
                raise UserError(f"refusing to export {relative!r}: its folder resolves outside {base}")
            had = os.path.lexists(target)
            if had:
                _keep(target, old / relative)
            undo.append(("file", target, had))
            os.replace(new / relative, target)
            touched.add(target.parent)
        for relative in prune:
            target = base / relative
            if not _inside(target.parent.resolve(), base):
                continue
            _keep(target, old / relative)
            undo.append(("file", target, True))
            os.unlink(target)
            touched.add(target.parent)
        os.replace(new / MANIFEST, manifest)
        _make_durable(base, [], touched)
    except BaseException:
        for action, target, had in reversed(undo):
            try:
                backup = old / (MANIFEST if action == "manifest" else os.path.relpath(target, base))
                if had:
                    _put_back(backup, target)
                elif os.path.lexists(target):
                    os.unlink(target)
            except OSError:
                pass
        for folder in reversed(made):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    for relative in prune:  # folders the pruning emptied (never base itself)
        folder = (base / relative).parent
        while folder != base and _inside(folder, base):
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent

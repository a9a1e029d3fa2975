"""The one way an export puts files on disk: contained in ``out``, and all-or-nothing.

Every export (fragment files, bundles, agent context files) names files after data —
fragment ids, org and repo names — so a hostile or old workspace could ask for
``../../x`` or ``/etc/x``. ``write_tree`` checks every relative path before the first
byte is written and refuses the whole export if one would land outside ``out``
(through ``..``, an absolute path, or a symlink already inside ``out``).

It is also atomic: files go into a hidden staging folder next to ``out`` (same
filesystem), are fsynced, then appear at once — one rename when ``out`` is new or
empty; with ``force`` into a non-empty folder, one ``os.replace`` per file, in the
order given (so a caller puts its commit file last). A killed export leaves ``out``
as it was plus at most a staging folder, which the next export next to ``out``
removes. A live export holds an ``flock`` on its staging folder, so only
abandoned ones are removed.

``export.manifest`` builds on it for exports that are re-run into the same folder and own
their files (agent context files, fragment files).

This module knows nothing about fragments or formats; it must stay free of them.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import UserError

Files = dict[str, str | bytes] | Iterable[tuple[str, str | bytes]]
Progress = Callable[[str, int, int], None]

STAGING_MARK = ".workbench-partial-"
_NAME_MAX = 255


def path_problem(relative: str) -> str | None:
    """Why ``relative`` may not be written under an export folder, or None if it may."""
    if not isinstance(relative, str):
        return "not a string"
    if relative == "":
        return "empty path"
    if any(ord(c) < 32 or ord(c) == 127 for c in relative):
        return "control character in path"
    if "\\" in relative:
        return "backslash in path"
    if relative.startswith("/"):
        return "absolute path"
    for part in relative.split("/"):
        if part == "":
            return "empty path component"
        if part in (".", ".."):
            return f"'{part}' path component"
        if len(part.encode("utf-8", "surrogateescape")) > _NAME_MAX:
            return "file name too long"
    return None


def check_folder(out: Path, *, force: bool) -> None:
    """The folder rules: ``out`` is a folder or does not exist; a non-empty one needs ``force``."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UserError(f"{out} is not empty (use --force to write into it)")


def _plan(files: Files) -> list[tuple[str, bytes]]:
    items = list(files.items()) if isinstance(files, dict) else list(files)
    plan: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for relative, data in items:
        problem = path_problem(relative)
        if problem:
            raise UserError(f"refusing to export {relative!r}: {problem}; nothing was written")
        if relative in seen:
            raise UserError(f"refusing to export {relative!r}: two files with the same name; nothing was written")
        seen.add(relative)
        plan.append((relative, data.encode("utf-8") if isinstance(data, str) else bytes(data)))
    for relative, _ in plan:  # "a" as a file and "a/b" under it cannot both exist
        parts = relative.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in seen:
                raise UserError(f"refusing to export {relative!r}: {prefix!r} is also a file; nothing was written")
    return plan


def _inside(path: Path, base: Path) -> bool:
    return path == base or path.is_relative_to(base)


def _check_target(base: Path, relative: str) -> None:
    """``base / relative`` must resolve inside ``base`` through any symlinks already there, and must
    not be an existing folder or sit below an existing file."""
    target = base / relative
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise UserError(f"refusing to export {relative!r}: {e}; nothing was written") from e
    if not _inside(resolved, base):
        raise UserError(f"refusing to export {relative!r}: it would resolve to {resolved}, outside {base} "
                        "(a symlink in the folder points out of it); nothing was written")
    if target.is_dir():
        raise UserError(f"refusing to export {relative!r}: a folder of that name exists in {base}; "
                        "nothing was written")
    parent = target.parent
    while parent != base:
        if parent.exists() and not parent.is_dir():
            raise UserError(f"refusing to export {relative!r}: {parent} is a file; nothing was written")
        parent = parent.parent


def _is_cwd(path: Path) -> bool:
    try:
        return Path.cwd().resolve() == path
    except OSError:
        return False


def _staging_prefix(base: Path) -> str:
    return f".{base.name[:100]}{STAGING_MARK}"


def _try_lock(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): treat every staging folder as possibly live
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def remove_abandoned(base: Path) -> list[Path]:
    """Remove staging folders of ``base`` left by killed exports (ours by name, in ``base.parent``,
    real folders, not locked by a live export). Returns what was removed."""
    pattern = re.compile(re.escape(_staging_prefix(base)) + r"[0-9a-f]{16}")
    removed = []
    try:
        entries = list(os.scandir(base.parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            fd = os.open(entry.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            if _try_lock(fd):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
        finally:
            os.close(fd)
    return removed


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _make_staging(base: Path) -> tuple[Path, int]:
    """A fresh staging folder next to ``base`` (mode from the umask, like ``mkdir``), locked."""
    while True:
        staging = base.parent / f"{_staging_prefix(base)}{secrets.token_hex(8)}"
        try:
            os.mkdir(staging)
            break
        except FileExistsError:
            continue
    fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
    _try_lock(fd)
    return staging, fd


def _syncfs(folder: Path) -> bool:
    """Flush the whole filesystem holding ``folder`` in one call (Linux ``syncfs``): thousands of
    per-file fsyncs cost seconds under load (3000 files: 18 s against 0.1 s). False if unavailable."""
    try:
        import ctypes

        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def _make_durable(root: Path, files: list[Path], folders: set[Path]) -> None:
    """Everything written under ``root`` is on disk before it is renamed into place."""
    if _syncfs(root):
        return
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        _fsync_dir(folder)


def _write_file(path: Path, data: bytes) -> None:
    # O_EXCL: two names that one filesystem treats as the same (case-insensitive) fail loudly
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _write_staged(staging: Path, plan: list[tuple[str, bytes]], progress: Progress | None, stage: str) -> None:
    folders = {staging}
    total = len(plan)
    for done, (relative, data) in enumerate(plan, start=1):
        path = staging / relative
        if path.parent not in folders:
            path.parent.mkdir(parents=True, exist_ok=True)
            folders.update(p for p in [path.parent, *path.parent.parents] if _inside(p, staging))
        _write_file(path, data)
        if progress and (done % 50 == 0 or done == total):
            progress(stage, done, total)
    _make_durable(staging, [staging / relative for relative, _ in plan], folders)


def _move_each(staging: Path, base: Path, plan: list[tuple[str, bytes]]) -> None:
    """``force`` into a non-empty folder: one atomic ``os.replace`` per file, in plan order."""
    touched = set()
    for relative, _ in plan:
        _check_target(base, relative)  # again, right before the move
        target = base / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not _inside(target.parent.resolve(), base):
            raise UserError(f"refusing to export {relative!r}: its folder resolves outside {base}")
        os.replace(staging / relative, target)
        touched.add(target.parent)
    _make_durable(base, [], touched)


def write_tree(out: Path, files: Files, *, force: bool = False, progress: Progress | None = None,
               stage: str = "export") -> list[Path]:
    """Write ``files`` ({relative path: text or bytes}, or (path, data) pairs, in commit order) under
    ``out``, all or nothing. Returns ``out / relative`` for each file, in order.

    Refuses (``UserError``, nothing written) a path that is absolute, has an empty, ``.`` or ``..``
    component, a backslash or a control character, or resolves outside ``out`` through a symlink;
    a file ``out`` or a non-empty ``out`` without ``force``. ``out`` may itself be a symlink: files
    then land in (and may not escape) the folder it points to.
    """
    out = Path(out)
    plan = _plan(files)
    try:
        check_folder(out, force=force)
        base = out.resolve()
        existing = base.is_dir() and any(base.iterdir())
        if existing:
            for relative, _ in plan:
                _check_target(base, relative)
        base.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned(base)
        staging, lock = _make_staging(base)
    except (OSError, RuntimeError) as e:  # unreadable, or a symlink loop
        raise UserError(f"cannot write to {out}: {getattr(e, 'strerror', None) or e}") from e
    try:
        try:
            _write_staged(staging, plan, progress, stage)
        except FileExistsError as e:
            name = os.path.relpath(e.filename, staging) if e.filename else "a file"
            raise UserError(f"refusing to export {name!r}: two files map to the same name on this "
                            "filesystem; nothing was written") from e
        placed = False
        if not existing and not _is_cwd(base):  # renaming over the shell's folder would strand it
            try:
                if base.is_dir():  # an empty folder: keep its permissions
                    os.chmod(staging, stat.S_IMODE(base.stat().st_mode))
                os.rename(staging, base)  # one step: the whole tree appears, or none of it
                placed = True
            except OSError:
                check_folder(out, force=force)  # someone wrote there meanwhile, or it is a mount point
                for relative, _ in plan:
                    _check_target(base, relative)
        if placed:
            _fsync_dir(base.parent)
        else:
            _move_each(staging, base, plan)
    except OSError as e:
        raise UserError(f"cannot write to {out}: {e.strerror or e}") from e
    finally:
        os.close(lock)
        if os.path.lexists(staging):
            shutil.rmtree(staging, ignore_errors=True)
    return [out / relative for relative, _ in plan]


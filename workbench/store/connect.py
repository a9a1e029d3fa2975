"""Open a workspace database: decide read-write or read-only, connect, load the shipped
vss and fts extensions by path, and turn lock conflicts into a clear "workspace busy" error.

Extensions are never INSTALLed from the network: the ``duckdb-extension-vss`` and
``duckdb-extension-fts`` packages ship the ``.duckdb_extension`` files, which are
loaded right after connecting (vss must be loaded before a file with an HNSW
index is touched).

Read-only is decided before connecting, from the file system, because DuckDB alone
cannot tell: root (as in CI) opens and writes a 0444 file, and in a folder without a
write bit DuckDB opens a writable file read-write and fails only at the first COMMIT
(it must create ``workbench.duckdb.wal`` next to the file). So the workspace is
read-only when no one may write the file or its folder (mode bits), when this user
may not (``os.access``), or on a read-only file system; and, as a last resort, when
DuckDB's read-write open fails with a permission or read-only file system error. This
module decides and opens; it must not run migrations or queries.

Checkpoints: DuckDB checkpoints on close by default, and a checkpoint after any change to a
large table rewrites that table's last row group: at 100k fragments, one edit and a close
cost 1.3 s and 850 MB. So a writable connection does not checkpoint on close; the
write-ahead log carries the change (fsynced at commit, replayed at the next open, read by
read-only opens) and DuckDB checkpoints when it passes ``CHECKPOINT_THRESHOLD`` (a replay of
a 4 MB log costs ~0.1 s on open).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import time
from pathlib import Path

from ..errors import ReadOnly, StoreError, WorkspaceBusy

EXTENSIONS = ("vss", "fts")
CHECKPOINT_THRESHOLD = "4MB"
CHECKPOINT_BYTES = 4 * 1000 * 1000  # DuckDB's MB are 1000²
CHECKPOINT_BUSY_BYTES = 64 * 1000 * 1000  # the team server under load: Store.checkpoint_if_due
# How long an open waits for another process to let the workspace go (WORKBENCH_LOCK_TIMEOUT overrides):
# DuckDB lets one process at a time hold a writable file, so without a server two CLI commands on one
# workspace take turns; a read takes well under a second, so 30 s makes readers queue, not fail.
LOCK_WAIT_S = 30.0
# DuckDB's read-write open failing for one of these reasons means "open it read-only instead"
_READ_ONLY_ERRORS = {"read-only file system": "read-only file system",
                     "permission denied": "the operating system denied write access"}


def extension_path(name: str) -> Path:
    import duckdb

    module = importlib.import_module(f"duckdb_extension_{name}")
    folder = Path(module.__file__).resolve().parent / "extensions"
    exact = folder / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if exact.is_file():
        return exact
    found = sorted(folder.glob(f"*/{name}.duckdb_extension"))
    if not found:
        raise StoreError(f"the {name} extension file is missing from duckdb-extension-{name}; reinstall it")
    raise StoreError(f"duckdb {duckdb.__version__} cannot load {found[-1]}: pin duckdb to the extension's version")


def _wording(error: Exception, path: Path) -> str:
    """DuckDB's message without the file name, lower-cased: match its words, never the path
    (a workspace may live in a folder called "blocks" or "permission denied")."""
    text = str(error)
    for name in {str(path), str(Path(path).resolve())}:
        text = text.replace(name, "")
    return text.lower()


def read_only_message(where: Path, why: str, what: str = "write") -> str:
    """The one wording of the read-only error (exit 2)."""
    return f"workspace is read-only: {where} ({why}; cannot {what})"


def writable_problem(path: Path) -> tuple[Path, str] | None:
    """Why the database at ``path`` cannot be written, as (the path to blame, the reason),
    or None when it can. Mode bits count even for root: a file or folder with no write bit
    for anyone is read-only on purpose."""
    folder = path.parent
    statvfs = getattr(os, "statvfs", None)
    try:
        if statvfs is not None and statvfs(folder).f_flag & os.ST_RDONLY:
            return path, "read-only file system"
    except OSError:
        pass
    wal = path.with_name(path.name + ".wal")
    for target, what in ((path, "database file"), (wal, "write-ahead log")):
        try:
            mode = target.stat().st_mode & 0o777
        except OSError:
            continue  # a missing file is created in the folder (checked below)
        if not mode & 0o222:
            return target, f"the {what} has mode {mode:04o}, no write permission"
        if not os.access(target, os.W_OK):
            return target, f"this user may not write the {what}"
    try:
        mode = folder.stat().st_mode & 0o777
    except OSError:
        return None  # no folder: connecting reports it
    wal_note = f"DuckDB must create {wal.name} there to write"
    if not mode & 0o222:
        return folder, f"the workspace folder has mode {mode:04o}, no write permission; {wal_note}"
    if not os.access(folder, os.W_OK):
        return folder, f"this user may not write the workspace folder; {wal_note}"
    return None


def open_database(path: Path, *, read_only: bool | None = None, lock_timeout: float | None = None
                  ) -> tuple[object, tuple[Path, str] | None]:
    """Connect to ``path``; returns (connection, None) when it is writable, else (a read-only
    connection, (path to blame, reason)). ``read_only``: None decides from the file system,
    True always opens read-only, False insists on writing (a read-only workspace raises ``ReadOnly``)."""
    import duckdb

    if read_only:
        return connect(path, read_only=True, lock_timeout=lock_timeout), (path, "opened read-only")
    problem = writable_problem(path)
    if problem is None:
        try:
            return connect(path, lock_timeout=lock_timeout, _raw_errors=True), None
        except duckdb.Error as e:
            why = next((reason for needle, reason in _READ_ONLY_ERRORS.items() if needle in _wording(e, path)), None)
            if why is None:
                raise StoreError(f"cannot open {path}: {e}") from e
            problem = (path, why)
    if read_only is False:
        raise ReadOnly(read_only_message(*problem))
    if not path.exists():
        raise ReadOnly(read_only_message(problem[0], problem[1], "create the database"))
    return connect(path, read_only=True, lock_timeout=lock_timeout), problem


def keep_private(path: Path, *, log_only: bool = False) -> None:
    """Narrow the database file, its write-ahead log and DuckDB's spill folder to this user (0600,
    0700): DuckDB creates them with the process's umask (commonly 0644), the log again at the first
    commit after every checkpoint, so a writer calls this on connecting and after each commit
    (``log_only``: one ``stat``). Modes are only ever narrowed, never widened; what this user may not
    change is left as it is. The workspace folder itself is made 0700 by ``Workbench.init``."""
    wal = path.with_name(path.name + ".wal")
    targets = ((wal, 0o600),) if log_only else ((path, 0o600), (wal, 0o600), (path.with_name(path.name + ".tmp"), 0o700))
    for target, mode in targets:
        try:
            current = os.stat(target).st_mode & 0o777
            if current & ~mode:
                os.chmod(target, current & mode)
        except OSError:
            continue  # not there (no log since the last checkpoint), or not this user's to change


def release_request_path(path: Path) -> Path:
    """The file another process touches to ask the holder of ``path`` to let go when idle."""
    return path.with_name(path.name + ".release-request")


def ask_release(path: Path) -> None:
    try:
        release_request_path(path).touch()
    except OSError:
        pass  # a read-only folder: the holder's own idle timer is the only way


def release_requested(path: Path) -> bool:
    return release_request_path(path).exists()


def clear_release_request(path: Path) -> None:
    try:
        release_request_path(path).unlink()
    except OSError:
        pass


def _no_pandas_search() -> None:
    """DuckDB's Python client tries ``import pandas`` for every bound parameter (to recognise a
    DataFrame). Without pandas installed each attempt searches sys.path on disk under the
    import lock: ~0.1 ms, 14 times a search, and the team server's threads queue on that lock
    (7 % of its busy time under load). Marking pandas absent once makes the attempt a
    dictionary lookup. Only when pandas is not installed: where it is, the first import
    caches it and nothing changes (installing it into a running process then needs a restart)."""
    import sys

    if "pandas" not in sys.modules and importlib.util.find_spec("pandas") is None:
        sys.modules["pandas"] = None  # type: ignore[assignment]


def lock_wait() -> float:
    """Seconds an open waits for the workspace: ``WORKBENCH_LOCK_TIMEOUT``, else ``LOCK_WAIT_S``."""
    value = os.environ.get("WORKBENCH_LOCK_TIMEOUT")
    try:
        return max(0.0, float(value)) if value else LOCK_WAIT_S
    except ValueError:
        return LOCK_WAIT_S


def connect(path: Path, *, read_only: bool = False, lock_timeout: float | None = None, _raw_errors: bool = False):
    """Connect to ``path`` with vss and fts loaded. Waits up to ``lock_timeout`` seconds
    (default ``WORKBENCH_LOCK_TIMEOUT`` or ``LOCK_WAIT_S``) for another process to let go."""
    import duckdb

    _no_pandas_search()

    if lock_timeout is None:
        lock_timeout = lock_wait()
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
            if not read_only:
                config["checkpoint_threshold"] = CHECKPOINT_THRESHOLD
            con = duckdb.connect(str(path), read_only=read_only, config=config)
            break
        except duckdb.IOException as e:
            message = _wording(e, path)
            if "could not set lock" not in message and "conflicting lock" not in message:
                if _raw_errors:
                    raise
                raise StoreError(f"cannot open {path}: {e}") from e
            ask_release(path)  # a long-running face (the TUI) holding it idle lets go when asked
            if time.monotonic() >= deadline:
                raise WorkspaceBusy(f"workspace busy: another workbench process is using {path.parent} "
                                    f"(waited {lock_timeout:g} s; try again when it finishes, or wait longer "
                                    "with WORKBENCH_LOCK_TIMEOUT=SECONDS)") from e
            time.sleep(0.1)
        except duckdb.Error as e:
            if _raw_errors:
                raise
            raise StoreError(f"cannot open {path}: {e}") from e
    try:
        for name in EXTENSIONS:
            con.load_extension(str(extension_path(name)))  # a path, never spliced into SQL text
        if not read_only:
            con.execute("PRAGMA disable_checkpoint_on_shutdown")
    except duckdb.Error as e:
        con.close()
        raise StoreError(f"cannot load DuckDB extensions: {e}") from e
    return con

"""Open a workspace database: connect, load the shipped vss and fts extensions by
path, and turn lock conflicts into a clear "workspace busy" error.

Extensions are never INSTALLed from the network: the ``duckdb-extension-vss`` and
``duckdb-extension-fts`` packages ship the ``.duckdb_extension`` files, which are
loaded right after connecting (vss must be loaded before a file with an HNSW
index is touched).
"""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

from ..errors import StoreError, WorkspaceBusy

EXTENSIONS = ("vss", "fts")


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


def connect(path: Path, *, read_only: bool = False, lock_timeout: float | None = None):
    """Connect to ``path`` with vss and fts loaded. Waits up to ``lock_timeout`` seconds
    (default ``WORKBENCH_LOCK_TIMEOUT`` or 2) for another process to let go."""
    import duckdb

    if lock_timeout is None:
        lock_timeout = float(os.environ.get("WORKBENCH_LOCK_TIMEOUT", "2"))
    deadline = time.monotonic() + lock_timeout
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only,
                                 config={"autoinstall_known_extensions": False,
                                         "autoload_known_extensions": False})
            break
        except duckdb.IOException as e:
            if "lock" not in str(e).lower():
                raise StoreError(f"cannot open {path}: {e}") from e
            if time.monotonic() >= deadline:
                raise WorkspaceBusy(f"workspace busy: another workbench process is using {path.parent} "
                                    "(try again when it finishes)") from e
            time.sleep(0.1)
        except duckdb.Error as e:
            raise StoreError(f"cannot open {path}: {e}") from e
    try:
        for name in EXTENSIONS:
            con.load_extension(str(extension_path(name)))  # a path, never spliced into SQL text
    except duckdb.Error as e:
        con.close()
        raise StoreError(f"cannot load DuckDB extensions: {e}") from e
    return con

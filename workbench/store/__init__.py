"""The store: the only place SQL lives.

``open_store`` opens a workspace's data where it lives: the DuckDB file in the workspace folder
(``Store``, the embedded default), or a PostgreSQL database (``pg.PgStore``) when workbench.yaml
names one. Both offer the same typed reads and transactional writes of fragments, versions and
events; nothing above this package knows which one it has.
"""

from __future__ import annotations

from pathlib import Path

from .store import Store

__all__ = ["Store", "open_store"]


def open_store(location: str | Path, root: Path, *, read_only: bool | None = None,
               lock_timeout: float | None = None):
    """The store at ``location``: a ``postgresql://`` URL, else the path of a DuckDB file.
    ``root`` is the workspace folder (where caches derived from a database are kept)."""
    if isinstance(location, str) and location.split("://", 1)[0].lower() in ("postgresql", "postgres"):
        from .pg import PgStore

        return PgStore(location, Path(root), read_only=read_only, lock_timeout=lock_timeout)
    return Store(Path(location), read_only=read_only, lock_timeout=lock_timeout)

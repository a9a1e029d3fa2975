"""The store: the only place SQL lives.

``open_store`` opens a workspace's data where it lives: the DuckDB file in the workspace folder
(``Store``, the embedded default), or a PostgreSQL database (``pg.PgStore``) when workbench.yaml
names one. Both offer the same typed reads and transactional writes of fragments, versions and
events; nothing above this package knows which one it has.
"""

from __future__ import annotations

from pathlib import Path

from .store import Store

__all__ = ["Store", "open_store", "schema_status_at", "migrate_at"]


def _is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.split("://", 1)[0].lower() in ("postgresql", "postgres")


def schema_status_at(location: str | Path, root: Path, *, lock_timeout: float | None = None):
    """What an upgrade would apply to the store at ``location`` (``upgrade.SchemaStatus``), opened
    read-only: nothing is changed."""
    from . import upgrade

    if _is_url(location):
        from .pg import PgStore

        store = PgStore(str(location), Path(root), read_only=True)
        try:
            return store.schema_status()
        finally:
            store.close()
    return upgrade.inspect(Path(location), lock_timeout=lock_timeout)


def migrate_at(location: str | Path, root: Path, *, lock_timeout: float | None = None):
    """Apply the pending migrations to the store at ``location`` after a backup (``upgrade.Upgraded``)."""
    from . import upgrade

    if _is_url(location):
        from .pg import PgStore

        store = PgStore(str(location), Path(root))  # an open upgrades, after a backup
        store.close()
        return store.upgraded
    return upgrade.migrate_database(Path(location), lock_timeout=lock_timeout)


def open_store(location: str | Path, root: Path, *, read_only: bool | None = None,
               lock_timeout: float | None = None):
    """The store at ``location``: a ``postgresql://`` URL, else the path of a DuckDB file.
    ``root`` is the workspace folder (where caches derived from a database are kept)."""
    if _is_url(location):
        from .pg import PgStore

        return PgStore(location, Path(root), read_only=read_only, lock_timeout=lock_timeout)
    return Store(Path(location), read_only=read_only, lock_timeout=lock_timeout)

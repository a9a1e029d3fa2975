"""Schema upgrades as an operator sees them: what is pending (``status``, for ``migrate --check``),
and an upgrade that keeps a backup of the database as it was before any migration runs.

Every writable open of an existing workspace goes through ``upgrade``: a database recording a
migration this code does not know is refused (``migrations.SchemaAhead``: a newer workbench wrote
it); pending migrations are applied after a backup to ``backups/`` in the workspace folder (said
once on stderr, as the open that upgrades is the only one that has anything to say); and the
workspace's identity is mirrored in ``workspace.id`` (see ``workbench.identity``). A new, empty
database is migrated without a backup: there is nothing to keep.

This module decides when to back up and names the files; ``backup`` writes them, ``migrations``
applies the numbered files.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import identity
from . import backup, migrations

BACKUP_DIR = "backups"


@dataclass(frozen=True)
class Pending:
    number: int
    name: str
    read_compatible: bool   # this code can read the database without it (read-only opens still work)

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "name": self.name, "read_compatible": self.read_compatible}


@dataclass(frozen=True)
class SchemaStatus:
    database: Path
    applied: tuple[int, ...]
    pending: tuple[Pending, ...]
    supported: int          # the newest migration this code knows

    @property
    def version(self) -> int:
        return max(self.applied, default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"database": str(self.database), "version": self.version, "supported": self.supported,
                "applied": list(self.applied), "pending": [p.to_dict() for p in self.pending]}


@dataclass(frozen=True)
class Upgraded:
    applied: tuple[Pending, ...]
    backup: Path | None     # the backup taken before, when anything was applied to an existing database


def status(con, database: Path) -> SchemaStatus:
    """What an upgrade of the database behind ``con`` would apply; changes nothing (safe read-only).
    Raises ``migrations.SchemaAhead`` for a schema newer than this code."""
    done = migrations.recorded(con)
    migrations.check_not_ahead(done)
    pending = tuple(Pending(n, name, migrations.read_compatible(path))
                    for n, name, path in migrations.available() if n not in done)
    return SchemaStatus(database, tuple(sorted(done)), pending, migrations.newest())


def upgrade(con, database: Path, *, announce: bool = True) -> Upgraded:
    """Apply the pending migrations to a writable connection, backing the database up first when
    it already holds a schema; then record the workspace's identity beside it."""
    found = status(con, database)
    taken = None
    if found.pending and found.applied:
        taken = backup_path(database, found)
        taken.parent.mkdir(mode=0o700, exist_ok=True)
        backup.write(con, taken, files=backup.workspace_files(database.parent))
        if announce:
            print(f"workbench: upgrading the schema of {database.parent} from {found.version:03d} to "
                  f"{found.supported:03d} ({migrations.describe([(p.number, p.name) for p in found.pending])}); "
                  f"the workspace as it was is backed up in {taken}", file=sys.stderr)
    migrations.migrate(con)
    remember_identity(con, database)
    return Upgraded(found.pending, taken)


def backup_path(database: Path, found: SchemaStatus) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    name = f"before-schema-{found.supported:03d}-from-{found.version:03d}-{stamp}.wbk"
    target = database.parent / BACKUP_DIR / name
    n = 1
    while target.exists():
        n += 1
        target = target.with_name(f"{name[:-4]}-{n}.wbk")
    return target


def remember_identity(con, database: Path) -> str | None:
    """Mirror the database's workspace id in ``workspace.id`` beside it (a cheap read for clients)."""
    rows = con.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchall()
    if rows:
        identity.remember(database.parent, rows[0][0], database=database.name)
    return rows[0][0] if rows else None


def inspect(database: Path, *, lock_timeout: float | None = None) -> SchemaStatus:
    """``status`` of the database file, opened read-only (never migrated); a newer schema raises
    ``SchemaTooNew`` naming the workspace."""
    from ..errors import SchemaTooNew, StoreError
    from .connect import connect

    con = connect(database, read_only=True, lock_timeout=lock_timeout)
    try:
        return status(con, database)
    except migrations.SchemaAhead as e:
        raise SchemaTooNew(f"workspace {database.parent}: {e}") from e
    except Exception as e:
        if type(e).__module__.startswith("duckdb"):
            raise StoreError(f"cannot read the schema of {database}: {e}") from e
        raise
    finally:
        con.close()


def migrate_database(database: Path, *, lock_timeout: float | None = None) -> Upgraded:
    """Apply the pending migrations (a backup first), as ``workbench migrate`` does."""
    from ..errors import SchemaTooNew
    from .connect import keep_private, open_database

    con, _ = open_database(database, read_only=False, lock_timeout=lock_timeout)
    try:
        done = upgrade(con, database, announce=False)
        con.execute("CHECKPOINT")
    except migrations.SchemaAhead as e:
        raise SchemaTooNew(f"workspace {database.parent}: {e}") from e
    finally:
        con.close()
    keep_private(database)
    return done

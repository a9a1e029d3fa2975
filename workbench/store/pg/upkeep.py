"""Keeping a PostgreSQL workspace: its identity, its schema's status, and backups in the portable
format of ``backup_format`` (the same files a DuckDB workspace writes: a PostgreSQL backup
restores into a DuckDB folder with ``restore-backup``, and ``migrate --to`` carries it back).

A backup reads every kept table inside one REPEATABLE READ transaction: one consistent snapshot
while replicas go on writing. Rows are written as JSON lines with the values DuckDB's
``read_json`` loads (timestamps in ISO form, JSON columns as their text, lists as arrays), in the
order DuckDB's ``ORDER BY ALL`` gives (text compares bytewise: the columns are COLLATE "C").
What DuckDB's backup leaves out (derived data) is left out here too, and so is the change log
(replication state, meaningless in another database).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from ... import identity as identities
from .. import backup as common
from .. import migrations, upgrade
from ..backup_format import Manifest, Writer
from . import schema

BACKEND = "postgresql"
SKIPPED = (*common.DERIVED, "changes", "index_snapshot_files")
_PAGE = 5000


def location(dsn: str) -> str:
    """Where a PostgreSQL workspace lives, as its identity names it: host, port and database (every
    folder pointing there is the same workspace)."""
    parts = urlsplit(dsn)
    query = dict(p.split("=", 1) for p in parts.query.split("&") if "=" in p)
    host = parts.hostname or query.get("host", "local")
    return f"postgresql:{host}:{parts.port or query.get('port', 5432)}/{parts.path.lstrip('/')}"


def tables(con) -> list[str]:
    rows = con.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                       "AND table_type = 'BASE TABLE' ORDER BY table_name COLLATE \"C\"").fetchall()
    return [r[0] for r in rows if r[0] not in SKIPPED]


def columns(con, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'public' "
        "AND table_name = %s ORDER BY ordinal_position", [table]).fetchall()]


def dump(con, table: str, cols: list[tuple[str, str]]) -> Iterator[str]:
    """The rows of ``table`` as JSON lines, every column ascending (json compared as its text)."""
    names = [c for c, _ in cols]
    order = ", ".join(f'"{c}"::text' if t in ("json", "jsonb") else f'"{c}"' for c, t in cols)
    where = (" WHERE key NOT IN (" + ", ".join(f"'{k}'" for k in common.DERIVED_META) + ")") if table == "meta" else ""
    cursor = con.cursor(name=f"dump_{table}")  # server-side: a page at a time
    cursor.execute(f'SELECT {", ".join(chr(34) + c + chr(34) for c in names)} FROM "{table}"{where} ORDER BY {order}')
    while rows := cursor.fetchmany(_PAGE):
        for row in rows:
            yield json.dumps(dict(zip(names, (_plain(v) for v in row))), ensure_ascii=False, separators=(",", ":"))
    cursor.close()


def _plain(value):
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def write(con, out: Path, *, files: dict[str, bytes] | None = None) -> Manifest:
    """A backup of the database behind ``con`` (the caller holds one snapshot) to ``out``."""
    writer = Writer(out)
    try:
        for table in tables(con):
            cols = columns(con, table)
            writer.table(table, cols, dump(con, table, cols))
        for name, data in (files or {}).items():
            writer.file(name, data)
        found = con.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchall()
        return writer.finish(backend=BACKEND, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                             workspace_id=found[0][0] if found else None, schema=sorted(schema.recorded(con)))
    except BaseException:
        writer.abort()
        raise


def status(con, database: Path) -> upgrade.SchemaStatus:
    """What an upgrade would apply (``database``: the name caches live under, in the workspace folder)."""
    done = schema.recorded(con)
    migrations.check_not_ahead(done)
    pending = tuple(upgrade.Pending(n, name, migrations.read_compatible(path))
                    for n, name, path in schema.available() if n not in done)
    return upgrade.SchemaStatus(database, tuple(sorted(done)), pending, migrations.newest())


class PgUpkeep:
    # The host class (PgStore) provides dsn, path, _pool, _guard and _q.

    def write_backup(self, out: Path, *, files: dict[str, bytes] | None = None) -> Manifest:
        con = self._pool.get()
        try:
            self._guard(lambda: con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
            try:
                return self._guard(lambda: write(con, out, files=files))
            finally:
                con.execute("ROLLBACK")
        finally:
            self._pool.put(con)

    def schema_status(self) -> upgrade.SchemaStatus:
        con = self._pool.get()
        try:
            return self._guard(lambda: status(con, self.path))
        finally:
            self._pool.put(con)

    def identity(self) -> identities.Identity:
        rows = self._q("SELECT value FROM meta WHERE key = 'workspace_id'")
        return identities.Identity(rows[0][0] if rows else None, location(self.dsn))

    def calibration(self) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = 'calibration'")
        return rows[0][0] if rows and rows[0][0] else None

    def put_calibration(self, data: str | None) -> None:
        with self.transaction("calibrate"):
            self._q("DELETE FROM meta WHERE key = 'calibration'")
            if data is not None:
                self._q("INSERT INTO meta VALUES ('calibration', ?)", [data])

    def _upgrade(self, con) -> None:
        """Apply pending migrations to an existing schema after a backup to the workspace folder's
        ``backups/`` (a new, empty database: none), then mirror the identity in ``workspace.id``."""
        import sys

        found = status(con, self.path)
        taken = None
        if found.pending and found.applied and "meta" in tables(con):
            taken = upgrade.backup_path(self.path, found)
            taken.parent.mkdir(mode=0o700, exist_ok=True)
            con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                write(con, taken, files=common.workspace_files(self.path.parent))
            finally:
                con.execute("ROLLBACK")
            print(f"workbench: upgrading the schema of {self.where} from {found.version:03d} to {found.supported:03d} "
                  f"({migrations.describe([(p.number, p.name) for p in found.pending])}); the workspace as it was "
                  f"is backed up in {taken}", file=sys.stderr)
        schema.migrate(con)
        self.upgraded = upgrade.Upgraded(found.pending, taken)
        rows = con.execute("SELECT value FROM meta WHERE key = 'workspace_id'").fetchall()
        if rows and self.path.parent.is_dir():
            identities.remember(self.path.parent, rows[0][0], location=location(self.dsn))

"""Store methods that keep the workspace: a consistent backup of the open database, what an
upgrade would apply to it, its identity (``workbench.identity``) and its fitted calibration (a
``meta`` row, so backups and ``migrate --to`` carry it). The work is ``backup``'s
and ``upgrade``'s; this mixin gives it the store's connection, its guard and its path."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ..identity import Identity, file_location
from .backup import write
from .backup_format import Manifest
from .upgrade import SchemaStatus, status


class BackupQueries:
    """Store methods: a consistent backup of the open database, and its identity."""

    def write_backup(self, out: Path, *, files: dict[str, bytes] | None = None) -> Manifest:
        """Back the database up to ``out`` from one snapshot (a read transaction on this thread's
        cursor: the team server goes on writing meanwhile)."""
        import duckdb

        con = self.con
        self._guard(lambda: con.execute("BEGIN TRANSACTION"))
        try:
            return self._guard(lambda: write(con, out, files=files))
        finally:
            with contextlib.suppress(duckdb.Error):
                con.execute("ROLLBACK")  # a read: nothing to undo, the snapshot ends

    def schema_status(self) -> SchemaStatus:
        """What an upgrade would apply to this open database (``upgrade.SchemaStatus``)."""
        return self._guard(lambda: status(self.con, self.path))

    def identity(self) -> Identity:
        """This workspace's identity (``workbench.identity.Identity``): its id, stored in the
        database, and the location of the file this store holds."""
        rows = self._q("SELECT value FROM meta WHERE key = 'workspace_id'") if "meta" in self._tables() else []
        return Identity(rows[0][0] if rows else None, file_location(self.path) or f"file:{self.path.resolve()}")

    def calibration(self) -> str | None:
        """The workspace's fitted confidence calibration (JSON text, ``rank.calibration``), or None."""
        rows = self._q("SELECT value FROM meta WHERE key = 'calibration'")
        return rows[0][0] if rows and rows[0][0] else None

    def put_calibration(self, data: str | None) -> None:
        """Store (or, with None, remove) the workspace's calibration."""
        with self.transaction("calibrate"):
            self._q("DELETE FROM meta WHERE key = 'calibration'")
            if data is not None:
                self._q("INSERT INTO meta VALUES ('calibration', ?)", [data])

    def _tables(self) -> set[str]:
        return {r[0] for r in self._q("SELECT table_name FROM duckdb_tables() WHERE database_name = "
                                      "current_database() AND schema_name = 'main'")}


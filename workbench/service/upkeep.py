"""Keeping a workspace: its schema (what an upgrade would apply; the upgrade, with a backup first),
backups and restores in the portable backup format, and reloading workbench.yaml in a running
server. The store does the work (``store.upgrade``, ``store.backup``); this module resolves the
workspace, asks the policy who may take a backup, and shapes the answers. It renders nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from typing import Any

from .. import policy
from ..config import CONFIG_NAME, DB_NAME, WorkspaceConfig, resolve_workspace
from ..errors import PermissionDenied, UserError, WorkspaceMissing
from ..models import Principal
from ..store import backup as backups
from ..store import upgrade
from .workspace import Workspace

SUFFIX = ".wbk"


@dataclass(frozen=True)
class BackupReport:
    path: Path
    size: int
    schema: int
    workspace_id: str | None
    tables: dict[str, int]   # table -> rows

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "bytes": self.size, "schema": self.schema,
                "workspace_id": self.workspace_id, "tables": self.tables}


@dataclass(frozen=True)
class RestoreReport:
    workspace: Path
    backup: Path
    schema_from: int
    schema_to: int
    workspace_id: str | None
    tables: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"workspace": str(self.workspace), "backup": str(self.backup), "schema_from": self.schema_from,
                "schema_to": self.schema_to, "workspace_id": self.workspace_id, "tables": self.tables}


def _database(path: str | Path | None) -> Path:
    root = resolve_workspace(path)
    if not (root / CONFIG_NAME).is_file() or not (root / DB_NAME).is_file():
        raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first, "
                               "or pass --workspace DIR / set WORKBENCH_HOME)")
    return root / DB_NAME


def schema_status(path: str | Path | None = None, *, lock_timeout: float | None = None) -> upgrade.SchemaStatus:
    """What ``migrate`` would apply to the workspace at ``path``; changes nothing."""
    return upgrade.inspect(_database(path), lock_timeout=lock_timeout)


def migrate(path: str | Path | None = None, *, lock_timeout: float | None = None) -> upgrade.Upgraded:
    """Apply the pending migrations to the workspace at ``path``, after a backup to its ``backups/``."""
    return upgrade.migrate_database(_database(path), lock_timeout=lock_timeout)


def backup(ws: Workspace, out: str | Path, *, force: bool = False,
           actor: str | Principal | None = None) -> BackupReport:
    """Write a consistent backup of the open workspace to ``out`` (a folder: a dated file in it).
    It holds everything (token hashes, every scope's fragments): the local administrator's and an
    admin's to take (``policy.sees_workspace_totals``)."""
    who = None if actor is None else ws.principal(actor)
    if not policy.sees_workspace_totals(who):
        raise PermissionDenied("a backup holds the whole workspace: only an admin (or the local administrator) "
                               "may take one")
    target = Path(out).expanduser()
    if target.is_dir():
        from datetime import datetime

        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = target / f"{ws.config.name}-{stamp}{SUFFIX}"
    if target.exists() and not force:
        raise UserError(f"{target} already exists (use --force to replace it)", param="force")
    if not target.parent.is_dir():
        raise UserError(f"cannot write {target}: no folder {target.parent}", param="out")
    try:
        manifest = ws.store.write_backup(target, files=backups.workspace_files(ws.root))
    except OSError as e:
        raise UserError(f"cannot write {target}: {e.strerror or e}", param="out") from e
    return BackupReport(target, target.stat().st_size, max(manifest.schema, default=0), manifest.workspace_id,
                        {name: entry.rows for name, entry in manifest.tables.items()})


def restore_backup(file: str | Path, path: str | Path | None = None, *, force: bool = False,
                   lock_timeout: float | None = None) -> RestoreReport:
    """Rebuild a workspace at ``path`` from the backup ``file``, verified by its hashes. A folder that
    holds a workspace is replaced only with ``force`` (and never while another process holds it)."""
    source = Path(file).expanduser()
    if not source.is_file():
        raise UserError(f"no backup at {source}", param="file")
    root = resolve_workspace(path)
    database = root / DB_NAME
    if not force and ((root / CONFIG_NAME).exists() or database.exists()):
        raise UserError(f"{root} already holds a workspace (use --force to replace it with the backup)",
                        param="force")
    made = not root.exists()
    root.mkdir(parents=True, exist_ok=True)
    if made:
        root.chmod(0o700)
    restored, reader = backups.restore(source, database, lock_timeout=lock_timeout)
    try:
        for name in restored.manifest.files:  # workbench.yaml, a golden set: names checked by the reader
            (root / name).write_bytes(reader.file(name))
    finally:
        reader.close()
    if restored.manifest.workspace_id:
        from .. import identity

        identity.remember(root, restored.manifest.workspace_id, database=DB_NAME)
    return RestoreReport(root, source, restored.schema_from, restored.schema_to, restored.manifest.workspace_id,
                         {name: entry.rows for name, entry in restored.manifest.tables.items()})


def reload_config(ws: Workspace) -> dict[str, Any]:
    """Read workbench.yaml again and use it from the next call on (a new principal is known, its
    token accepted; a removed one's refused). A file that does not load raises and changes nothing.
    The embedder and the server's bound address are not reloaded (a restart changes them)."""
    fresh = WorkspaceConfig.load(ws.root / CONFIG_NAME)
    before = set(ws.config.principals)
    ws.config = fresh
    return {"principals": len(fresh.principals), "added": sorted(set(fresh.principals) - before),
            "removed": sorted(before - set(fresh.principals))}

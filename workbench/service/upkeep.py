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
from ..store import migrate_at, schema_status_at, upgrade
from ..userpath import expand_user
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


def _database(path: str | Path | None) -> tuple[Path, str | Path]:
    """(the workspace folder, where its data lives: the store URL of its workbench.yaml, else its DuckDB file)."""
    root = resolve_workspace(path)
    if (root / CONFIG_NAME).is_file():
        found = WorkspaceConfig.load(root / CONFIG_NAME).store
        if found is not None:
            return root, found
    if not (root / CONFIG_NAME).is_file() or not (root / DB_NAME).is_file():
        raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first, "
                               "or pass --workspace DIR / set WORKBENCH_HOME)")
    return root, root / DB_NAME


def schema_status(path: str | Path | None = None, *, lock_timeout: float | None = None) -> upgrade.SchemaStatus:
    """What ``migrate`` would apply to the workspace at ``path``; changes nothing."""
    root, location = _database(path)
    return schema_status_at(location, root, lock_timeout=lock_timeout)


def migrate(path: str | Path | None = None, *, lock_timeout: float | None = None) -> upgrade.Upgraded:
    """Apply the pending migrations to the workspace at ``path``, after a backup to its ``backups/``."""
    root, location = _database(path)
    return migrate_at(location, root, lock_timeout=lock_timeout)


def backup(ws: Workspace, out: str | Path, *, force: bool = False,
           actor: str | Principal | None = None) -> BackupReport:
    """Write a consistent backup of the open workspace to ``out`` (a folder: a dated file in it).
    It holds everything (token hashes, every scope's fragments): the local administrator's and an
    admin's to take (``policy.sees_workspace_totals``)."""
    who = None if actor is None else ws.principal(actor)
    if not policy.sees_workspace_totals(who):
        raise PermissionDenied("a backup holds the whole workspace: only an admin (or the local administrator) "
                               "may take one")
    target = expand_user(out)
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
    source = expand_user(file)
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


def set_store(config: Path, url: str | None) -> None:
    """Name ``url`` as the workspace's store in its workbench.yaml (None: no store line, the folder's
    DuckDB file). Naming a different store than the one already named is refused."""
    import json
    import re

    text = config.read_text(encoding="utf-8")
    found = WorkspaceConfig.load(config).store
    if url is None:
        config.write_text(re.sub(r"(?m)^store:.*\n?", "", text), encoding="utf-8")
        return
    if found == url:
        return
    if found is not None:
        raise UserError(f"{config} already names a store ({found}): edit it there, or leave out --store")
    config.write_text(text.rstrip("\n") + f"\nstore: {json.dumps(url)}\n", encoding="utf-8")


def migrate_to(ws: Workspace, target: str, *, actor: str | Principal | None = None) -> dict[str, Any]:
    """Move the open workspace's data to ``target``: a PostgreSQL URL (then its workbench.yaml names
    it), or a folder for a new DuckDB workspace (a copy; this one is left as it is). Verified table
    by table (rows and content); embeddings copied too. Re-run after an interruption: see
    ``store.transfer``."""
    import tempfile

    from ..config import check_store
    from ..store import open_store, transfer
    from ..store.backup_format import Reader

    who = None if actor is None else ws.principal(actor)
    if not policy.sees_workspace_totals(who):
        raise PermissionDenied("moving a workspace moves all of it: only an admin (or the local administrator) may")
    is_url = "://" in target
    if is_url:
        check_store(target, file="--to")
        if ws.config.store == target:
            raise UserError(f"the workspace is already in {target}")
    with tempfile.TemporaryDirectory(prefix="workbench-move-") as tmp:
        archive = Path(tmp) / "move.wbk"
        ws.store.write_backup(archive, files=backups.workspace_files(ws.root))
        with Reader(archive) as reader:
            reader.verify()
            if is_url:
                store = open_store(target, ws.root)
                try:
                    moved = transfer.into_postgresql(reader, store)
                    moved.embeddings = transfer.copy_embeddings(ws.store, store)
                finally:
                    store.close()
                set_store(ws.root / CONFIG_NAME, target)
                return {**moved.to_dict(), "workspace": str(ws.root)}
            want = transfer.table_digests(reader)
        folder = resolve_workspace(target)
        restored = restore_backup(archive, folder)
        set_store(folder / CONFIG_NAME, None)
        copy = open_store(folder / DB_NAME, folder)
        try:
            check = Path(tmp) / "check.wbk"
            copy.write_backup(check)
            with Reader(check) as again:
                found = transfer.table_digests(again)
            if {t: v for t, v in found.items() if t in want} != want:
                raise UserError(f"the copy in {folder} does not read back as the source: remove it and run again")
            embedded = transfer.copy_embeddings(ws.store, copy)
        finally:
            copy.close()
        return {"target": str(folder), "tables": restored.tables, "embeddings": embedded, "already_there": False,
                "workspace": str(folder)}

"""Commands that keep a workspace: ``migrate`` (with ``--check``, what an upgrade would apply),
``backup`` and ``restore-backup``.

``migrate`` and ``backup`` go to the team server when one holds the workspace (its open
workspace is current, and a backup is read there, from one snapshot, while it serves);
``restore-backup`` makes a workspace and always runs here. ``restore`` (no suffix) is the
older command that brings an archived fragment back.
"""

from __future__ import annotations

import sys

import click

from .options import as_option, command, json_option, workspace
from .render import emit_json


def _upkeep_target():
    """The team server's open workspace when the command runs in it, else None."""
    from .remote import SERVED

    served = SERVED.get()
    return served.wb if served is not None else None


@command("migrate", "Upgrade the workspace's schema to this workbench's, after a backup of it as it was; "
         "--check only says what would change (exit 1 when something would, 0 when nothing).",
         "workbench migrate --check\nworkbench migrate --check --json\nworkbench migrate\n"
         "workbench migrate --to postgresql://kb@db.internal/kb")
@click.option("--check", is_flag=True, help="change nothing: list the pending migrations and whether each is "
              "read-compatible (older files stay readable read-only); exit 1 when any is pending")
@click.option("--to", "target", metavar="URL|DIR", help="move the workspace's data to this PostgreSQL database "
              "(postgresql://USER@HOST/DB, empty; workbench.yaml then names it), or copy it into a new DuckDB "
              "workspace folder; verified table by table, history, traces, pins, sets, tokens, proposals and "
              "embeddings included; safe to run again after an interruption")
@json_option()
def migrate(check, target, as_json):
    from ..service import Workbench

    if target is not None:
        return _migrate_to(target, check, as_json)
    served = _upkeep_target()
    if check or served is not None:  # a served workspace was upgraded when the server opened it
        status = served.schema_status() if served is not None else Workbench.schema_at(workspace())
        data = {**status.to_dict(), "applied_now": [], "backup": None}
    else:
        status = Workbench.schema_at(workspace())
        done = Workbench.migrate(workspace())
        data = {**status.to_dict(), "applied_now": [p.to_dict() for p in done.applied],
                "backup": str(done.backup) if done.backup else None}
    pending = data["pending"] if check else []
    if as_json:
        emit_json(data)
    else:
        print(f"workspace {status.database.parent}: schema {status.version:03d}, this workbench {status.supported:03d}")
        for item in data["pending"] if check else data["applied_now"]:
            compatible = "read-compatible" if item["read_compatible"] else "not read-compatible: reads need it"
            print(f"  {'pending' if check else 'applied'} {item['number']:03d}_{item['name']} ({compatible})")
        if check:
            print(f"{len(pending)} migration(s) pending: `workbench migrate` applies them after a backup"
                  if pending else "nothing to migrate")
        elif data["applied_now"]:
            print(f"backup of the workspace as it was: {data['backup']}")
        else:
            print("nothing to migrate")
    return 1 if pending else 0


def _migrate_to(target: str, check: bool, as_json: bool) -> int:
    from ..errors import UserError
    from .options import open_workbench

    if check:
        raise UserError("--check and --to go separately: --check says what an upgrade would apply")
    if _upkeep_target() is not None:
        raise UserError("stop the team server first: a workspace moves while nothing writes to it")
    with open_workbench() as wb:
        report = wb.migrate_to(target)
    if as_json:
        emit_json(report)
    else:
        rows = sum(report["tables"].values())
        verb = "already held" if report["already_there"] else "now holds"
        print(f"{report['target']} {verb} the workspace: {len(report['tables'])} tables, {rows} rows, "
              f"{report['embeddings']} embeddings, each table checked against the source")
        if "://" in target:
            print(f"{report['workspace']}/workbench.yaml names it (store:); workbench.duckdb there is no longer "
                  "used: keep it until you are satisfied, then remove it")
    return 0


@command("backup", "Write a consistent backup of the whole workspace (history, traces, pins, sets, token hashes, "
         "proposals, workbench.yaml) to one file, with each table's row count and hash; works while a server runs.",
         "workbench backup --out /backups/kb.wbk\nworkbench backup --out /backups/ --json")
@click.option("--out", required=True, metavar="FILE",
              help="the backup file to write (a folder: a dated file in it); replaced only with --force")
@click.option("--force", is_flag=True, help="replace FILE when it exists")
@as_option("act as this principal: only an admin may take a backup (default: the local administrator)")
@json_option()
def backup(out, force, principal, as_json):
    from .options import open_workbench

    with open_workbench() as wb:
        report = wb.backup(out, force=force, actor=principal)
    if as_json:
        emit_json(report.to_dict())
        return
    rows = sum(report.tables.values())
    print(f"backed up {rows} rows in {len(report.tables)} tables (schema {report.schema:03d}) to {report.path} "
          f"({report.size} bytes)")


@command("restore-backup", "Rebuild a workspace from a backup file after checking every table's hash (a damaged "
         "or edited backup is refused whole); an existing workspace is replaced only with --force.",
         "workbench restore-backup /backups/kb.wbk --workspace ./kb-restored\n"
         "workbench restore-backup /backups/kb.wbk --workspace ./kb --force")
@click.argument("file", metavar="FILE")
@click.option("--force", is_flag=True, help="replace the workspace in the folder (never while a process holds it)")
@json_option()
def restore_backup(file, force, as_json):
    from ..service import Workbench

    report = Workbench.restore_backup(file, workspace(), force=force)
    if as_json:
        emit_json(report.to_dict())
        return
    upgraded = f", upgraded to schema {report.schema_to:03d}" if report.schema_to != report.schema_from else ""
    print(f"restored {sum(report.tables.values())} rows in {len(report.tables)} tables from {report.backup} into "
          f"{report.workspace} (schema {report.schema_from:03d}{upgraded}); every hash checked")
    print("search indexes and embeddings are rebuilt on first use", file=sys.stderr)


COMMANDS = [migrate, backup, restore_backup]

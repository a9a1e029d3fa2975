"""Commands for keeping traces: ``traces purge`` (by age, or one principal's).

Run on the workspace file directly without ``--as``, it acts as the local administrator; with
``--as``, the core's policy decides (admins only). Reading a trace is ``workbench trace``.
"""

from __future__ import annotations

import click

from .options import INT, _complete_principal, as_option, command, group, json_option, open_workbench
from .render import emit_json


@group("traces", "Traces of search, context and get calls: remove old ones, or one principal's.",
       "workbench traces purge --older-than 90 --dry-run\n"
       "workbench traces purge --principal agent.nw-coder")
def traces():
    pass


@command("purge", "Remove traces older than --older-than DAYS (default: traces.retain_days in workbench.yaml), "
         "or every trace of --principal P (admins and the local administrator only).",
         "workbench traces purge --older-than 90 --dry-run\n"
         "workbench traces purge --principal agent.nw-coder --as priya.raman")
@click.option("--older-than", "older_than", type=INT, metavar="DAYS",
              help="remove traces made more than DAYS days ago (0: all; default: traces.retain_days)")
@click.option("--principal", "of_principal", metavar="NAME", shell_complete=_complete_principal,
              help="only this principal's traces (all of them unless --older-than is given)")
@click.option("--dry-run", is_flag=True, help="count what would be removed; remove nothing")
@as_option("who purges: an admin (default: the local administrator, who runs the command on the workspace)",
           metavar="ADMIN")
@json_option()
def traces_purge(older_than, of_principal, dry_run, principal, as_json):
    with open_workbench() as wb:
        report = wb.purge_traces(older_than_days=older_than, principal=of_principal, actor=principal,
                                 dry_run=dry_run).to_dict()
    if as_json:
        emit_json(report)
        return
    noun = "trace" if report["removed"] == 1 else "traces"
    whose = f"{of_principal}'s {noun}" if of_principal else noun
    print(f"{'would remove' if dry_run else 'removed'} {report['removed']} {whose} made before {report['before']}")


traces.add_command(traces_purge)

COMMANDS = [traces]

"""Commands that read what agents asked and received, from traces: ``gaps`` (questions that got
nothing useful, grouped) and ``usage`` (what was served, by whom; what was never served)."""

from __future__ import annotations

import click

from ..errors import UserError
from .options import INT, PRINCIPAL_DEFAULT, as_option, command, json_option, open_workbench, scope_option
from .render import emit_json, table

VIEW = ("whose view: its own calls; a lead's, also the calls made in scopes it leads " + PRINCIPAL_DEFAULT
        + "; with neither, every call (the local administrator)")


@command("gaps", "Questions agents asked that got nothing useful (an abstention, or only low-confidence "
         "fragments), near-identical ones grouped, most asked first.",
         "workbench gaps --days 30 --scope org=northwind --as priya.raman\n"
         "workbench gaps --draft 1 --as priya.raman     # a proposal answering the most asked one")
@click.option("--days", type=INT, default=30, help="the window: calls of the last N days (default 30)")
@scope_option("only calls made within this scope (a call without a scope: its caller's orgs)")
@click.option("--draft", type=INT, metavar="N", help="draft an answer to group N of the report as a proposal (never "
              "served until an owner writes the answer and accepts it: `workbench review accept`); the group is "
              "then no longer listed")
@as_option(VIEW)
@json_option()
def gaps(days, scope, draft, principal, as_json):
    with open_workbench() as wb:
        report = wb.gaps(days=days, scope=scope, principal=principal)
        if draft is not None:
            if not 1 <= draft <= len(report.groups):
                raise UserError(f"--draft {draft}: the report lists {len(report.groups)} group(s)", param="draft")
            made = wb.draft_gap(report.groups[draft - 1].question, principal=principal, days=days)
            if as_json:
                emit_json(made.to_dict())
            else:
                print(f"drafted {made.id} (a proposal in {made.scope}, owner {made.owner}): write the answer with "
                      f"`workbench review accept {made.id} --file ANSWER.md` or in the TUI inbox; it is served to no one "
                      "until an owner accepts it")
            return
    if as_json:
        emit_json(report.to_dict())
        return
    where = f" within {report.scope}" if report.scope else ""
    print(f"{report.questions} unanswered question(s) in {len(report.groups)} group(s), last {report.days} days"
          f"{where}, as {report.principal or 'the local administrator'}")
    if not report.groups:
        return
    print()
    print(table(list(report.HEADERS), report.rows()))
    for number, group in enumerate(report.groups, 1):
        if len(group.examples) > 1:
            print(f"\n{number}. also asked as:")
            for example in group.examples[1:]:
                print(f"   - {example}")


@command("usage", "What agents actually received (search, context and get calls), how often and by whom; and "
         "the active fragments never served in the window, oldest first (candidates to archive).",
         "workbench usage --days 90 --scope org=northwind,repo=payments-api --as marco.bianchi")
@click.option("--days", type=INT, default=90, help="the window: calls of the last N days (default 90)")
@scope_option("only fragments within this scope")
@as_option("whose view: the fragments it may see, naming the principals whose calls it may read "
           + PRINCIPAL_DEFAULT + "; with neither, everything (the local administrator)")
@json_option()
def usage(days, scope, principal, as_json):
    with open_workbench() as wb:
        report = wb.usage(days=days, scope=scope, principal=principal)
    if as_json:
        emit_json(report.to_dict())
        return
    where = f" within {report.scope}" if report.scope else ""
    print(f"served in the last {report.days} days{where}, as {report.principal or 'the local administrator'}: "
          f"{len(report.served)} fragment(s), {report.calls} time(s)")
    if report.served:
        print(table(list(report.SERVED_HEADERS), report.served_rows()))
    if report.hidden:
        print(f"({report.hidden} fragment(s) served to calls you may read are no longer visible to you)")
    print(f"\nnever served in the last {report.days} days: {len(report.never_served)} fragment(s), oldest first "
          "(candidates to archive)")
    if report.never_served:
        print(table(list(report.NEVER_HEADERS), report.never_rows()))


COMMANDS = [gaps, usage]

"""Commands for agent proposals: propose, list what awaits review, accept or reject.

Each parses its arguments, makes one call into the core (``Workbench.propose``, ``proposals``,
``accept``, ``reject``) and renders the result; who may read or review a proposal is the
core's decision (policy.py), never this module's."""

from __future__ import annotations

import click

from .options import (INT, PRINCIPAL_DEFAULT, MultiValueOption, as_option, command, group, id_argument,
                      json_option, open_workbench, scope_option, values)
from .render import emit_json, table

KINDS = ("note", "session-summary", "anti-pattern", "observation")   # models.PROPOSAL_KINDS (kept here: no import on --help)
STATUSES = ("proposed", "rejected", "all")


def _text(body: str | None, file: str | None, *, required: bool) -> str | None:
    """The text of ``--body`` or ``--file`` (the caller's file, also when this runs in a server)."""
    from ..errors import UserError
    from .remote import read_input

    if body is not None and file is not None:
        raise UserError("give --body or --file, not both")
    if file is None:
        if body is None and required:
            raise UserError("give the proposal's text: --body TEXT, or --file F ('-' for stdin)", param="body")
        return body
    try:
        return read_input(file)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {file}: {e}") from e


def proposal_row(f, me: str) -> dict:
    """One proposal as ``proposals --json`` shows it."""
    data = f.to_dict()
    details = data["details"]
    return {"id": f.id, "version": f.version, "title": f.title, "kind": f.kind, "status": f.status,
            "scope": data["scope"], "owner": f.owner, "proposed_by": details.get("proposed_by"),
            "created_at": data["created_at"], "updated_at": data["updated_at"], "review": details.get("review"),
            "mine": details.get("proposed_by") == me}


@command("propose", "Propose a note, a session summary or an anti-pattern for review by the leads of its scope.",
         "workbench propose 'Webhook retries end in the DLQ' --body 'After 5 attempts ...'\n"
         "  --scope org=northwind,repo=payments-api --as agent.nw-coder")
@click.argument("title")
@click.option("--body", metavar="TEXT", help="the text (markdown); an anti-pattern's has lines \"Don't: ...\", "
              "\"Why: ...\" and \"Instead: ...\"")
@click.option("--file", "file", metavar="F", help="read the text from a file ('-' for stdin)")
@click.option("--kind", type=click.Choice(KINDS), default="note", show_default=True, help="what it is")
@scope_option("where it applies, a scope you may see (default: your own session scope)")
@click.option("--tags", cls=MultiValueOption, metavar="TAG...", help="tags (space-separated or repeated)")
@as_option(f"who proposes (its author) {PRINCIPAL_DEFAULT}")
@json_option()
def propose(title, body, file, kind, scope, tags, principal, as_json):
    text = _text(body, file, required=True)
    with open_workbench() as wb:
        made = wb.propose(title, text, kind=kind, scope=scope, tags=values(tags) or (), principal=principal)
    if as_json:
        emit_json(made.to_dict())
    else:
        print(f"proposed {made.id} in {made.scope}: awaiting review by a lead of that scope (served to nobody "
              "else until accepted)")


@command("proposals", "List the proposals you may review (and your own, marked).",
         "workbench proposals --as marco.bianchi\nworkbench proposals --status rejected --as agent.nw-coder")
@click.option("--status", type=click.Choice(STATUSES), default="proposed", show_default=True,
              help="proposed (awaiting review), rejected, or all")
@scope_option("only proposals within this scope")
@as_option(f"whose queue {PRINCIPAL_DEFAULT}")
@json_option()
def proposals(status, scope, principal, as_json):
    with open_workbench() as wb:
        me = wb.principal(principal).name
        rows = [proposal_row(f, me) for f in wb.proposals(principal=me, status=status, scope=scope)]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        print("no proposals awaiting review" if status == "proposed" else f"no {status} proposals")
        return
    fmt = lambda s: ",".join(f"{k}={v}" for k, v in s.items() if v)
    headers = ["id", "version", "kind", "by", "scope", "proposed", "title"] + (["status"] if status != "proposed" else [])
    print(table(headers, ([r["id"], f"v{r['version']}", r["kind"], (r["proposed_by"] or "") + (" (you)" if r["mine"] else ""),
                           fmt(r["scope"]), r["created_at"][:10], r["title"]]
                          + ([r["status"]] if status != "proposed" else []) for r in rows)))
    print("\nreview with: workbench show ID, then workbench review accept ID --base N [--scope S] [--owner P] "
          "(N: the version you read)  ·  workbench review reject ID --reason R")


@group("review", "Review a proposal: accept it (choosing scope and owner) or reject it with a reason.",
       "workbench review accept prop-webhook-retries-1a2b3c --scope org=northwind,repo=payments-api "
       "--owner marco.bianchi --as marco.bianchi\n"
       "workbench review reject prop-webhook-retries-1a2b3c --reason 'already in nw-rb-webhook-dlq' --as marco.bianchi")
def review():
    pass


@command("accept", "Accept a proposal: it becomes an active fragment in the scope and with the owner chosen.",
         "workbench review accept prop-webhook-retries-1a2b3c --base 2 --scope org=northwind,repo=payments-api "
         "--owner marco.bianchi --as marco.bianchi")
@id_argument(proposals=True)
@scope_option("the scope it is accepted into (default: where it was proposed)")
@click.option("--owner", help="its owner (default: you, or the owner the proposal names if not its author)")
@click.option("--title", help="a new title, saved as an edit before accepting")
@click.option("--body", metavar="TEXT", help="a new text, saved as an edit before accepting")
@click.option("--file", "file", metavar="F", help="read the new text from a file ('-' for stdin)")
@click.option("--reason", help="why (recorded in the review)")
@click.option("--base", type=INT, metavar="N", help="the version you reviewed (`show` names it): if the proposal "
              "moved on since, nothing is saved and the conflict is reported (exit 2); required once the proposal "
              "has more than one version")
@as_option(f"the reviewer (a lead of the proposal's scope) {PRINCIPAL_DEFAULT}", metavar="LEAD")
@json_option()
def accept(id, scope, owner, title, body, file, reason, base, principal, as_json):
    text = _text(body, file, required=False)
    with open_workbench() as wb:
        done = wb.accept(id, principal=principal, scope=scope, owner=owner, reason=reason, title=title, body=text,
                         base=base)
    if as_json:
        emit_json(done.to_dict())
    else:
        named = f" as {done.id} ({id} redirects to it)" if done.id != id else ""
        print(f"accepted {id}{named} (v{done.version}) into {done.scope}, owner {done.owner}")


@command("reject", "Reject a proposal, with a reason its author reads back (`show`, MCP `get`).",
         "workbench review reject prop-webhook-retries-1a2b3c --reason 'already in nw-rb-webhook-dlq' "
         "--as marco.bianchi")
@id_argument(proposals=True)
@click.option("--reason", required=True, help="why (required; the author reads it)")
@click.option("--base", type=INT, metavar="N", help="the version you reviewed (see accept)")
@as_option(f"the reviewer (a lead of the proposal's scope) {PRINCIPAL_DEFAULT}", metavar="LEAD")
@json_option()
def reject(id, reason, base, principal, as_json):
    with open_workbench() as wb:
        done = wb.reject(id, principal=principal, reason=reason, base=base)
    if as_json:
        emit_json(done.to_dict())
    else:
        print(f"rejected {done.id} (v{done.version}): its author reads the reason with `workbench show {done.id}`")


review.add_command(accept)
review.add_command(reject)

COMMANDS = [propose, proposals, review]

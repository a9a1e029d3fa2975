"""Commands for API tokens: ``token create``, ``token list``, ``token revoke``.

Run on the workspace file directly, these act as the local administrator (whoever can write the
database may manage every token) unless ``--as`` names a principal, whose rights the core's
policy then applies. A created token is printed once, alone on stdout; only its hash is stored.
"""

from __future__ import annotations

import sys

import click

from .options import INT, _complete_principal, as_option, command, group, json_option, open_workbench
from .render import emit_json, table

AS_HELP = ("act as this principal, whose rights apply: an admin manages every token, anyone else only "
           "their own (default: the local administrator, who manages every token)")


@group("token", "API tokens: each authenticates one principal to the team server. Only a token's hash is stored.",
       "workbench token create --for agent.nw-coder --expires 90 --note 'CI agent'\n"
       "workbench token list\n"
       "workbench token revoke 3f9a0c1d2e4b")
def token():
    pass


@command("create", "Create a token for a principal and print it, once (only its hash is stored).",
         "workbench token create --for agent.nw-coder --expires 90 --note 'CI agent'\n"
         "workbench token create --for marco.bianchi --as marco.bianchi --json")
@click.option("--for", "for_principal", metavar="PRINCIPAL", required=True, shell_complete=_complete_principal,
              help="the principal the token authenticates (a name in workbench.yaml)")
@click.option("--expires", "expires_days", type=INT, metavar="DAYS",
              help="the token expires after DAYS days, 1 to 3650 (default: never; revoke it instead)")
@click.option("--note", metavar="TEXT", help="what the token is for, shown by `token list`")
@as_option(AS_HELP)
@json_option()
def token_create(for_principal, expires_days, note, principal, as_json):
    with open_workbench() as wb:
        issued = wb.token_create(for_principal, expires_days=expires_days, note=note, actor=principal)
    if as_json:
        emit_json(issued.to_dict())
    else:
        print(issued.token)
    until = f"expires {issued.to_dict()['expires']}" if issued.expires else "never expires"
    print(f"token {issued.id} for {issued.principal} ({until}): this is the only time it is shown; only its "
          "hash is stored", file=sys.stderr)


@command("list", "List tokens: id, principal, status, dates and note (never a token or its hash).",
         "workbench token list\nworkbench token list --as marco.bianchi --json")
@as_option(AS_HELP)
@json_option()
def token_list(principal, as_json):
    with open_workbench() as wb:
        found = [t.to_dict() for t in wb.token_list(actor=principal)]
    if as_json:
        emit_json(found)
        return
    if not found:
        print("no tokens")
        return
    print(table(["id", "principal", "status", "created", "expires", "last_used", "note"],
                ([t["id"], t["principal"], t["status"], t["created"], t["expires"] or "never",
                  t["last_used"] or "-", t["note"] or ""] for t in found)))


@command("revoke", "Revoke a token by its id: it stops authenticating at once (revoking twice changes nothing).",
         "workbench token revoke 3f9a0c1d2e4b")
@click.argument("token_id", metavar="ID")
@as_option(AS_HELP)
@json_option()
def token_revoke(token_id, principal, as_json):
    with open_workbench() as wb:
        info = wb.token_revoke(token_id, actor=principal)
    if as_json:
        emit_json(info.to_dict())
    elif info.already_revoked:
        print(f"token {info.id} ({info.principal}) was already revoked at {info.to_dict()['revoked']}: "
              "nothing changed")
    else:
        print(f"revoked token {info.id} ({info.principal})")


for _cmd in (token_create, token_list, token_revoke):
    token.add_command(_cmd)


COMMANDS = [token]

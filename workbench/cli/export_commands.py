"""Commands for exports: curated sets, bundles, agent context files, the MCP server."""

from __future__ import annotations

import sys

import click

from .options import (id_argument, INT, PRINCIPAL_DEFAULT, as_option, command, group, json_option, open_workbench,
                      scope_option, workspace)
from .render import emit_json, table

FORMAT_NAMES = ("bundle", "agents-md", "claude-md", "cursor-rules", "llms-txt")


def _print_set(data: dict) -> None:
    scope = ",".join(f"{k}={v}" for k, v in data["scope"].items() if v)
    print(f"set {data['name']} · owner {data['owner']} · scope {scope}"
          + (f" · query “{data['query']}”" if data["query"] else "")
          + (" · picked: exactly the fragments included by hand" if data.get("picked") else ""))
    if data["include"] or data["exclude"]:
        print(f"included by hand: {', '.join(data['include']) or '-'}; excluded: {', '.join(data['exclude']) or '-'}")
    print(table(["id", "version", "kind", "title"], ([f["id"], str(f["version"]), f["kind"], f["title"]]
                                                      for f in data["fragments"])))


def _set_out(data: dict, as_json: bool) -> None:
    if as_json:
        emit_json(data)
    else:
        _print_set(data)


@group("set", "Curated sets: named, owned selections (a scope, an optional query, includes and excludes; "
       "or, --picked, exactly the fragments included by hand).",
       "workbench set create payments-core --scope org=northwind,repo=payments-api --as marco.bianchi")
def set_():
    pass


@command(
    "create", "Define a curated set.",
    "workbench set create payments-core --scope org=northwind,repo=payments-api --query 'idempotency' "
    "--as marco.bianchi\n"
    "workbench set create platform --scope org=northwind,repo=platform-infra --picked --as dan.kowalski")
@click.argument("name")
@scope_option("org=ORG[,repo=R][,persona=P]", required=True)
@click.option("--query", help="keep the fragments this query finds in the scope (default: all of the scope)")
@click.option("--picked", is_flag=True,
              help="hold exactly the fragments included by hand (`set add`): nothing of the scope by itself")
@as_option("the set's owner", required=True, metavar="USER")
@json_option()
def set_create(name, scope, query, picked, principal, as_json):
    with open_workbench() as wb:
        data = wb.set_create(name, scope=scope, actor=principal, query=query, picked=picked)
    _set_out(data, as_json)


def _set_change(name: str, verb: str):
    @command(name, f"{verb.title()} a fragment by hand.",
             f"workbench set {name} payments-core nw-rb-ledger-imbalance --as marco.bianchi")
    @click.argument("name")
    @id_argument()
    @as_option("who changes it (default principal)", metavar="USER")
    @json_option()
    def change(name, id, principal, as_json):
        with open_workbench() as wb:
            data = wb.set_change(name, id, include=verb == "include", actor=principal)
        _set_out(data, as_json)

    return change


@command("show", "Show a set and its fragments.", "workbench set show payments-core --as raj.patel")
@click.argument("name")
@as_option("as this principal (default principal)")
@json_option()
def set_show(name, principal, as_json):
    with open_workbench() as wb:
        data = wb.set_show(name, principal=principal)
    _set_out(data, as_json)


for _cmd in (set_create, _set_change("add", "include"), _set_change("remove", "exclude"), set_show):
    set_.add_command(_cmd)


@command("export", "Export a set as a bundle, or agent context files (AGENTS.md, CLAUDE.md, Cursor rules, "
         "llms.txt).",
         "workbench export bundle --set payments-core --out /tmp/bundle --as marco.bianchi\n"
         "workbench export agents-md --scope org=northwind,repo=payments-api --as marco.bianchi --out /tmp/agents\n"
         "workbench export cursor-rules --context northwind/platform --as tomas.silva --out /tmp/platform")
@click.argument("format", metavar="FORMAT",
                shell_complete=lambda ctx, param, incomplete: [f for f in FORMAT_NAMES if f.startswith(incomplete)])
@click.option("--out", required=True, metavar="DIR", help="folder to write into")
@click.option("--set", "set_name", metavar="NAME", help="a curated set (required for bundle)")
@click.option("--context", "context", metavar="ORG/CONTEXT",
              help="a published context: only its fragments, as you receive (or publish) them")
@scope_option("agent files: the scope they are for (default: the set's scope)")
@click.option("--budget", type=INT, default=8000, help="agent files: token budget (default 8000)")
@as_option(f"whose view: only what this principal may see is exported {PRINCIPAL_DEFAULT}")
@click.option("--force", is_flag=True,
              help="bundle: write into a non-empty folder; agent files: also overwrite or remove files in the way "
                   "that workbench did not write, or that changed since (a re-export replaces and prunes its own "
                   "files without it)")
@click.option("--base-url", metavar="URL", help="llms-txt: make every link absolute under this http(s) URL (e.g. "
              "https://docs.example.com/kb/)")
@click.option("--allow-secret", is_flag=True,
              help="also export fragments stored with a secret-guard override (left out by default)")
@json_option()
def export(format, out, set_name, context, scope, budget, principal, force, base_url, allow_secret, as_json):
    from ..errors import UserError

    if format not in FORMAT_NAMES:
        raise UserError(f"unknown export format {format!r} (valid: {', '.join(FORMAT_NAMES)})")
    if base_url is not None and format != "llms-txt":  # the core says the same for agent files; bundles too
        raise UserError(f"a base URL applies to llms-txt only, not {format}", param="base_url")
    if context is not None and set_name is not None:
        raise UserError("export takes --set NAME or --context ORG/CONTEXT, not both", param="context")
    with open_workbench() as wb:
        if format == "bundle" and context is not None:
            manifest = wb.export_context_bundle(context, out, principal=principal, force=force,
                                                allow_secret=allow_secret)
            data = {"format": "bundle", "dir": out, "fragments": manifest["fragments"],
                    "checksum": manifest["checksum"]["value"], "omitted": manifest["omitted"]}
        elif format == "bundle":
            if not set_name:
                raise UserError("export bundle needs --set NAME")
            manifest = wb.export_bundle(set_name, out, principal=principal, force=force, allow_secret=allow_secret)
            data = {"format": "bundle", "dir": out, "fragments": manifest["fragments"],
                    "checksum": manifest["checksum"]["value"], "omitted": manifest["omitted"]}
        else:
            if scope is None and context is None:
                if not set_name:
                    raise UserError(f"export {format} needs --scope S (or --set NAME)")
                scope = wb.set_show(set_name, principal=principal)["scope"]
                scope = ",".join(f"{k}={v}" for k, v in scope.items() if v)
            data = wb.export_agents(format, out, scope=scope, principal=principal, set_name=set_name, budget=budget,
                                    force=force, allow_secret=allow_secret, base_url=base_url, context=context)
    if as_json:
        emit_json(data)
    elif format == "bundle":
        print(f"wrote bundle of {data['fragments']} fragments to {data['dir']} (sha256 {data['checksum'][:16]}…)")
    else:
        shown = [f for f in data["files"] if f != data["manifest"]]
        print(f"wrote {', '.join(shown[:6])}{' …' if len(shown) > 6 else ''} to {data['dir']}: "
              f"{data['pins']} pinned, {data['avoid']} anti-patterns, {data['knowledge']} ranked "
              f"({data['omitted']} left out by the budget, {data['superseded']} superseded)"
              + (f"; removed {len(data['pruned'])} stale: {', '.join(data['pruned'][:6])}"
                 f"{' …' if len(data['pruned']) > 6 else ''}" if data["pruned"] else ""))


@command("import-bundle", "Import a bundle: restore its fragments with their versions, its set and the pins the "
         "importer may make. The schema and checksum, then every record is checked as a write; any problem "
         "refuses the whole bundle and nothing is written.",
         "workbench import-bundle /tmp/bundle --as priya.raman --dry-run")
@click.argument("dir", metavar="DIR")
@as_option(f"the importer: author of every version written {PRINCIPAL_DEFAULT}", metavar="USER")
@click.option("--allow-secret", is_flag=True,
              help="import versions that hold a credential anyway (each override is recorded)")
@click.option("--dry-run", is_flag=True, help="check everything and report; write nothing")
@json_option()
def import_bundle(dir, principal, allow_secret, dry_run, as_json):
    with open_workbench() as wb:
        report = wb.import_bundle(dir, actor=principal, allow_secret=allow_secret, dry_run=dry_run).to_dict()
    if as_json:
        emit_json(report)
        return
    verb = "would add" if dry_run else "added"
    print(f"{verb} {report['added']}, updated {report['updated']}, unchanged {report['unchanged']}")
    found = report.get("set")
    if found:
        print(f"set {found.get('name')}: {found.get('status')}" + (f" ({found['message']})" if found.get("message")
                                                                  else ""))
    for pin in report.get("pins", []):
        print(f"pin {pin['id']} in {pin['scope']}: {pin['status']}" + (f" ({pin['message']})" if pin.get("message")
                                                                       else ""))


@command("mcp", "Run the MCP server on stdio acting as PRINCIPAL: tools search, get, context (read-only, traced); "
         "fragments as resources workbench://fragment/{id}; the prompt task-context. When a team server holds "
         "the workspace (or WORKBENCH_URL names one), relay to its /mcp instead, as PRINCIPAL for the owner's "
         "or an admin's token, else as the token's principal.",
         "workbench mcp --as agent.nw-coder")
@as_option("whose scope the tools, resources and prompt see", required=True)
def mcp(principal):
    from .remote import endpoint_for

    endpoint = endpoint_for(workspace())
    if endpoint is not None:
        _relay(endpoint, principal)
        return
    from ..mcp.server import run

    print(f"workbench MCP server on stdio as {principal}", file=sys.stderr, flush=True)
    run(workspace(), principal)


def _relay(endpoint, principal: str) -> None:
    """MCP on stdio relayed to the team server (no model, no index here), after one request that
    checks the server answers, accepts the token and knows the principal."""
    from ..errors import NotFound
    from ..mcp.relay import run
    from .remote import TIMEOUT_S, endpoint_for, request

    names = sorted(p.get("name") for p in request(endpoint, "GET", "/api/v1/principals"))
    if principal not in names:
        raise NotFound(f"unknown principal {principal!r} (known: {', '.join(names)})")
    print(f"workbench MCP on stdio as {principal}, relayed to the server at {endpoint.url} ({endpoint.source})",
          file=sys.stderr, flush=True)

    folder = workspace()  # read here: click's context is not there on the relay's threads

    def reconnect():  # where the server is now (a restarted one has a new address and owner token)
        found = endpoint_for(folder)
        return None if found is None else (found.url, found.token)

    run(endpoint.url, endpoint.token, principal, timeout=TIMEOUT_S, reconnect=reconnect)


COMMANDS = [set_, export, import_bundle, mcp]

"""Command definitions for exports: curated sets, bundles, agent context files, the MCP server."""

from __future__ import annotations

import argparse
import sys

from .main import command
from .main import open_workbench as _open
from .render import emit_json, table

FORMAT_NAMES = ("bundle", "agents-md", "claude-md", "cursor-rules", "llms-txt")


def add_export_commands(sub: argparse._SubParsersAction) -> None:
    def json_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    help = "Curated sets: named, owned selections (a scope, an optional query, includes and excludes)."
    p = sub.add_parser("set", help=help, description=help)
    sets = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    c = sets.add_parser("create", help="define a set", description="Define a curated set.")
    c.add_argument("name")
    c.add_argument("--scope", required=True, help="org=ORG[,repo=R][,persona=P]")
    c.add_argument("--query", help="keep the fragments this query finds in the scope (default: all of the scope)")
    c.add_argument("--as", dest="principal", metavar="USER", required=True, help="the set's owner")
    json_opt(c)
    for name, verb in (("add", "include"), ("remove", "exclude")):
        a = sets.add_parser(name, help=f"{verb} a fragment by hand", description=f"{verb.title()} a fragment by hand.")
        a.add_argument("name")
        a.add_argument("id")
        a.add_argument("--as", dest="principal", metavar="USER", help="who changes it (default principal)")
        json_opt(a)
    s = sets.add_parser("show", help="show a set and its fragments", description="Show a set and its fragments.")
    s.add_argument("name")
    s.add_argument("--as", dest="principal", metavar="PRINCIPAL", help="as this principal (default principal)")
    json_opt(s)

    help = "Export a set as a bundle, or agent context files (AGENTS.md, CLAUDE.md, Cursor rules, llms.txt)."
    p = sub.add_parser("export", help=help, description=help)
    p.add_argument("format", metavar="FORMAT", help=f"one of: {', '.join(FORMAT_NAMES)}")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into")
    p.add_argument("--set", dest="set_name", metavar="NAME", help="a curated set (required for bundle)")
    p.add_argument("--scope", help="agent files: the scope they are for (default: the set's scope)")
    p.add_argument("--budget", type=int, default=8000, help="agent files: token budget (default 8000)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="whose view: only what this principal may see is exported (default: $WORKBENCH_PRINCIPAL, "
                        "else default_principal)")
    p.add_argument("--force", action="store_true",
                   help="bundle: write into a non-empty folder; agent files: also overwrite or remove files in the "
                        "way that workbench did not write, or that changed since (a re-export replaces and prunes "
                        "its own files without it)")
    p.add_argument("--base-url", metavar="URL",
                   help="llms-txt: make every link absolute under this http(s) URL (e.g. https://docs.example.com/kb/)")
    p.add_argument("--allow-secret", action="store_true",
                   help="also export fragments stored with a secret-guard override (left out by default)")
    json_opt(p)

    help = ("Import a bundle: restore its fragments with their versions, its set and the pins the importer may "
            "make. The schema and checksum, then every record is checked as a write; any problem refuses the whole "
            "bundle and nothing is written.")
    p = sub.add_parser("import-bundle", help=help, description=help)
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--as", dest="principal", metavar="USER",
                   help="the importer: author of every version written (default: $WORKBENCH_PRINCIPAL, else "
                        "default_principal)")
    p.add_argument("--allow-secret", action="store_true",
                   help="import versions that hold a credential anyway (each override is recorded)")
    p.add_argument("--dry-run", action="store_true", help="check everything and report; write nothing")
    json_opt(p)

    help = ("Run the MCP server on stdio acting as PRINCIPAL: tools search, get, context (read-only, traced); "
            "fragments as resources workbench://fragment/{id}; the prompt task-context.")
    p = sub.add_parser("mcp", help=help, description=help)
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL", required=True,
                   help="whose scope the tools, resources and prompt see")



def _print_set(data: dict) -> None:
    scope = ",".join(f"{k}={v}" for k, v in data["scope"].items() if v)
    print(f"set {data['name']} · owner {data['owner']} · scope {scope}" + (f" · query “{data['query']}”"
                                                                          if data["query"] else ""))
    if data["include"] or data["exclude"]:
        print(f"included by hand: {', '.join(data['include']) or '-'}; excluded: {', '.join(data['exclude']) or '-'}")
    print(table(["id", "version", "kind", "title"], ([f["id"], str(f["version"]), f["kind"], f["title"]]
                                                      for f in data["fragments"])))


@command("set")
def _set(args):
    with _open(args) as wb:
        if args.action == "create":
            data = wb.set_create(args.name, scope=args.scope, actor=args.principal, query=args.query)
        elif args.action in ("add", "remove"):
            data = wb.set_change(args.name, args.id, include=args.action == "add", actor=args.principal)
        else:
            data = wb.set_show(args.name, principal=args.principal)
    if args.json:
        emit_json(data)
    else:
        _print_set(data)


@command("export")
def _export(args):
    from ..errors import UserError

    if args.format not in FORMAT_NAMES:
        raise UserError(f"unknown export format {args.format!r} (valid: {', '.join(FORMAT_NAMES)})")
    if args.base_url is not None and args.format != "llms-txt":
        raise UserError(f"--base-url applies to llms-txt only, not {args.format}")
    with _open(args) as wb:
        if args.format == "bundle":
            if not args.set_name:
                raise UserError("export bundle needs --set NAME")
            manifest = wb.export_bundle(args.set_name, args.out, principal=args.principal, force=args.force,
                                        allow_secret=args.allow_secret)
            data = {"format": "bundle", "dir": args.out, "fragments": manifest["fragments"],
                    "checksum": manifest["checksum"]["value"], "omitted": manifest["omitted"]}
        else:
            scope = args.scope
            if scope is None:
                if not args.set_name:
                    raise UserError(f"export {args.format} needs --scope S (or --set NAME)")
                scope = wb.set_show(args.set_name, principal=args.principal)["scope"]
                scope = ",".join(f"{k}={v}" for k, v in scope.items() if v)
            data = wb.export_agents(args.format, args.out, scope=scope, principal=args.principal,
                                    set_name=args.set_name, budget=args.budget, force=args.force,
                                    allow_secret=args.allow_secret, base_url=args.base_url)
    if args.json:
        emit_json(data)
    elif args.format == "bundle":
        print(f"wrote bundle of {data['fragments']} fragments to {data['dir']} (sha256 {data['checksum'][:16]}…)")
    else:
        shown = [f for f in data["files"] if f != data["manifest"]]
        print(f"wrote {', '.join(shown[:6])}{' …' if len(shown) > 6 else ''} to {data['dir']}: "
              f"{data['pins']} pinned, {data['avoid']} anti-patterns, {data['knowledge']} ranked "
              f"({data['omitted']} left out by the budget, {data['superseded']} superseded)"
              + (f"; removed {len(data['pruned'])} stale: {', '.join(data['pruned'][:6])}"
                 f"{' …' if len(data['pruned']) > 6 else ''}" if data["pruned"] else ""))


@command("import-bundle")
def _import_bundle(args):
    with _open(args) as wb:
        report = wb.import_bundle(args.dir, actor=args.principal, allow_secret=args.allow_secret,
                                  dry_run=args.dry_run).to_dict()
    if args.json:
        emit_json(report)
    else:
        verb = "would add" if args.dry_run else "added"
        print(f"{verb} {report['added']}, updated {report['updated']}, unchanged {report['unchanged']}")
        found = report.get("set")
        if found:
            print(f"set {found.get('name')}: {found.get('status')}" + (f" ({found['message']})" if found.get("message")
                                                                      else ""))
        for pin in report.get("pins", []):
            print(f"pin {pin['id']} in {pin['scope']}: {pin['status']}" + (f" ({pin['message']})" if pin.get("message")
                                                                           else ""))


@command("mcp")
def _mcp(args):
    from ..mcp.server import run

    print(f"workbench MCP server on stdio as {args.principal}", file=sys.stderr, flush=True)
    run(args.workspace, args.principal)

"""Command definitions (arguments + handlers) for the foundation: workspace,
ingest, browse, history, edit and file export."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .main import command
from .main import open_workbench as _open
from .render import age, emit_json, fragment_text, table


def add_commands(sub: argparse._SubParsersAction) -> None:
    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help)

    def as_opt(p: argparse.ArgumentParser, required: bool = False) -> None:
        p.add_argument("--as", dest="principal", metavar="PRINCIPAL", required=required,
                       help="act as this principal (default: $WORKBENCH_PRINCIPAL, else default_principal "
                            "in workbench.yaml)" if not required else "the principal making the change")

    def json_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="print the documented JSON instead of text")

    p = cmd("init", "Create a workspace (workbench.yaml + database).")
    p.add_argument("--config", metavar="FILE", help="copy this workbench.yaml into the new workspace")
    p.add_argument("--force", action="store_true", help="replace an existing workbench.yaml")
    json_opt(p)

    p = cmd("ingest", "Import fragment files (markdown with YAML front matter), or a git repository with --git.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="fragment files or folders of them")
    p.add_argument("--git", metavar="REPO_PATH", help="ingest markdown and code from this git repository instead")
    p.add_argument("--include", nargs="+", metavar="GLOB", help="with --git: only files matching these globs")
    p.add_argument("--scope", help="with --git: the scope of its fragments (default: the org declaring the repo)")
    p.add_argument("--owner", help="with --git: owner when neither CODEOWNERS nor the last author is a principal")
    p.add_argument("--dry-run", action="store_true",
                   help="check everything and list what would be added, updated (and, with --git, archived); "
                        "write nothing")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="who is ingesting: the author of every version written, and whose rights apply "
                        "(default: $WORKBENCH_PRINCIPAL, else default_principal)")
    p.add_argument("--reason", help="reason recorded on new versions (default: 'ingest FILE')")
    p.add_argument("--progress", action="store_true", help="report progress on stderr")
    p.add_argument("--allow-secret", action="store_true",
                   help="store fragments even if they contain a credential (the override is recorded)")
    json_opt(p)

    p = cmd("list", "List the fragments a principal can see.")
    p.add_argument("--owner", help="only fragments owned by this principal")
    p.add_argument("--kind", help="only this kind (decision, runbook, code, policy, note, session-summary, "
                                  "anti-pattern)")
    p.add_argument("--scope", help="only fragments within this scope: org=ORG[,repo=R][,persona=P][,session=S]")
    p.add_argument("--all", action="store_true", help="include archived fragments")
    as_opt(p)
    json_opt(p)

    p = cmd("principals", "List the principals of workbench.yaml with their memberships and led scopes.")
    json_opt(p)

    p = cmd("show", "Show one fragment (the current version, or --version N).")
    p.add_argument("id")
    p.add_argument("--version", type=int, metavar="N", help="show version N")
    as_opt(p)
    json_opt(p)

    p = cmd("history", "List every version of a fragment.")
    p.add_argument("id")
    as_opt(p)
    json_opt(p)

    p = cmd("diff", "Show a unified diff of a fragment between versions A and B.")
    p.add_argument("id")
    p.add_argument("a", type=int)
    p.add_argument("b", type=int)
    as_opt(p)

    def base_opt(p: argparse.ArgumentParser) -> None:
        p.add_argument("--base", type=int, metavar="N",
                       help="the version this change was made from: if the fragment has moved on since, nothing is "
                            "saved and the conflict is reported (exit 2)")

    p = cmd("edit", "Save a new version from a file (a whole fragment file, or just a markdown body).")
    p.add_argument("id")
    p.add_argument("--file", required=True, metavar="F", help="fragment file or markdown body ('-' for stdin)")
    p.add_argument("--reason", help="why this change (required)")
    base_opt(p)
    p.add_argument("--allow-secret", action="store_true",
                   help="store the change even if it contains a credential (the override is recorded)")
    as_opt(p, required=True)
    json_opt(p)

    p = cmd("revert", "Append a new version whose content equals an earlier version.")
    p.add_argument("id")
    p.add_argument("--to", type=int, required=True, metavar="N", help="the version to return to")
    p.add_argument("--reason", help="why (default: 'revert to vN')")
    base_opt(p)
    as_opt(p, required=True)
    json_opt(p)

    for name, verb in (("archive", "Archive"), ("restore", "Restore an archived")):
        p = cmd(name, f"{verb} fragment (a new version; history is kept).")
        p.add_argument("id")
        p.add_argument("--reason", required=True, help="why (required)")
        base_opt(p)
        as_opt(p, required=True)
        json_opt(p)

    p = cmd("export-files", "Write fragments back to fragment files (round-trips through ingest).")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--force", action="store_true",
                   help="overwrite or remove files workbench did not write, or that changed since it wrote them")
    p.add_argument("--scope", help="only fragments within this scope (default: every fragment the principal sees)")
    p.add_argument("--as", dest="principal", metavar="PRINCIPAL",
                   help="whose view: only fragments this principal may see (default: $WORKBENCH_PRINCIPAL, else "
                        "default_principal)")
    p.add_argument("--allow-secret", action="store_true",
                   help="also write fragments stored with a secret-guard override (left out by default)")
    json_opt(p)

    p = cmd("info", "Show the workspace location, schema version and counts.")
    json_opt(p)



@command("init")
def _init(args):
    from ..service import Workbench

    with Workbench.init(args.workspace, config=args.config, force=args.force) as wb:
        out = {"workspace": str(wb.root), "schema_versions": wb.store.schema_versions()}
    if args.json:
        emit_json(out)
    else:
        print(f"workspace ready at {out['workspace']}")


@command("ingest")
def _ingest(args):
    def progress(stage: str, done: int, total: int) -> None:
        print(f"ingest: {stage} {done}/{total}", file=sys.stderr, flush=True)

    from ..errors import UserError

    if bool(args.git) == bool(args.paths):
        raise UserError("give fragment PATHs, or --git REPO_PATH (one or the other)")
    with _open(args) as wb:
        if args.git:
            report = wb.ingest_git(args.git, include=args.include, scope=args.scope, actor=args.principal,
                                   owner=args.owner, allow_secret=args.allow_secret, dry_run=args.dry_run)
        else:
            report = wb.ingest(args.paths, actor=args.principal, reason=args.reason,
                               progress=progress if args.progress else None, allow_secret=args.allow_secret,
                               dry_run=args.dry_run)
    data = report.to_dict()
    if args.json:
        emit_json(data)
    else:
        for err in data["errors"]:
            print(f"skipped {err['message'] if err['message'].startswith(err['file']) else err['file'] + ': ' + err['message']}",
                  file=sys.stderr)
        for warn in data["warnings"]:
            print(f"warning: {warn['file']}: {warn['message']}", file=sys.stderr)
        if data.get("dry_run"):
            rows = [[f"would {action}", item["id"], item.get("path", "")] for action, items in data["plan"].items()
                    for item in items]
            if rows:
                print(table(["change", "id", "path"], rows, max_width=80))
            repo = f" ({data['repo']['name']} as {data['repo']['key']})" if "repo" in data else ""
            print(f"dry run{repo}, nothing written: would add "
                  f"{data['added']}, update {data['updated']}, archive {data.get('archived', 0)}; "
                  f"unchanged {data['unchanged']}, errors {len(data['errors'])}")
            return 2 if data["errors"] else 0
        print(f"added {data['added']}, updated {data['updated']}, unchanged {data['unchanged']}, "
              + (f"archived {data['archived']}, " if data.get("archived") else "") + f"errors {len(data['errors'])}")
    return 2 if data["errors"] else 0


@command("list")
def _list(args):
    with _open(args) as wb:
        rows = wb.list(principal=args.principal, owner=args.owner, kind=args.kind, scope=args.scope,
                       include_archived=args.all)
    if args.json:
        emit_json([_summary(f) for f in rows])
        return
    print(table(["id", "kind", "title", "owner", "scope", "age"],
                ([f.id, f.kind, f.title, f.owner, str(f.scope), age(f.updated_at)] for f in rows)))
    print(f"\n{len(rows)} fragments")


def _summary(f) -> dict:
    return {"id": f.id, "version": f.version, "kind": f.kind, "title": f.title, "owner": f.owner,
            "scope": f.scope.to_dict(), "status": f.status, "tags": list(f.tags),
            "updated_at": f.to_dict()["updated_at"], "verified_at": f.to_dict()["verified_at"]}


@command("principals")
def _principals(args):
    with _open(args) as wb:
        people = [p.to_dict() for p in wb.principals()]
    if args.json:
        emit_json([{k: p[k] for k in ("name", "orgs", "repos", "personas", "lead_of")} for p in people])
        return
    print(table(["name", "orgs", "repos", "personas", "lead_of"],
                ([p["name"], ",".join(p["orgs"]), ",".join(p["repos"]), ",".join(p["personas"]),
                  "; ".join(p["lead_of"])] for p in people), max_width=48))


@command("show")
def _show(args):
    with _open(args) as wb:
        data = wb.get(args.id, version=args.version, principal=args.principal).to_dict()
        newer = wb.superseded_by(args.id, principal=args.principal)
        data["superseded_by"] = {"id": newer[0], "version": newer[1]} if newer else None
    if args.json:
        emit_json(data)
    else:
        print(fragment_text(data))


@command("history")
def _history(args):
    with _open(args) as wb:
        versions = [v.to_dict() for v in wb.history(args.id, principal=args.principal)]
    if args.json:
        emit_json(versions)
        return
    print(table(["version", "author", "at", "status", "reason"],
                ([str(v["version"]), v["author"], v["created_at"], v["status"], v["reason"]] for v in versions)))


@command("diff")
def _diff(args):
    with _open(args) as wb:
        text = wb.diff(args.id, args.a, args.b, principal=args.principal)
    print(text if text else f"no difference between v{args.a} and v{args.b}", end="" if text else "\n")


def _changed(args, fragment) -> None:
    if args.json:
        emit_json(fragment.to_dict())
    else:
        print(f"{fragment.id} is now at version {fragment.version}")


@command("edit")
def _edit(args):
    from ..errors import UserError

    if not args.reason or not args.reason.strip():
        raise UserError("a reason is required for every change (--reason TEXT)")
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {args.file}: {e}") from e
    with _open(args) as wb:
        _changed(args, wb.edit(args.id, text, reason=args.reason, actor=args.principal, file=args.file,
                               allow_secret=args.allow_secret, base=args.base))


@command("revert")
def _revert(args):
    with _open(args) as wb:
        _changed(args, wb.revert(args.id, args.to, actor=args.principal, reason=args.reason, base=args.base))


@command("archive")
def _archive(args):
    with _open(args) as wb:
        _changed(args, wb.archive(args.id, actor=args.principal, reason=args.reason, base=args.base))


@command("restore")
def _restore(args):
    with _open(args) as wb:
        _changed(args, wb.restore(args.id, actor=args.principal, reason=args.reason, base=args.base))


@command("export-files")
def _export_files(args):
    with _open(args) as wb:
        written = wb.export_files(args.dir, force=args.force, scope=args.scope, principal=args.principal,
                                  allow_secret=args.allow_secret)
    if args.json:
        emit_json({"dir": str(Path(args.dir).resolve()), "files": len(written)})
    else:
        print(f"wrote {len(written)} fragment files to {args.dir}")


@command("info")
def _info(args):
    with _open(args) as wb:
        data = {"workspace": str(wb.root), "name": wb.config.name,
                "schema_versions": wb.store.schema_versions(), **wb.stats()}
    if args.json:
        emit_json(data)
    else:
        for key, value in data.items():
            print(f"{key}: {value}")

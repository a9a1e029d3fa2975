"""Commands of the foundation: workspace, ingest, browse, history, edit and file export.

Each parses its arguments, makes one call into the core and renders the result."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .options import (id_argument, INT, MultiValueOption, PRINCIPAL_DEFAULT, as_option, command, json_option,
                      open_workbench, scope_option, values, workspace)
from .inputs import STDIN_NAME, config_input, input_path, one_stdin, stdin_paths
from .render import age, emit_json, fragment_text, table

WHO = "whose view: only fragments this principal may see " + PRINCIPAL_DEFAULT


@command("init", "Create a workspace (workbench.yaml + database).",
         "workbench --workspace ./kb init --config sample_corpus/workbench.yaml\n"
         "workbench --workspace ./kb init --config kb.yaml --store postgresql://kb@db.internal/kb")
@click.option("--config", metavar="FILE", help="copy this workbench.yaml into the new workspace ('-' for stdin: "
              "a relative `golden:` in it is then read from the current folder)")
@click.option("--force", is_flag=True, help="replace an existing workbench.yaml")
@click.option("--store", metavar="URL", help="keep the workspace's data in PostgreSQL (pgvector 0.8+): "
              "postgresql://USER@HOST[:PORT]/DATABASE, no password (PGPASSWORD or ~/.pgpass); default: "
              "workbench.duckdb in the folder")
@json_option()
def init(config, force, store, as_json):
    from ..service import Workbench

    with config_input(config) as config_file, \
            Workbench.init(workspace(), config=config_file, force=force, store=store) as wb:
        out = {"workspace": str(wb.root), "schema_versions": wb.store.schema_versions()}
    if as_json:
        emit_json(out)
    else:
        print(f"workspace ready at {out['workspace']}")


@command("ingest", "Import fragment files (markdown with YAML front matter), or a git repository with --git. "
         "PATH '-' reads one fragment file from standard input (named <stdin>; its front matter names its id).",
         "workbench ingest sample_corpus/fragments --as kb.sync\n"
         "workbench ingest - --as kb.sync < nw-note-cache-ttl.md\n"
         "workbench ingest --git ../payments-api --include 'docs/*.md' '*.py' --dry-run")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option("--git", metavar="REPO_PATH", help="ingest markdown and code from this git repository instead")
# PATH '-' is one fragment file read from standard input, named "<stdin>" in reports; its front
# matter must name its id, and it is not remembered as an ingested file.
@click.option("--include", cls=MultiValueOption, metavar="GLOB...",
              help="with --git: only files matching these globs (space-separated or repeated)")
@scope_option("with --git: the scope of its fragments (default: the org declaring the repo)")
@click.option("--owner", help="with --git: owner when neither CODEOWNERS nor the last author is a principal")
@click.option("--dry-run", is_flag=True, help="check everything and list what would be added, updated (and, with "
              "--git, archived); write nothing")
@as_option("who is ingesting: the author of every version written, and whose rights apply " + PRINCIPAL_DEFAULT)
@click.option("--reason", help="reason recorded on new versions (default: 'ingest FILE')")
@click.option("--progress", is_flag=True, help="report progress on stderr")
@click.option("--allow-secret", is_flag=True,
              help="store fragments even if they contain a credential (the override is recorded)")
@click.option("--theirs", is_flag=True, help="settle conflicts (and fragments the workbench is ahead on) for the "
              "file: its text becomes a new version")
@click.option("--ours", is_flag=True, help="settle conflicts for the workbench: nothing is written, the file is "
              "taken as the base (then `export-files` writes the workbench's version to it)")
@json_option()
def ingest(paths, git, include, scope, owner, dry_run, principal, reason, progress, allow_secret, theirs, ours,
           as_json):
    from ..errors import UserError

    def report_progress(stage: str, done: int, total: int) -> None:
        print(f"ingest: {stage} {done}/{total}", file=sys.stderr, flush=True)

    if bool(git) == bool(paths):
        raise UserError("give fragment PATHs, or --git REPO_PATH (one or the other)")
    if theirs and ours:
        raise UserError("--theirs and --ours settle conflicts opposite ways: give one")
    resolve = "theirs" if theirs else "ours" if ours else None
    one_stdin(paths=paths)
    paths = stdin_paths(paths, name=STDIN_NAME)
    with open_workbench() as wb:
        if git:
            report = wb.ingest_git(git, include=values(include), scope=scope, actor=principal, owner=owner,
                                   allow_secret=allow_secret, dry_run=dry_run, resolve=resolve)
        else:
            report = wb.ingest(list(paths), actor=principal, reason=reason,
                               progress=report_progress if progress else None, allow_secret=allow_secret,
                               dry_run=dry_run, resolve=resolve)
    data = report.to_dict()
    status = 2 if data["errors"] else 3 if data.get("conflicts") else 0  # 3: a sync job must notice
    if as_json:
        emit_json(data)
        return status
    for err in data["errors"]:
        where = err["message"] if err["message"].startswith(err["file"]) else err["file"] + ": " + err["message"]
        print(f"skipped {where}", file=sys.stderr)
    for warn in data["warnings"]:
        print(f"warning: {warn['file']}: {warn['message']}", file=sys.stderr)
    _sync_lines(data)
    if data.get("dry_run"):
        rows = [[f"would {action}", item["id"], item.get("path", "")] for action, items in data["plan"].items()
                for item in items]
        if rows:
            print(table(["change", "id", "path"], rows))
        repo = f" ({data['repo']['name']} as {data['repo']['key']})" if "repo" in data else ""
        print(f"dry run{repo}, nothing written: would add "
              f"{data['added']}, update {data['updated']}, archive {data.get('archived', 0)}; "
              f"unchanged {data['unchanged']}, " + _sync_counts(data) + f"errors {len(data['errors'])}")
        return status
    print(f"added {data['added']}, updated {data['updated']}, unchanged {data['unchanged']}, "
          + (f"archived {data['archived']}, " if data.get("archived") else "") + _sync_counts(data)
          + f"errors {len(data['errors'])}")
    return status


def _sync_lines(data: dict) -> None:
    """Per fragment: the workbench ahead of its file (stdout: nothing is wrong), conflicts (stderr:
    the exit status is 3) and conflicts settled by --theirs / --ours."""
    for item in data.get("ahead", []):
        print(f"database ahead of file: {item['id']} ({item['file']}): the workbench has newer versions; "
              "nothing overwritten (`workbench export-files DIR` writes them to the file)")
    for item in data.get("resolved", []):
        won = "the file's text is a new version" if item["winner"] == "file" else \
            "kept the workbench's version (`workbench export-files DIR` writes it to the file)"
        print(f"resolved: {item['id']} ({item['file']}): {won}")
    for item in data.get("conflicts", []):
        print(f"conflict: {item['message']}", file=sys.stderr)
    if data.get("conflicts"):
        print(f"{len(data['conflicts'])} conflict(s): nothing of them was written; settle them with "
              "`workbench ingest --theirs` (the file wins) or `--ours` (the workbench wins)", file=sys.stderr)


def _sync_counts(data: dict) -> str:
    return "".join(f"{label} {len(data[key])}, " for key, label in
                   (("ahead", "database ahead"), ("conflicts", "conflicts"), ("resolved", "resolved")) if data.get(key))


@command("list", "List the fragments a principal can see.",
         "workbench list --kind anti-pattern --scope org=northwind --as priya.raman")
@click.option("--owner", help="only fragments owned by this principal")
@click.option("--kind", help="only this kind (decision, runbook, code, policy, note, session-summary, anti-pattern, observation)")
@scope_option("only fragments within this scope: org=ORG[,repo=R][,persona=P][,session=S]")
@click.option("--all", "include_archived", is_flag=True, help="include archived fragments")
@click.option("--after", metavar="ID", help="start after this id (ids are listed in order: the last one of a page)")
@click.option("--limit", type=INT, metavar="N", help="at most N fragments (a page; default: all)")
@as_option()
@json_option()
def list_(owner, kind, scope, include_archived, after, limit, principal, as_json):
    rows: list[tuple] = []  # (summary, table row): bodies are read a page at a time and let go
    with open_workbench() as wb:
        while True:
            want = LIST_PAGE if limit is None else limit if limit < 1 else min(LIST_PAGE, limit - len(rows))
            page = wb.list(principal=principal, owner=owner, kind=kind, scope=scope,  # a bad limit: its error
                           include_archived=include_archived, after=after, limit=want)
            rows += [(_summary(f), [f.id, f.kind, f.title, f.owner, str(f.scope), age(f.updated_at)]) for f in page]
            if len(page) < want or (limit is not None and len(rows) >= limit):
                break
            after = page[-1].id
    if as_json:
        emit_json([summary for summary, _ in rows])
        return
    print(table(["id", "kind", "title", "owner", "scope", "age"], (row for _, row in rows)))
    print(f"\n{len(rows)} fragments")


LIST_PAGE = 1000  # fragments read whole at a time by `list`


def _summary(f) -> dict:
    return {"id": f.id, "version": f.version, "kind": f.kind, "title": f.title, "owner": f.owner,
            "scope": f.scope.to_dict(), "status": f.status, "tags": list(f.tags),
            "updated_at": f.to_dict()["updated_at"], "verified_at": f.to_dict()["verified_at"]}


@command("principals", "List the principals of workbench.yaml: kind, memberships, led scopes, write grants.",
         "workbench principals --json")
@json_option()
def principals(as_json):
    with open_workbench() as wb:
        people = [p.to_dict() for p in wb.principals()]
    if as_json:
        emit_json([{k: p[k] for k in ("name", "kind", "orgs", "repos", "personas", "lead_of", "writes")}
                   for p in people])
        return
    print(table(["name", "kind", "orgs", "repos", "personas", "lead_of", "writes"],
                ([p["name"], p["kind"], ",".join(p["orgs"]), ",".join(p["repos"]), ",".join(p["personas"]),
                  "; ".join(p["lead_of"]), "; ".join(p["writes"])] for p in people)))


@command("show", "Show one fragment (the current version, or --version N).",
         "workbench show nw-adr-0007-idempotency-keys --as marco.bianchi")
@id_argument()
@click.option("--version", type=INT, metavar="N", help="show version N")
@as_option()
@json_option()
def show(id, version, principal, as_json):
    with open_workbench() as wb:
        data = wb.get(id, version=version, principal=principal).to_dict()
        newer = wb.superseded_by(id, principal=principal)
        data["superseded_by"] = ({"id": newer[0], "version": newer[1], **({"archived": True} if len(newer) > 2 else {})}
                                 if newer else None)
        via = wb.received_via(id, principal=principal)
        if via:   # received through a subscription: the publisher's fragment, read-only here
            data["via"] = via
    if as_json:
        emit_json(data)
    else:
        print(fragment_text(data))


@command("history", "List every version of a fragment.",
         "workbench history nw-adr-0007-idempotency-keys --as marco.bianchi")
@id_argument()
@as_option()
@json_option()
def history(id, principal, as_json):
    with open_workbench() as wb:
        versions = [v.to_dict() for v in wb.history(id, principal=principal)]
    if as_json:
        emit_json(versions)
        return
    print(table(["version", "author", "at", "status", "reason"],
                ([str(v["version"]), v["author"], v["created_at"], v["status"], v["reason"]] for v in versions)))


@command("diff", "Show a unified diff of a fragment between versions A and B.",
         "workbench diff nw-adr-0007-idempotency-keys 1 2 --as marco.bianchi")
@id_argument()
@click.argument("a", type=INT)
@click.argument("b", type=INT)
@as_option()
def diff(id, a, b, principal):
    with open_workbench() as wb:
        text = wb.diff(id, a, b, principal=principal)
    print(text if text else f"no difference between v{a} and v{b}", end="" if text else "\n")


def base_option():
    return click.option("--base", type=INT, metavar="N", help="the version this change was made from: if the "
                        "fragment has moved on since, nothing is saved and the conflict is reported (exit 2)")


def _changed(as_json: bool, fragment) -> None:
    if as_json:
        emit_json(fragment.to_dict())
    else:
        print(f"{fragment.id} is now at version {fragment.version}")


@command("edit", "Save a new version from a file (a whole fragment file, or just a markdown body), showing "
         "which golden queries it changes.",
         "workbench edit nw-adr-0007-idempotency-keys --file body.md --reason 'note the TTL' --as marco.bianchi "
         "--base 1\n"
         "workbench edit nw-rb-psp-failover --file body.md --dry-run --as dan.kowalski")
@id_argument()
@click.option("--file", "file", required=True, metavar="F", help="fragment file or markdown body ('-' for stdin)")
@click.option("--reason", help="why this change (required, unless --dry-run)")
@base_option()
@click.option("--allow-secret", is_flag=True,
              help="store the change even if it contains a credential (the override is recorded)")
@click.option("--dry-run", is_flag=True, help="check the edit and show its impact on the golden queries; save nothing")
@click.option("--golden", metavar="FILE", help="the golden set the impact is computed on (default: the workspace's; "
              "'-' for stdin)")
@as_option(required=True)
@json_option()
def edit(id, file, reason, base, allow_secret, dry_run, golden, principal, as_json):
    from ..errors import UserError
    from .remote import read_input

    one_stdin(file=file, golden=golden)
    try:
        text = read_input(file)  # the caller's file, also when this runs in a server
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {file}: {e}") from e
    with input_path(golden, name="golden.yaml") as golden_file, open_workbench() as wb:
        if dry_run:
            impact = wb.edit_impact(id, text, actor=principal, golden=golden_file, file=file,
                                    allow_secret=allow_secret, base=base)
        else:
            saved = wb.edit_with_impact(id, text, reason=reason, actor=principal, file=file,
                                        allow_secret=allow_secret, base=base, golden=golden_file)
            impact = saved.impact
    if as_json:
        emit_json({"id": impact.fragment_id, "dry_run": True, "impact": impact.to_dict()} if dry_run
                  else saved.to_dict())
        return
    print(f"dry run: {impact.fragment_id} not saved" if dry_run
          else f"{saved.fragment.id} is now at version {saved.fragment.version}")
    for line in impact.lines():
        print(line)


@command("revert", "Append a new version whose content equals an earlier version.",
         "workbench revert nw-adr-0007-idempotency-keys --to 1 --as marco.bianchi")
@id_argument()
@click.option("--to", type=INT, required=True, metavar="N", help="the version to return to")
@click.option("--reason", help="why (default: 'revert to vN')")
@base_option()
@as_option(required=True)
@json_option()
def revert(id, to, reason, base, principal, as_json):
    with open_workbench() as wb:
        _changed(as_json, wb.revert(id, to, actor=principal, reason=reason, base=base))


def _status_command(name: str, verb: str, method: str):
    @command(name, f"{verb} fragment (a new version; history is kept).",
             f"workbench {name} nw-adr-0007-idempotency-keys --reason 'superseded' --as marco.bianchi")
    @id_argument()
    @click.option("--reason", required=True, help="why (required)")
    @base_option()
    @as_option(required=True)
    @json_option()
    def change(id, reason, base, principal, as_json):
        with open_workbench() as wb:
            changed = getattr(wb, method)(id, actor=principal, reason=reason, base=base)
            kept = wb.replaced_by(changed.id, principal=principal) if method == "archive" else []
        if as_json:
            emit_json({**changed.to_dict(), **({"still_superseded": kept} if method == "archive" else {})})
            return
        _changed(False, changed)
        for old in kept:   # archiving a superseder does not bring back what it replaced
            print(f"note: {old} stays superseded by {changed.id} (now archived): agents are still not served it. "
                  f"To serve it again, remove it from {changed.id}'s supersedes (workbench edit {changed.id})")

    return change


archive = _status_command("archive", "Archive", "archive")
archive.help += (" `workbench archive compress [--scope S] [--dry-run]` compresses each scope's oldest session "
                 "summaries and observations into one summary and archives them (see its --help).")


@command("compress", "Compress, per scope, the session summaries and agent observations beyond the newest "
         "archives.compress_after (workbench.yaml; default 15) into one extractive summary citing each source "
         "id@vN, and archive the sources (history kept; `search --include-archived` still finds them).",
         "workbench archive compress --scope org=tidewater,repo=dispatch --dry-run --as rachel.okafor")
@scope_option("only scopes within this one (default: every scope the principal sees)")
@click.option("--dry-run", is_flag=True, help="report what would be compressed; write nothing")
@as_option(WHO)
@json_option()
def compress(scope, dry_run, principal, as_json):
    with open_workbench() as wb:
        report = wb.compress_archives(scope=scope, dry_run=dry_run, actor=principal).to_dict()
    if as_json:
        emit_json(report)
        return
    verb = "would compress" if dry_run else "compressed"
    for g in report["compressed"]:
        print(f"{g['scope']}: {verb} {len(g['archived'])} into {g['summary']}@v{g['version']} "
              f"({g['sentences']} sentences, {g['words']} words, citing {g['sources']} sources)")
    for s in report["skipped"]:
        print(f"{s['scope']}: skipped: {s['reason']}")
    if not report["compressed"] and not report["skipped"]:
        print(f"nothing to compress (no scope holds more than {report['compress_after']} session summaries "
              "and observations)")


archive.subcommands = {"compress": compress}
restore = _status_command("restore", "Restore an archived", "restore")


@command("export-files", "Write fragments back to fragment files (round-trips through ingest).",
         "workbench export-files /tmp/fragments --as kb.sync")
@click.argument("dir", metavar="DIR")
@click.option("--force", is_flag=True,
              help="overwrite or remove files workbench did not write, or that changed since it wrote them")
@scope_option("only fragments within this scope (default: every fragment the principal sees)")
@as_option(WHO)
@click.option("--allow-secret", is_flag=True,
              help="also write fragments stored with a secret-guard override (left out by default)")
@json_option()
def export_files(dir, force, scope, principal, allow_secret, as_json):
    with open_workbench() as wb:
        written = wb.export_files(dir, force=force, scope=scope, principal=principal, allow_secret=allow_secret)
    if as_json:
        emit_json({"dir": str(Path(dir).resolve()), "files": len(written)})
    else:
        print(f"wrote {len(written)} fragment files to {dir}")


@command("info", "Show the workspace location, schema version and counts (the whole workspace's for an admin; "
         "anyone else's count what they see).", "workbench info --json\nworkbench info --as marco.bianchi")
@as_option("count only what this principal sees, unless it is an admin (default: the whole workspace, as the "
           "local administrator; through a team server, a non-admin token always counts its own)")
@json_option()
def info(principal, as_json):
    with open_workbench() as wb:
        data = {"workspace": str(wb.root), "name": wb.config.name,
                "schema_versions": wb.store.schema_versions(), **wb.stats(principal=principal),
                "calibration": wb.calibration_info()}
    if as_json:
        emit_json(data)
    else:
        for key, value in data.items():
            print(f"{key}: {value['summary'] if key == 'calibration' else value}")


COMMANDS = [init, ingest, list_, principals, show, history, diff, edit, revert, archive, restore, export_files, info]

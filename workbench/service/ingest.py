"""Ingest: fragment files (``ingest``) and git repositories (``ingest_git``) into versions.

Files are validated and authorized one by one (ingest/importer.py plans and writes them); new or
changed fragments that nearly duplicate one the actor can see are reported as warnings.

Git: chunk a repository into fragments, versioned like any other ingest, and remember the
repository for code-drift checks.

A repository is known by its identity (root commit + origin remote, see ingest/git_identity.py),
never by its folder name, so an ingest can only change chunks of the repository it read.
An ingest is planned first (reads only) and written afterwards in one transaction; every
planned write (add, update, archive) passes through one list in ``ingest_git`` before the
transaction, which is the place to filter them. ``dry_run`` stops after the plan. A chunk is
archived only if it is this repository's, its path matches this run's --include globs, its file
was not skipped with an error this run, and the chunk is gone at HEAD.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .. import policy
from ..errors import UserError, WorkbenchError
from ..ingest.importer import Progress, authorizer, check_semantics, guard_secrets, ingest_files, plan_writes
from ..ingest.sync import AHEAD, REMOVED, RESOLUTIONS, UPDATE, conflict_message, removal_verdict
from ..models import Fragment, IngestReport, Principal, Scope
from ..store.rows import VersionWrite
from ..models import utcnow
from .workspace import Feature, Workspace

if TYPE_CHECKING:
    from ..ingest.git import RepoRead
    from ..ingest.git_identity import RepoIdentity
    from .curation import Curation

ACTIONS = ("add", "update", "archive")
_REPORTED = {"add": "added", "update": "updated", "archive": "archived"}


@dataclass(frozen=True)
class PlannedWrite:
    """One version a git ingest means to append."""

    action: str            # "add", "update" or "archive"
    path: str              # the file in the repository
    write: VersionWrite

    @property
    def id(self) -> str:
        return self.write.fragment_id

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path}


@dataclass
class GitIngestReport(IngestReport):
    """An ``IngestReport`` (ids in added/updated/archived/unchanged) plus the repository read and,
    for a dry run, what would be written (``plan`` in the JSON)."""

    repo: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False
    planned: list[PlannedWrite] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = super().to_dict()
        data["archived"] = len(self.archived)
        data["repo"] = dict(self.repo)
        data["dry_run"] = self.dry_run
        if self.dry_run:
            data["plan"] = {action: [p.to_dict() for p in self.planned if p.action == action] for action in ACTIONS}
        return data


@dataclass
class _GitPlan:
    writes: list[PlannedWrite]
    report: GitIngestReport            # errors, warnings and unchanged ids so far
    overrides: dict[str, list[dict[str, str]]]  # chunk id → secret-guard findings stored anyway (--allow-secret)
    adopted: list[str]                 # git_repos keys this repository takes over (legacy or older rows, same path)
    keys: list[str]                    # every repo key whose chunks are this repository's (own first)
    bases: list[tuple[str, str, str]]  # (chunk id, content hash, origin): sync bases that move (ingest/sync.py)


class Ingestion(Feature):
    """Fragment files and git repositories into versions, each write authorized like any other."""

    def __init__(self, ws: Workspace, curation: "Curation"):
        super().__init__(ws)
        self.curation = curation

    def ingest(self, paths: Iterable[str | Path], *, actor: str | Principal | None = None,
               reason: str | None = None, progress: Progress | None = None, allow_secret: bool = False,
               dry_run: bool = False, resolve: str | None = None) -> IngestReport:
        """Import fragment files as ``actor`` (the author of every version written). Each file is
        validated and authorized like any write; a file that fails is reported and skipped.
        A file unchanged since its fragment's sync base never overwrites a newer version (reported
        in ``ahead``); a file and a database both changed since it are a conflict (``conflicts``,
        nothing written) unless ``resolve`` is "theirs" (the file wins) or "ours" (the database
        wins); see ingest/sync.py."""
        who = self.principal(actor)
        resolve = _resolution(resolve)
        written: list[VersionWrite] = []
        report = ingest_files(self.store, self.config, paths, actor=who, reason=reason, progress=progress,
                              allow_secret=allow_secret, dry_run=dry_run, written=written, resolve=resolve)
        if written:  # near-duplicates the actor can see are reported at ingest
            report.warnings += self.near_duplicate_warnings(who, report.added + report.updated, written)
        return report

    def near_duplicate_warnings(self, who: Principal, changed: list[str], written: list[VersionWrite]
                                ) -> list[dict[str, str]]:
        """One warning per near-duplicate pair (as ``workbench dedupe`` finds them for ``who``) that
        involves a fragment this ingest changed. New fragments are handed over as written, so their
        SimHash is computed without reading them back."""
        changed_ids = set(changed)
        new = [Fragment(w.fragment_id, w.number, w.content, w.content_hash or w.content.content_hash(),
                        w.created_at or w.at, w.at, w.verified_at) for w in written if w.number == 1]
        return [{"file": pair["b"] if pair["b"] in changed_ids else pair["a"],
                 "message": f"near-duplicate: {pair['a']} and {pair['b']} "
                            f"(SimHash distance {pair['distance']}); see `workbench dedupe --as {who.name}`"}
                for pair in self.curation.near_duplicates(who, only=changed, written=new)]

    def ingest_git(self, path: str | Path, *, include: list[str] | None = None, scope: Scope | str | None = None,
                   actor: str | Principal | None = None, owner: str | None = None, allow_secret: bool = False,
                   dry_run: bool = False, resolve: str | None = None) -> GitIngestReport:
        """Chunk the repository at ``path`` into fragments as ``actor`` (the author of every version;
        each add, update and archive is authorized like any write, a refusal is a per-file error).
        Chunks sync with their bases like files (``ingest``): a chunk the workbench changed since
        it was last in step is not overwritten, nor archived when its file is gone."""
        from ..ingest.git import read_repo

        who = self.principal(actor)
        resolve = _resolution(resolve)
        if owner is not None:
            self.principal(owner)
        where = Scope.coerce(scope)
        if where is not None:
            problem = self.config.check_scope(where)
            if problem:
                raise UserError(problem)
        read = read_repo(path, self.config, scope=where, include=include, fallback_owner=owner)
        now = utcnow()
        plan = self._plan_git(read, Path(path), actor=who, allow_secret=allow_secret, now=now, resolve=resolve)
        report = plan.report
        # Every planned write passes here, before anything is written: adds and updates were
        # authorized while planning; an archive is a status change the actor must be allowed too.
        planned = []
        for item in plan.writes:
            if item.action == "archive":
                current = self.store.get(item.id)
                decision = policy.may_write(who, current, item.write.content, principals=self.config.principals)
                if not decision:
                    report.errors.append({"file": item.path, "message": f"{item.path}: not archived: "
                                          + (policy.taken_message(item.id) if decision.hidden else decision.message)})
                    continue
            planned.append(item)
        report.planned = planned
        for item in planned:
            getattr(report, _REPORTED[item.action]).append(item.id)
        taken = {p.id for p in plan.writes} - {p.id for p in planned}  # refused archives keep their base
        bases = [row for row in plan.bases if row[0] not in taken]
        if dry_run:
            report.dry_run = True
            return report
        ident = read.identity
        with self.store.transaction():
            self.store.write_versions([p.write for p in planned])
            self.store.put_sync_bases(bases, now)
            self.store.drop_git_repos(plan.adopted)
            self.store.put_git_repo(ident.key, ident.name, ident.path, ident.head, now, root=ident.root,
                                    remote=ident.remote, include=list(read.patterns), adopted=plan.keys[1:])
            for item in planned:
                if item.id in plan.overrides and item.action != "archive":
                    self.store.put_secret_override(item.id, item.write.number, who.name, now, plan.overrides[item.id])
            if planned:
                self.store.add_event("ingest-git", actor=who.name, detail={
                    "repo": ident.name, "key": ident.key, "root": ident.root, "remote": ident.remote,
                    "head": ident.head, "include": list(read.patterns), "adopted": plan.adopted,
                    "added": len(report.added), "updated": len(report.updated), "archived": len(report.archived)})
        return report

    def _git_keys(self, ident: RepoIdentity, given: Path) -> tuple[list[str], list[str]]:
        """(every repo key whose chunks are this repository's, the git_repos rows to adopt).

        Its own key, the keys it adopted before, and rows recorded for the same resolved path that
        are legacy (no root: written before repositories had an identity) or have the same root
        (its remote was added or changed). A row at another path is another repository."""
        rows = self.store.git_repos()
        own = rows.get(ident.key)
        if own is not None and not ident.same_as(own["root"], own["remote"]):
            raise UserError(f"{ident.path}: repository key {ident.key} is already recorded for another repository "
                            f"({own['path']}, root {own['root'] or 'unknown'}); nothing ingested")
        places = {ident.path, str(given.resolve())}
        adopted = [k for k, row in rows.items() if k != ident.key and row["path"] in places
                   and (row["root"] is None or row["root"] == ident.root)]
        keys = [ident.key]
        for key in [*(own["adopted"] if own else []), *adopted, *(a for k in adopted for a in rows[k]["adopted"])]:
            if key not in keys:
                keys.append(key)
        return keys, adopted

    def _plan_git(self, read: RepoRead, given: Path, *, actor: Principal, allow_secret: bool,
                  now: datetime, resolve: str | None = None) -> _GitPlan:
        """Everything an ingest of ``read`` would write; reads the store, writes nothing."""
        from ..ingest.git import included

        ident = read.identity
        keys, adopted = self._git_keys(ident, given)
        report = GitIngestReport(errors=list(read.errors), warnings=list(read.warnings),
                                 repo={**ident.to_dict(), "include": list(read.patterns), "adopted": keys[1:]})
        origins = self.store.origins(prefix="")
        prefixes = [f"git:{k}:" for k in keys]
        ours: dict[str, tuple[str, str]] = {}   # fragment id → (repo key, path) for this repository's chunks
        for fid, origin in origins.items():
            for key, prefix in zip(keys, prefixes):
                if origin and origin.startswith(prefix):
                    ours[fid] = (key, origin[len(prefix):])
                    break
        overrides: dict[str, list[dict[str, str]]] = {}
        valid = []
        for chunk in read.chunks:
            found: list[dict[str, str]] = []
            try:
                check_semantics(chunk, self.config)
                where = f"{ident.name}/{chunk.file}"
                guard_secrets(chunk.raw, file=where, allow=allow_secret, overrides=found, first_line=chunk.line)
                guard_secrets(replace(chunk.content, body=""), file=where, allow=allow_secret, overrides=found)
            except WorkbenchError as e:
                report.errors.append({"file": chunk.file, "message": e.message})
                continue
            taken = origins.get(chunk.id)
            if taken and chunk.id not in ours:  # never overwrite a fragment that came from elsewhere
                report.errors.append({"file": chunk.file, "message": f"{chunk.file}: {policy.taken_message(chunk.id)} "
                                                                     "(it belongs to a fragment from another source)"})
                continue
            valid.append(chunk)
            if found:
                overrides[chunk.id] = found
        known = self.store.hashes()
        done = IngestReport()
        currents = {f.id: f for f in self.store.fragments(ids=[c.id for c in valid if c.id in known])}
        bases = self.store.sync_bases([c.id for c in valid if c.id in known] + list(ours))
        moved: dict[str, str] = {}
        writes, _ = plan_writes(valid, known, done, now=now, actor=actor.name,
                                reason=f"git ingest {ident.name}@{ident.head[:10]}", origin=lambda c: ident.origin(c.file),
                                authorize=authorizer(actor, currents, self.config.principals),
                                bases=bases, resolve=resolve, moved=moved)
        report.unchanged = done.unchanged
        report.errors += done.errors
        report.warnings += done.warnings
        report.ahead, report.conflicts, report.resolved = done.ahead, done.conflicts, done.resolved
        base_rows = [(c.id, moved[c.id], ident.origin(c.file)) for c in valid if c.id in moved]
        added, files = set(done.added), {c.id: c.file for c in valid}
        planned = [PlannedWrite("add" if w.fragment_id in added else "update", files[w.fragment_id], w)
                   for w in writes]

        produced = {c.id for c in read.chunks}
        present = {c.file for c in read.chunks}
        failed = {e["file"] for e in report.errors}  # a file that failed now is not a removed file
        gone = {fid: where for fid, where in ours.items()
                if fid not in produced and where[1] not in failed and included(where[1], read.patterns)}
        for f in self.store.fragments(status="active", ids=sorted(gone)) if gone else []:
            key, file = gone[f.id]
            rekeyed = key != ident.key and file in present
            if not rekeyed and not self._removal_taken(f, file, bases.get(f.id), resolve, report, base_rows, ident):
                continue
            why = f"re-keyed: {ident.name} is now identified as {ident.key}" if rekeyed \
                else f"removed from {ident.name} at {ident.head[:10]}"
            archived = replace(f.content, status="archived")
            planned.append(PlannedWrite("archive", file, VersionWrite(
                f.id, known[f.id][1] + 1, archived, actor.name, why, now)))
            base_rows.append((f.id, archived.content_hash(), ident.origin(file)))  # it may come back unchanged
        return _GitPlan(planned, report, overrides, adopted, keys, base_rows)

    @staticmethod
    def _removal_taken(f: Fragment, file: str, base: str | None, resolve: str | None, report: GitIngestReport,
                       base_rows: list[tuple[str, str, str]], ident: RepoIdentity) -> bool:
        """True when the chunk ``f``, gone from its file, is to be archived: the workbench did not
        change it since its base, or ``--theirs``. Else it stays, reported ahead or in conflict
        (``--ours``: kept, its base marked REMOVED so later ingests report it ahead)."""
        found = removal_verdict(f.content_hash, base)
        if found == UPDATE:
            return True
        where = {"id": f.id, "file": file}
        if resolve == "theirs":
            report.resolved.append({**where, "winner": "file"})
            return True
        if found == AHEAD:
            report.ahead.append(where)
        elif resolve == "ours":
            report.resolved.append({**where, "winner": "database"})
            base_rows.append((f.id, REMOVED, ident.origin(file)))
        else:
            report.conflicts.append({**where, "message": conflict_message(file, f.id, removed=True)})
        return False


def _resolution(resolve: str | None) -> str | None:
    if resolve not in (None, *RESOLUTIONS):
        raise UserError(f"unknown resolution {resolve!r} (expected one of: {', '.join(RESOLUTIONS)})")
    return resolve

"""Git ingestion for ``Workbench``: chunk a repository into fragments, versioned like any
other ingest, and remember the repository for code-drift checks."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .errors import WorkbenchError
from .ingest.importer import check_semantics, guard_secrets, plan_writes
from .models import IngestReport, Scope
from .store.store import VersionWrite, utcnow


class GitMixin:
    def ingest_git(self, path: str | Path, *, include: list[str] | None = None, scope: Scope | str | None = None,
                   actor: str | None = None, owner: str | None = None, allow_secret: bool = False) -> IngestReport:
        from .ingest.git import read_repo

        if actor is not None:
            self.principal(actor)
        if owner is not None:
            self.principal(owner)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        if where is not None:
            problem = self.config.check_scope(where)
            if problem:
                from .errors import UserError

                raise UserError(problem)
        name, head, chunks, errors = read_repo(path, self.config, scope=where, include=include,
                                               fallback_owner=owner)
        report = IngestReport(errors=list(errors))
        overrides: list[dict[str, str]] = []
        valid = []
        for chunk in chunks:
            try:
                check_semantics(chunk, self.config)
                guard_secrets(chunk.raw, file=f"{name}/{chunk.file}", allow=allow_secret, overrides=overrides,
                              first_line=chunk.line)
            except WorkbenchError as e:
                report.errors.append({"file": chunk.file, "message": e.message})
                continue
            valid.append(chunk)
        now = utcnow()
        known = self.store.hashes()
        writes, _ = plan_writes(valid, known, report, now=now, actor=actor, reason=f"git ingest {name}@{head[:10]}",
                                origin=lambda c: f"git:{name}:{c.file}")
        present = {c.id for c in valid}
        failed_files = {e["file"] for e in report.errors}  # a file that failed now is not a removed file
        origins = self.store.origins(prefix=f"git:{name}:")
        gone = [f for f in self.store.fragments(status="active", ids=list(origins))
                if f.id not in present and origins[f.id].split(":", 2)[2] not in failed_files]
        for f in gone:
            number = known[f.id][1] + 1
            writes.append(VersionWrite(f.id, number, replace(f.content, status="archived"), actor or f.owner,
                                       f"removed from {name} at {head[:10]}", now))
            report.archived.append(f.id)
        with self.store.transaction():
            self.store.write_versions(writes)
            self.store.put_git_repo(name, str(Path(path).resolve()), head, now)
            for override in overrides:
                self.store.add_event("allow-secret", actor=actor, detail=override)
            if writes:
                self.store.add_event("ingest-git", actor=actor, detail={"repo": name, "head": head,
                                                                        "added": len(report.added),
                                                                        "updated": len(report.updated),
                                                                        "archived": len(report.archived)})
        return report

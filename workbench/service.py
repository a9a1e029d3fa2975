"""``Workbench``: the one entry point that the CLI, TUI, MCP server and notebooks call.

It opens a workspace (config + database), enforces the rules (scope visibility,
known principals, required reasons) and delegates to ingest/, curate/, export/
and store/. It never renders output and never parses command lines.
"""

from __future__ import annotations

import difflib
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from .config import CONFIG_NAME, DB_NAME, DEFAULT_CONFIG, WorkspaceConfig, resolve_workspace
from .errors import NotFound, PermissionDenied, UserError, ValidationError, WorkspaceMissing
from .ingest.files import normalise_body, parse_fragment, render_fragment
from .ingest.importer import Progress, check_semantics, guard_secrets, ingest_files
from .models import Content, Fragment, IngestReport, Principal, Scope, Version
from .store import Store
from .service_curate import CurateMixin, GraphMixin
from .service_export import ExportMixin
from .service_git import GitMixin
from .service_stale import StaleMixin
from .service_retrieval import EvalMixin, RetrievalMixin
from .store.store import utcnow


class Workbench(RetrievalMixin, EvalMixin, CurateMixin, GraphMixin, StaleMixin, GitMixin, ExportMixin):
    """An open workspace. Use ``Workbench.open(path)``; close it (or use ``with``) when done."""

    def __init__(self, root: Path, config: WorkspaceConfig, store: Store):
        self.root = root
        self.config = config
        self.store = store

    # -- lifecycle --------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | Path | None = None, *, config: str | Path | None = None,
             force: bool = False) -> "Workbench":
        """Create a workspace at ``path`` (default: the resolved location) and open it."""
        root = resolve_workspace(path)
        target = root / CONFIG_NAME
        if target.exists() and not force and config is not None:
            raise UserError(f"{target} already exists (use --force to replace it)")
        if config is not None:
            source = Path(config)
            WorkspaceConfig.load(source)  # validate before copying anything
            root.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        elif not target.exists():
            root.mkdir(parents=True, exist_ok=True)
            target.write_text(DEFAULT_CONFIG, encoding="utf-8")
        return cls.open(root)

    @classmethod
    def open(cls, path: str | Path | None = None, *, lock_timeout: float | None = None) -> "Workbench":
        root = resolve_workspace(path)
        if not (root / CONFIG_NAME).is_file():
            raise WorkspaceMissing(f"no workspace at {root} (run `workbench init` first, "
                                   "or pass --workspace DIR / set WORKBENCH_HOME)")
        config = WorkspaceConfig.load(root / CONFIG_NAME)
        return cls(root, config, Store(root / DB_NAME, lock_timeout=lock_timeout))

    def close(self) -> None:
        self.store.close()

    def release(self) -> None:
        """Release the workspace lock until the next call (for long-running faces: MCP, TUI)."""
        self.store.release()

    def __enter__(self) -> "Workbench":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Workbench {self.root} {self.store.counts()['fragments']} fragments>"

    # -- principals and scope ---------------------------------------------------------

    def principal(self, name: str | Principal | None = None) -> Principal:
        if isinstance(name, Principal):
            return name
        return self.config.principal(name)

    def principals(self) -> list[Principal]:
        return sorted(self.config.principals.values(), key=lambda p: p.name)

    def _visible(self, fragment: Fragment | None, principal: Principal, fragment_id: str) -> Fragment:
        # Unknown and out-of-scope ids answer the same way, so ids outside scope do not leak.
        if fragment is None or not principal.can_see(fragment.scope, owner=fragment.owner):
            raise NotFound(f"unknown fragment {fragment_id!r}")
        return fragment

    # -- reads ------------------------------------------------------------------------

    def list(self, *, principal: str | Principal | None = None, owner: str | None = None,
             kind: str | None = None, scope: Scope | str | None = None,
             include_archived: bool = False) -> list[Fragment]:
        """Fragments the principal may see, filtered. ``scope`` keeps those within it."""
        who = self.principal(principal)
        if owner is not None and owner not in self.config.principals:
            raise NotFound(f"unknown owner {owner!r} (known: {', '.join(sorted(self.config.principals))})")
        if kind is not None:
            from .models import KINDS
            if kind not in KINDS:
                raise UserError(f"unknown kind {kind!r} (valid: {', '.join(KINDS)})")
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        rows = self.store.fragments(owner=owner, kind=kind, within=within,
                                    status=None if include_archived else "active")
        return [f for f in rows if who.can_see(f.scope, owner=f.owner)]

    def browse(self, *, principal: str | Principal | None = None, owner: str | None = None,
               kind: str | None = None, scope: Scope | str | None = None, stale_only: bool = False,
               include_archived: bool = False, now=None) -> list:
        """Light rows (no bodies) for browsing, with stale and pin badges, scope-filtered."""
        from .browse import summaries

        who = self.principal(principal)
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        now = now or utcnow()
        pinned = {p["fragment_id"] for p in self.store.pins(now=now)}
        rows = summaries(self.store.summaries(), who, pinned=pinned, now=now, include_archived=include_archived)
        return [r for r in rows if (owner is None or r.owner == owner) and (kind is None or r.kind == kind)
                and (within is None or within.contains(r.scope)) and (not stale_only or r.stale)]

    def get(self, fragment_id: str, *, version: int | None = None,
            principal: str | Principal | None = None) -> Fragment:
        who = self.principal(principal)
        current = self._visible(self.store.get(fragment_id), who, fragment_id)
        if version is None or version == current.version:
            return current
        old = self.store.version(fragment_id, version)
        if old is None:
            raise NotFound(f"{fragment_id} has no version {version} (latest is {current.version})")
        if not who.can_see(old.content.scope, owner=old.content.owner):
            raise NotFound(f"{fragment_id} has no version {version} visible to {who.name}")
        return Fragment(id=fragment_id, version=old.number, content=old.content, content_hash=old.content_hash,
                        created_at=current.created_at, updated_at=old.created_at, verified_at=None)

    def history(self, fragment_id: str, *, principal: str | Principal | None = None) -> list[Version]:
        from .results import History

        self.get(fragment_id, principal=principal)
        return History(self.store.versions(fragment_id))

    def diff(self, fragment_id: str, a: int, b: int, *, principal: str | Principal | None = None) -> str:
        """Unified diff of the fragment file between versions ``a`` and ``b``."""
        left = self.get(fragment_id, version=a, principal=principal)
        right = self.get(fragment_id, version=b, principal=principal)
        render = lambda f: render_fragment(  # noqa: E731 - timestamps are not content
            Fragment(f.id, f.version, f.content, f.content_hash, f.created_at, f.created_at)).splitlines(True)
        return "".join(difflib.unified_diff(render(left), render(right),
                                            fromfile=f"{fragment_id}@v{a}", tofile=f"{fragment_id}@v{b}"))

    def stats(self) -> dict[str, int]:
        return self.store.counts()

    # -- writes -----------------------------------------------------------------------

    def ingest(self, paths: Iterable[str | Path], *, actor: str | None = None, reason: str | None = None,
               progress: Progress | None = None, allow_secret: bool = False) -> IngestReport:
        if actor is not None:
            self.principal(actor)
        report = ingest_files(self.store, self.config, paths, actor=actor, reason=reason, progress=progress,
                              allow_secret=allow_secret)
        changed = report.added + report.updated
        if changed:  # near-duplicates are reported at ingest (``dedupe`` lists them all)
            for pair in self.dedupe(principal=False, only=changed):
                report.warnings.append({"file": pair["b"] if pair["b"] in changed else pair["a"],
                                        "message": f"near-duplicate: {pair['a']} and {pair['b']} "
                                                   f"(SimHash distance {pair['distance']}); see `workbench dedupe`"})
        return report

    def _write(self, fragment_id: str, content: Content, *, actor: Principal, reason: str) -> Fragment:
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change (--reason TEXT)")
        current = self.store.get(fragment_id)
        if current is not None and content.content_hash() == current.content_hash:
            raise UserError(f"no change: {fragment_id} already has this content (v{current.version})")
        if not actor.can_see(content.scope, owner=content.owner):
            raise PermissionDenied(f"{actor.name} may not write into scope {content.scope}")
        self.store.append_version(fragment_id, content, author=actor.name, reason=reason.strip(), at=utcnow())
        return self.store.get(fragment_id)

    def edit(self, fragment_id: str, text: str, *, reason: str, actor: str | Principal | None = None,
             file: str = "<edit>", allow_secret: bool = False) -> Fragment:
        """Replace the body (plain markdown) or the whole fragment (front matter + body)."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change (--reason TEXT)")
        if text.lstrip("\ufeff").startswith("---"):
            parsed = parse_fragment(text, file=file, default_id=fragment_id)
            if parsed.id != fragment_id:
                raise ValidationError(f"id {parsed.id!r} does not match {fragment_id!r}", file=file, field="id")
            check_semantics(parsed, self.config)
            content = parsed.content
        else:
            body = normalise_body(text)
            if not body and current.kind != "anti-pattern":
                raise ValidationError("is empty", file=file, field="body")
            content = replace(current.content, body=body)
        overrides: list[dict[str, str]] = []
        guard_secrets(text, file=file, allow=allow_secret, overrides=overrides)
        with self.store.transaction():
            for override in overrides:
                self.store.add_event("allow-secret", actor=who.name, fragment_id=fragment_id, detail=override)
            return self._write(fragment_id, content, actor=who, reason=reason)

    def revert(self, fragment_id: str, to: int, *, actor: str | Principal | None = None,
               reason: str | None = None) -> Fragment:
        """Append a version whose content equals version ``to``."""
        who = self.principal(actor)
        self.get(fragment_id, principal=who)
        old = self.store.version(fragment_id, to)
        if old is None:
            raise NotFound(f"{fragment_id} has no version {to}")
        return self._write(fragment_id, old.content, actor=who, reason=reason or f"revert to v{to}")

    def set_status(self, fragment_id: str, status: str, *, actor: str | Principal | None = None,
                   reason: str) -> Fragment:
        """Archive or restore: a versioned change like any other."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if current.status == status:
            raise UserError(f"{fragment_id} is already {status}")
        return self._write(fragment_id, replace(current.content, status=status), actor=who, reason=reason)

    def archive(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str) -> Fragment:
        return self.set_status(fragment_id, "archived", actor=actor, reason=reason)

    def restore(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str) -> Fragment:
        return self.set_status(fragment_id, "active", actor=actor, reason=reason)

    def export_files(self, out: str | Path, *, force: bool = False, scope: Scope | str | None = None,
                     principal: str | Principal | None = None, progress: Progress | None = None) -> list[Path]:
        """Write fragments (archived too) as fragment files, ORG/REPO/ID.md under ``out``: every
        fragment, or those within ``scope`` that ``principal`` may see."""
        from .export.files import export_files

        return export_files(self._export_selection(scope, principal), Path(out), force=force, progress=progress)

    def preview_files(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None
                      ) -> list[tuple[str, str]]:
        """(relative path, text) of what ``export_files`` would write, without writing."""
        from .export.files import planned

        return planned(self._export_selection(scope, principal))

    def _export_selection(self, scope, principal) -> list[Fragment]:
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        who = self.principal(principal) if principal is not None else None
        return [f for f in self.store.fragments() if (within is None or within.contains(f.scope))
                and (who is None or who.can_see(f.scope, owner=f.owner))]

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

from .. import policy
from ..config import CONFIG_NAME, DB_NAME, DEFAULT_CONFIG, WorkspaceConfig, resolve_workspace
from ..errors import Conflict, NotFound, UserError, ValidationError, WorkspaceMissing
from ..ingest.files import normalise_body, parse_fragment, render_fragment
from ..ingest.importer import Progress, check_semantics, guard_secrets, ingest_files
from ..models import Content, Fragment, IngestReport, Principal, Scope, Version
from ..store import Store
from .curation import CurateMixin, GraphMixin
from .exports import ExportMixin
from .ingest_git import GitMixin
from .staleness import StaleMixin
from .search import EvalMixin, RetrievalMixin
from ..store.store import utcnow


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

    def release_requested(self) -> bool:
        """Whether another process is waiting for the workspace this one holds."""
        return self.store.release_requested()

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
        if fragment is None or not policy.may(principal, "read", fragment):
            raise NotFound(f"unknown fragment {fragment_id!r}")
        return fragment

    # -- reads ------------------------------------------------------------------------

    def list(self, *, principal: str | Principal | None = None, owner: str | None = None,
             kind: str | None = None, scope: Scope | str | None = None,
             include_archived: bool = False, servable: bool = False) -> list[Fragment]:
        """Fragments the principal may see, filtered. ``scope`` keeps those within it; ``servable``
        leaves out what is never served to agents (stored with a secret-guard override)."""
        who = self.principal(principal)
        if owner is not None and owner not in self.config.principals:
            raise NotFound(f"unknown owner {owner!r} (known: {', '.join(sorted(self.config.principals))})")
        if kind is not None:
            from ..models import KINDS
            if kind not in KINDS:
                raise UserError(f"unknown kind {kind!r} (valid: {', '.join(KINDS)})")
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        rows = self.store.fragments(owner=owner, kind=kind, within=within,
                                    status=None if include_archived else "active")
        withheld = self.store.secret_flagged() if servable else set()
        return [f for f in rows if policy.sees(who, f) and f.id not in withheld]

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
        if old is None or not policy.sees(who, old.content):  # an invisible version answers like a missing one
            raise NotFound(f"{fragment_id} has no version {version}")
        return Fragment(id=fragment_id, version=old.number, content=old.content, content_hash=old.content_hash,
                        created_at=current.created_at, updated_at=old.created_at, verified_at=None)

    def history(self, fragment_id: str, *, principal: str | Principal | None = None) -> list[Version]:
        """Every version; one written while the fragment was in a scope the viewer cannot see
        keeps its number, author and time, but its title, reason and content are withheld."""
        from ..retrieval.results import History

        who = self.principal(principal)
        self.get(fragment_id, principal=who)
        return History([v if policy.sees(who, v.content) else v.withheld() for v in self.store.versions(fragment_id)])

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

    def ingest(self, paths: Iterable[str | Path], *, actor: str | Principal | None = None,
               reason: str | None = None, progress: Progress | None = None, allow_secret: bool = False,
               dry_run: bool = False) -> IngestReport:
        """Import fragment files as ``actor`` (the author of every version written). Each file is
        validated and authorized like any write; a file that fails is reported and skipped."""
        who = self.principal(actor)
        report = ingest_files(self.store, self.config, paths, actor=who, reason=reason, progress=progress,
                              allow_secret=allow_secret, dry_run=dry_run)
        changed = report.added + report.updated
        if changed and not dry_run:  # near-duplicates the actor can see are reported at ingest
            for pair in self.dedupe(principal=who, only=changed):
                report.warnings.append({"file": pair["b"] if pair["b"] in changed else pair["a"],
                                        "message": f"near-duplicate: {pair['a']} and {pair['b']} "
                                                   f"(SimHash distance {pair['distance']}); see `workbench dedupe`"})
        return report

    def _write(self, fragment_id: str, content: Content, *, actor: Principal, reason: str,
               base: int | None = None, overrides: list[dict] | None = None) -> Fragment:
        """The one way a single version is written: reason, authorization, the base version rule,
        the secret guard's overrides, then the version (author = the actor), in one transaction."""
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change (--reason TEXT)")
        with self.store.transaction():
            current = self.store.get(fragment_id)
            policy.require_write(actor, current, content, principals=self.config.principals)
            if base is not None:
                self._check_base(fragment_id, current, base)
            if current is not None and content.content_hash() == current.content_hash:
                raise UserError(f"no change: {fragment_id} already has this content (v{current.version})")
            at = utcnow()
            number = self.store.append_version(fragment_id, content, author=actor.name, reason=reason.strip(), at=at)
            if overrides:
                self.store.put_secret_override(fragment_id, number, actor.name, at, overrides)
            return self.store.get(fragment_id)

    def _check_base(self, fragment_id: str, current: Fragment | None, base: int) -> None:
        """Refuse a change made from version ``base`` when the fragment has moved on since."""
        if current is None or current.version == base:
            return
        if base > current.version or base < 1:
            raise Conflict(f"{fragment_id} has no version {base} to start from (latest is v{current.version})")
        later = [v for v in self.store.versions(fragment_id) if v.number > base]
        who = ", ".join(dict.fromkeys(v.author for v in later))
        last = later[-1]
        raise Conflict(f"{fragment_id} changed since v{base}, which this edit started from: now v{current.version}, "
                       f"by {who} (last at {last.created_at.replace(microsecond=0).isoformat()}Z: {last.reason!r}); "
                       f"nothing saved. See `workbench diff {fragment_id} {base} {current.version}`, then reapply "
                       "your change to the latest version")

    def edit(self, fragment_id: str, text: str, *, reason: str, actor: str | Principal | None = None,
             file: str = "<edit>", allow_secret: bool = False, base: int | None = None) -> Fragment:
        """Replace the body (plain markdown) or the whole fragment (front matter + body). ``base`` is
        the version the change was made from: when the fragment has moved on since, nothing is saved
        and ``Conflict`` names who changed it."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change (--reason TEXT)")
        if base is not None and (isinstance(base, bool) or not isinstance(base, int)):
            raise UserError(f"--base must be a version number, not {base!r}")
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
        guard_secrets(content, file=file, allow=allow_secret, overrides=overrides)
        return self._write(fragment_id, content, actor=who, reason=reason, base=base, overrides=overrides)

    def revert(self, fragment_id: str, to: int, *, actor: str | Principal | None = None,
               reason: str | None = None, base: int | None = None) -> Fragment:
        """Append a version whose content equals version ``to`` (a version the actor may see)."""
        who = self.principal(actor)
        old = self.get(fragment_id, version=to, principal=who)
        return self._write(fragment_id, old.content, actor=who, reason=reason or f"revert to v{to}", base=base)

    def set_status(self, fragment_id: str, status: str, *, actor: str | Principal | None = None,
                   reason: str, base: int | None = None) -> Fragment:
        """Archive or restore: a versioned change like any other."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if current.status == status:
            raise UserError(f"{fragment_id} is already {status}")
        return self._write(fragment_id, replace(current.content, status=status), actor=who, reason=reason, base=base)

    def archive(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str,
                base: int | None = None) -> Fragment:
        return self.set_status(fragment_id, "archived", actor=actor, reason=reason, base=base)

    def restore(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str,
                base: int | None = None) -> Fragment:
        return self.set_status(fragment_id, "active", actor=actor, reason=reason, base=base)

    def export_files(self, out: str | Path, *, force: bool = False, scope: Scope | str | None = None,
                     principal: str | Principal | None = None, progress: Progress | None = None,
                     allow_secret: bool = False) -> list[Path]:
        """Write the fragments (archived too) that ``principal`` may see, within ``scope``, as
        fragment files ORG/REPO/ID.md under ``out``. Fragments stored with a secret-guard
        override are left out unless ``allow_secret``."""
        from ..export.files import export_files

        who = self.principal(principal)
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        return export_files(self._export_selection(within, who, allow_secret), Path(out), force=force,
                            progress=progress, meta={"principal": who.name, "scope": str(within) if within else None})

    def preview_files(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
                      allow_secret: bool = False) -> list[tuple[str, str]]:
        """(relative path, text) of what ``export_files`` would write, without writing."""
        from ..export.files import planned

        return planned(self._export_selection(scope, principal, allow_secret))

    def _export_selection(self, scope, principal, allow_secret: bool = False) -> list[Fragment]:
        """What an export may contain: only what the (explicit or default) principal may see."""
        within = Scope.parse(scope) if isinstance(scope, str) else scope
        who = self.principal(principal)
        withheld = set() if allow_secret else self.store.secret_flagged()
        return [f for f in self.store.fragments() if (within is None or within.contains(f.scope))
                and policy.may(who, "export", f) and f.id not in withheld]

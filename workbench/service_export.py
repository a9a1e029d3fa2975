"""The export half of ``Workbench``: curated sets, reproducible bundles, agent context files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from . import policy
from .errors import NotFound, PermissionDenied, UserError
from .models import Fragment, IngestReport, Principal, Scope
from .store.store import utcnow

DEFAULT_AGENT_BUDGET = 8000


class ExportMixin:
    # -- curated sets -------------------------------------------------------------------

    def _set(self, name: str, who: Principal, action: str = "read-set") -> dict[str, Any]:
        """A set the principal may read (or change); any other answers like an unknown name, and
        the list of known names holds only sets the principal may read."""
        found = self.store.get_set(name)
        if found is None or not policy.may(who, "read-set", found):
            readable = [n for n in self.store.set_names() if policy.may(who, "read-set", self.store.get_set(n))]
            raise NotFound(f"unknown set {name!r} (known: {', '.join(readable) or 'none yet'})")
        policy.require(who, action, found)
        return found

    def set_create(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                   query: str | None = None) -> dict[str, Any]:
        import re

        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name):
            raise UserError(f"bad set name {name!r}: use lower-case letters, digits, '.', '_' and '-'")
        existing = self.store.get_set(name)
        if existing is not None:
            if not policy.may(who, "read-set", existing):
                raise UserError(f"set name {name!r} is not available: choose another name")
            raise UserError(f"a set named {name!r} already exists")
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem)
        if not policy.sees_scope(who, where):
            raise PermissionDenied(f"{who.name} may not define a set in {where}")
        if query is not None and (not query.strip() or len(query) > 2000):
            raise UserError("--query must be non-empty text of at most 2000 characters")
        with self.store.transaction():
            self.store.put_set(name, who.name, str(where), query, utcnow())
            self.store.add_event("set-create", actor=who.name, detail={"set": name, "scope": str(where),
                                                                      "query": query})
        return self.set_show(name, principal=who)

    def set_change(self, name: str, fragment_id: str, *, include: bool, actor: str | Principal | None = None
                   ) -> dict[str, Any]:
        """Add (include) or remove (exclude) a fragment by hand."""
        who = self.principal(actor)
        self._set(name, who, "change-set")
        self.get(fragment_id, principal=who)
        with self.store.transaction():
            self.store.put_member(name, fragment_id, "include" if include else "exclude")
            self.store.add_event("set-add" if include else "set-remove", actor=who.name, fragment_id=fragment_id,
                                 detail={"set": name})
        return self.set_show(name, principal=who)

    def set_fragments(self, name: str, *, principal: str | Principal | None = None) -> list[Fragment]:
        """The set's members: the scope (or the query's hits in it) plus includes, minus excludes,
        active and visible to both the set's owner and the caller."""
        from .retrieval.index import applies

        viewer = self.principal(principal)
        found = self._set(name, viewer)
        owner = self.principal(found["owner"])
        where = Scope.parse(found["scope"])
        if found["query"]:
            result = self.search(found["query"], principal=owner, scope=where, k=50, trace=False)
            base = [h.id for h in result.hits + result.avoid]
        else:
            base = [f.id for f in self.store.fragments(status="active")
                    if f.scope.org == where.org and applies(f.scope, where)]
        ids = [i for i in dict.fromkeys([*base, *found["include"]]) if i not in set(found["exclude"])]
        fragments = {f.id: f for f in self.store.fragments(status="active", ids=ids)}
        return [fragments[i] for i in sorted(fragments)
                if policy.sees(owner, fragments[i]) and policy.may(viewer, "export", fragments[i])]

    def set_show(self, name: str, *, principal: str | Principal | None = None) -> dict[str, Any]:
        who = self.principal(principal)
        found = self._set(name, who)
        members = self.set_fragments(name, principal=who)
        visible = lambda ids: [i for i in ids if i in {f.id for f in members}]  # noqa: E731 - hand-picked, seen
        return {"name": found["name"], "owner": found["owner"], "scope": Scope.parse(found["scope"]).to_dict(),
                "query": found["query"], "include": visible(found["include"]),
                "exclude": [i for i in found["exclude"] if self._sees_id(who, i)],
                "fragments": [{"id": f.id, "version": f.version, "title": f.title, "kind": f.kind} for f in members]}

    def _sees_id(self, who: Principal, fragment_id: str) -> bool:
        f = self.store.get(fragment_id)
        return f is not None and policy.sees(who, f)

    # -- bundles ------------------------------------------------------------------------

    def export_bundle(self, set_name: str, out: str | Path, *, principal: str | Principal | None = None,
                      force: bool = False, allow_secret: bool = False) -> dict[str, Any]:
        """Write the set as ``principal`` sees it (explicit, $WORKBENCH_PRINCIPAL or the default).
        A fragment with a version the principal may not see, or stored with a secret-guard override
        (unless ``allow_secret``), is left out: ``omitted`` counts them."""
        from .export import bundle
        from .ingest.chunking import CHUNKER_VERSION as GIT_CHUNKER
        from .retrieval.embedder import MODEL_NAME
        from .retrieval.index import CHUNKER_VERSION

        who = self.principal(principal)
        found = self._set(set_name, who)
        withheld = set() if allow_secret else self.store.secret_flagged()
        records, omitted = [], 0
        for f in self.set_fragments(set_name, principal=who):
            versions = self.store.versions(f.id)
            if f.id in withheld or not all(policy.sees(who, v.content) for v in versions):
                omitted += 1
                continue
            records.append(bundle.record(f, versions))
        definition = {"name": found["name"], "owner": found["owner"], "scope": found["scope"],
                      "query": found["query"], "include": [i for i in found["include"] if self._sees_id(who, i)],
                      "exclude": [i for i in found["exclude"] if self._sees_id(who, i)]}
        manifest = bundle.write(Path(out), records, definition, model=MODEL_NAME,
                                chunker=f"{CHUNKER_VERSION}; git: {GIT_CHUNKER}", force=force)
        return {**manifest, "omitted": omitted}

    def import_bundle(self, folder: str | Path, *, actor: str | Principal | None = None,
                      allow_secret: bool = False, dry_run: bool = False) -> IngestReport:
        """Restore a bundle's fragments with their versions, as ``actor`` (the author of every version
        written; each version's claimed author stays in its reason). The checksum first, then every
        record is checked as a write (see ingest/bundles.py): any problem refuses the whole bundle
        and nothing is written. The import is recorded as an event."""
        from .errors import Conflict
        from .export import bundle
        from .ingest.bundles import plan_import
        from .store.store import VersionWrite

        who = self.principal(actor)
        manifest, records = bundle.read(Path(folder))
        checksum = manifest["checksum"]["value"]
        ids = [r["id"] for r in records if isinstance(r, dict) and isinstance(r.get("id"), str)]
        currents = {f.id: f for f in self.store.fragments(ids=ids)} if ids else {}
        histories = {fid: self.store.versions(fid) for fid in currents}
        plan = plan_import(records, config=self.config, actor=who, currents=currents, histories=histories,
                           checksum=checksum, allow_secret=allow_secret, now=utcnow())
        if plan.problems:
            shown = "; ".join(plan.problems[:5]) + (f" (and {len(plan.problems) - 5} more)"
                                                    if len(plan.problems) > 5 else "")
            raise Conflict(f"{folder}: bundle refused, nothing imported: {shown}")
        report = IngestReport(unchanged=list(plan.unchanged))
        for item in plan.fragments:
            (report.added if item.new else report.updated).append(item.id)
        if dry_run:
            return report
        with self.store.transaction():
            for item in plan.fragments:
                writes = [VersionWrite(item.id, v.number, v.content, who.name, v.reason, v.at,
                                       item.created_at if item.new else None,
                                       item.verified_at if v is item.versions[-1] else None, "bundle")
                          for v in item.versions]
                self.store.import_history(writes)
                for number, found in sorted(item.overrides.items()):
                    self.store.put_secret_override(item.id, number, who.name, utcnow(), found)
            self.store.add_event("import-bundle", actor=who.name,
                                 detail={"bundle": str(folder), "checksum": checksum, "added": len(report.added),
                                         "updated": len(report.updated), "unchanged": len(report.unchanged),
                                         "versions": sum(len(i.versions) for i in plan.fragments)})
        return report

    # -- agent context files -------------------------------------------------------------

    def agent_selection(self, *, scope: Scope | str, principal: str | Principal | None = None,
                        set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, now: datetime | None = None,
                        allow_secret: bool = False):
        """Pins and anti-patterns always; the rest ranked by authority then freshness, fitted to the budget.
        Only what ``principal`` may see; fragments stored with a secret-guard override only with
        ``allow_secret``."""
        from .export.agents import Selection, _item_md
        from .retrieval.embedder import count_tokens_many
        from .retrieval.index import applies

        who = self.principal(principal)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem)
        if budget <= 0:
            raise UserError("--budget must be a positive number of tokens")
        if not policy.sees_scope(who, where):
            raise PermissionDenied(f"{who.name} may not see {where}: nothing to export")
        now = now or utcnow()
        withheld = set() if allow_secret else self.store.secret_flagged()
        exportable = lambda f: policy.may(who, "export", f) and f.id not in withheld  # noqa: E731
        if set_name is not None:
            pool = [f for f in self.set_fragments(set_name, principal=who) if exportable(f)]
        else:
            pool = [f for f in self.store.fragments(status="active")
                    if f.scope.org == where.org and applies(f.scope, where) and exportable(f)]
        pin_ids = self.applicable_pins(who, where, now)
        pins = [f for f in self.store.fragments(status="active", ids=pin_ids)
                if exportable(f) and f.kind != "anti-pattern"]
        pins.sort(key=lambda f: pin_ids.index(f.id))
        avoid_ids = {f.id for f in pool if f.kind == "anti-pattern"} | {
            i for i in pin_ids if any(f.id == i and f.kind == "anti-pattern" for f in pool)}
        avoid = sorted((f for f in self.store.fragments(status="active", ids=list(avoid_ids))
                        if exportable(f)), key=lambda f: f.id)
        index = self.search_index()
        ranks = index.authority_for(index.visible(who))  # PageRank over what this principal sees
        authority = {fid: float(ranks[i]) for fid, i in index.pos.items()} if index.ids else {}
        taken = {f.id for f in pins} | {f.id for f in avoid}
        rest = sorted((f for f in pool if f.id not in taken),
                      key=lambda f: (-authority.get(f.id, 0.0), -(f.verified_at or f.updated_at).timestamp(), f.id))
        texts = [_item_md(f) for f in pins] + [_item_md(f) for f in avoid] + [_item_md(f) for f in rest]
        counts = count_tokens_many(texts)
        used = sum(counts[:len(pins) + len(avoid)])
        knowledge = []
        for f, n in zip(rest, counts[len(pins) + len(avoid):]):
            if used + n <= budget:
                knowledge.append(f)
                used += n
        return Selection(title=f"{self.config.name}: {where}", scope=str(where), pins=pins, avoid=avoid,
                         knowledge=knowledge, omitted=len(rest) - len(knowledge))

    def render_agents(self, fmt: str, *, scope: Scope | str, principal: str | Principal | None = None,
                      set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, allow_secret: bool = False):
        """(files {relative path: text}, selection) for an agent context format, without writing."""
        from .export.agents import renderer

        render = renderer(fmt)
        selection = self.agent_selection(scope=scope, principal=principal, set_name=set_name, budget=budget,
                                         allow_secret=allow_secret)
        return render(selection), selection

    def export_agents(self, fmt: str, out: str | Path, *, scope: Scope | str, principal: str | Principal | None = None,
                      set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, force: bool = False
                      ) -> dict[str, Any]:
        from .export.agents import renderer
        from .export.writer import check_folder, write_tree

        renderer(fmt)
        folder = Path(out)
        check_folder(folder, force=force)  # before the selection: a refusal costs nothing
        files, selection = self.render_agents(fmt, scope=scope, principal=principal, set_name=set_name, budget=budget)
        write_tree(folder, sorted(files.items()), force=force)
        return {"format": fmt, "dir": str(folder), "files": sorted(files), "pins": len(selection.pins),
                "avoid": len(selection.avoid), "knowledge": len(selection.knowledge), "omitted": selection.omitted}

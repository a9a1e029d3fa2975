"""The export half of ``Workbench``: curated sets, reproducible bundles, agent context files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import NotFound, PermissionDenied, UserError
from .models import Fragment, IngestReport, Principal, Scope
from .store.store import utcnow

DEFAULT_AGENT_BUDGET = 8000


class ExportMixin:
    # -- curated sets -------------------------------------------------------------------

    def _set(self, name: str) -> dict[str, Any]:
        found = self.store.get_set(name)
        if found is None:
            known = ", ".join(self.store.set_names()) or "none yet"
            raise NotFound(f"unknown set {name!r} (known: {known})")
        return found

    def set_create(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                   query: str | None = None) -> dict[str, Any]:
        import re

        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name):
            raise UserError(f"bad set name {name!r}: use lower-case letters, digits, '.', '_' and '-'")
        if self.store.get_set(name) is not None:
            raise UserError(f"a set named {name!r} already exists")
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem)
        if not who.can_see(where):
            raise PermissionDenied(f"{who.name} may not define a set in {where}")
        with self.store.transaction():
            self.store.put_set(name, who.name, str(where), query, utcnow())
            self.store.add_event("set-create", actor=who.name, detail={"set": name, "scope": str(where),
                                                                      "query": query})
        return self.set_show(name, principal=who)

    def set_change(self, name: str, fragment_id: str, *, include: bool, actor: str | Principal | None = None
                   ) -> dict[str, Any]:
        """Add (include) or remove (exclude) a fragment by hand."""
        who = self.principal(actor)
        found = self._set(name)
        if who.name != found["owner"] and not who.leads(Scope.parse(found["scope"])):
            raise PermissionDenied(f"only the owner of set {name!r} ({found['owner']}) or a lead of its scope may "
                                   "change it")
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

        found = self._set(name)
        owner = self.principal(found["owner"])
        viewer = self.principal(principal) if principal is not None else owner
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
                if owner.can_see(fragments[i].scope, owner=fragments[i].owner)
                and viewer.can_see(fragments[i].scope, owner=fragments[i].owner)]

    def set_show(self, name: str, *, principal: str | Principal | None = None) -> dict[str, Any]:
        found = self._set(name)
        members = self.set_fragments(name, principal=principal)
        return {"name": found["name"], "owner": found["owner"], "scope": Scope.parse(found["scope"]).to_dict(),
                "query": found["query"], "include": found["include"], "exclude": found["exclude"],
                "fragments": [{"id": f.id, "version": f.version, "title": f.title, "kind": f.kind} for f in members]}

    # -- bundles ------------------------------------------------------------------------

    def export_bundle(self, set_name: str, out: str | Path, *, force: bool = False) -> dict[str, Any]:
        from .export import bundle
        from .ingest.chunking import CHUNKER_VERSION as GIT_CHUNKER
        from .retrieval.embedder import MODEL_NAME
        from .retrieval.index import CHUNKER_VERSION

        found = self._set(set_name)
        members = self.set_fragments(set_name)
        records = [bundle.record(f, self.store.versions(f.id)) for f in members]
        definition = {"name": found["name"], "owner": found["owner"], "scope": found["scope"],
                      "query": found["query"], "include": found["include"], "exclude": found["exclude"]}
        return bundle.write(Path(out), records, definition, model=MODEL_NAME,
                            chunker=f"{CHUNKER_VERSION}; git: {GIT_CHUNKER}", force=force)

    def import_bundle(self, folder: str | Path, *, actor: str | None = None) -> IngestReport:
        """Restore a bundle's fragments with their versions (checksum first: a bad bundle writes nothing)."""
        from .export import bundle
        from .ingest.files import parse_timestamp
        from .ingest.importer import check_semantics
        from .models import Content
        from .store.store import VersionWrite

        _, records = bundle.read(Path(folder))
        report = IngestReport()
        known = self.store.hashes()
        for r in records:  # validate everything before writing anything
            content = Content.from_dict(r["versions"][-1]["content"])
            probe = type("Probe", (), {"content": content, "file": f"{folder}:{r['id']}"})()
            check_semantics(probe, self.config)
        now = utcnow()
        with self.store.transaction():
            for r in records:
                final = r["versions"][-1]
                current = known.get(r["id"])
                if current is None:
                    self.store.import_history(r["id"], r["versions"], created_at=parse_timestamp(r["created_at"]),
                                              verified_at=parse_timestamp(r["verified_at"]))
                    report.added.append(r["id"])
                elif current[0] == final["content_hash"]:
                    report.unchanged.append(r["id"])
                else:
                    self.store.write_versions([VersionWrite(r["id"], current[1] + 1, Content.from_dict(final["content"]),
                                                            actor or final["author"], f"import bundle {folder}", now)])
                    report.updated.append(r["id"])
            if report.added or report.updated:
                self.store.add_event("import-bundle", actor=actor, detail={"bundle": str(folder),
                                                                           "added": len(report.added),
                                                                           "updated": len(report.updated)})
        return report

    # -- agent context files -------------------------------------------------------------

    def agent_selection(self, *, scope: Scope | str, principal: str | Principal | None = None,
                        set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, now: datetime | None = None):
        """Pins and anti-patterns always; the rest ranked by authority then freshness, fitted to the budget."""
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
        if not who.can_see(where):
            raise PermissionDenied(f"{who.name} may not see {where}: nothing to export")
        now = now or utcnow()
        if set_name is not None:
            pool = self.set_fragments(set_name, principal=who)
        else:
            pool = [f for f in self.store.fragments(status="active")
                    if f.scope.org == where.org and applies(f.scope, where) and who.can_see(f.scope, owner=f.owner)]
        pin_ids = self.applicable_pins(who, where, now)
        pins = [f for f in self.store.fragments(status="active", ids=pin_ids)
                if who.can_see(f.scope, owner=f.owner) and f.kind != "anti-pattern"]
        pins.sort(key=lambda f: pin_ids.index(f.id))
        avoid_ids = {f.id for f in pool if f.kind == "anti-pattern"} | {
            i for i in pin_ids if any(f.id == i and f.kind == "anti-pattern" for f in pool)}
        avoid = sorted((f for f in self.store.fragments(status="active", ids=list(avoid_ids))
                        if who.can_see(f.scope, owner=f.owner)), key=lambda f: f.id)
        index = self.search_index()
        authority = {fid: float(index.authority[i]) for fid, i in index.pos.items()} if index.ids else {}
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
                      set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET):
        """(files {relative path: text}, selection) for an agent context format, without writing."""
        from .export.agents import renderer

        render = renderer(fmt)
        selection = self.agent_selection(scope=scope, principal=principal, set_name=set_name, budget=budget)
        return render(selection), selection

    def export_agents(self, fmt: str, out: str | Path, *, scope: Scope | str, principal: str | Principal | None = None,
                      set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, force: bool = False
                      ) -> dict[str, Any]:
        from .export.agents import renderer

        renderer(fmt)
        folder = Path(out)
        if folder.exists() and not folder.is_dir():
            raise UserError(f"{folder} is not a folder")
        if folder.is_dir() and any(folder.iterdir()) and not force:
            raise UserError(f"{folder} is not empty (use --force to write into it)")
        files, selection = self.render_agents(fmt, scope=scope, principal=principal, set_name=set_name, budget=budget)
        for relative, text in sorted(files.items()):
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return {"format": fmt, "dir": str(folder), "files": sorted(files), "pins": len(selection.pins),
                "avoid": len(selection.avoid), "knowledge": len(selection.knowledge), "omitted": selection.omitted}

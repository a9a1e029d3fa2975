"""Exports: fragment files, curated sets, reproducible bundles, agent context files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from .. import policy
from ..errors import NotFound, PermissionDenied, UserError
from ..ingest.importer import Progress
from ..models import Fragment, IngestReport, Principal, Scope
from ..models import utcnow
from .curation import session_declared
from .fragments import Fragments
from .receipts import as_served, received_via
from .search import Retrieval
from .workspace import Feature, Workspace

DEFAULT_AGENT_BUDGET = 8000


class Exports(Feature):
    """Fragment files, curated sets, reproducible bundles and agent context files."""

    def __init__(self, ws: Workspace, fragments: Fragments, retrieval: Retrieval):
        super().__init__(ws)
        self.fragments = fragments
        self.retrieval = retrieval
        self.publishing = None   # Publishing sets itself here: a published set's change makes its next version

    # -- fragment files -------------------------------------------------------------------

    def export_files(self, out: str | Path, *, force: bool = False, scope: Scope | str | None = None,
                     principal: str | Principal | None = None, progress: Progress | None = None,
                     allow_secret: bool = False) -> list[Path]:
        """Write the fragments (archived too) that ``principal`` may see, within ``scope``, as
        fragment files ORG/REPO/ID.md under ``out``, or back to the file under ``out`` an ingest
        took a fragment from (its sync base moves: see ``_move_bases``). Fragments stored with a
        secret-guard override are left out unless ``allow_secret``."""
        from ..export.files import export_files, own_files

        who = self.principal(principal)
        within = Scope.coerce(scope)
        chosen = self._export_selection(within, who, allow_secret)
        own = own_files(Path(out), self.store.ingested_files())
        written = export_files(chosen, Path(out), force=force, progress=progress, own=own,
                               meta={"principal": who.name, "scope": str(within) if within else None})
        self._move_bases(chosen, own, {str(path): text for path, text in written}, Path(out))
        return [path for path, _ in written]

    def _move_bases(self, chosen: list[Fragment], own: dict[str, tuple[str, str, str]], texts: dict[str, str],
                    out: Path) -> None:
        """Each fragment written back to its own file (``own``) is in step with it now: its sync base
        and the file's ingested row move to what was written, so the next ingest finds it unchanged
        (ingest/sync.py). A fragment that had no base (never in step with a file) takes the file
        written for it as its first. A copy of any other fragment moves nothing. A file whose text
        the export made inert is left for the next ingest to compare."""
        import hashlib

        from ..export.files import place
        from ..ingest.files import render_fragment

        places = {fid: where[0] for fid, where in own.items()}
        based = self.store.sync_bases([f.id for f in chosen if f.id not in own])
        bases, files = [], []
        for f in chosen:
            if f.id not in own and f.id in based:
                continue
            target = out / place(f, places)
            text = texts.get(str(target))
            if text is None or text != render_fragment(f):
                continue
            real = own[f.id][1] if f.id in own else str(target.resolve())
            bases.append((f.id, f.content_hash, real))
            if f.id in own:
                files.append((real, hashlib.sha256(text.encode("utf-8")).hexdigest(), f.id, f.content_hash))
        if bases and not getattr(self.store, "read_only", False):
            now = utcnow()
            with self.store.transaction():
                self.store.put_sync_bases(bases, now)
                self.store.put_ingested_files(files, now)

    def preview_files(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
                      allow_secret: bool = False) -> list[tuple[str, str]]:
        """(relative path, text) of what ``export_files`` would write, without writing."""
        from ..export.files import planned

        return planned(self._export_selection(scope, principal, allow_secret))

    def _export_selection(self, scope, principal, allow_secret: bool = False) -> list[Fragment]:
        """What an export may contain: only what the (explicit or default) principal may see, active
        or archived (a proposal is not knowledge yet: never exported)."""
        within = Scope.coerce(scope)
        who = self.principal(principal)
        withheld = set() if allow_secret else self.store.secret_flagged()
        return [f for f in self.store.fragments() if f.status in ("active", "archived")   # not what it receives:
                and (within is None or within.contains(f.scope)) and policy.may(who, "export", f)  # files are
                and policy.member_sees(who, f) and f.id not in withheld]                            # its own

    # -- curated sets -------------------------------------------------------------------

    def _set(self, ref: str, who: Principal, action: str = "read-set") -> dict[str, Any]:
        """A set the principal may read (or change), by name; ``NAME@SCOPE`` picks one when the
        principal reads sets of that name in several scopes (sets are named within their scope). Any
        other answers like an unknown name, and the names listed are those of sets it may read."""
        name, _, scope = ref.partition("@") if isinstance(ref, str) else (ref, "", "")
        try:
            where = str(Scope.parse(scope)) if scope else None
        except UserError:
            where = ""
        found = [s for s in self.store.sets_named(name, where) if policy.may(who, "read-set", s)] \
            if isinstance(name, str) and where != "" else []
        if not found:
            raise NotFound(f"unknown set {ref!r} (known: {', '.join(self._readable(who)) or 'none yet'})")
        if len(found) > 1:
            raise UserError(f"you read more than one set named {name!r}: name one as "
                            + " or ".join(f"{name}@{s['scope']}" for s in found), param="name")
        policy.require(who, action, found[0])
        return found[0]

    def _readable(self, who: Principal) -> list[str]:
        """The names of the sets ``who`` may read (``NAME@SCOPE`` where it reads two of one name)."""
        rows = [{"name": n, "scope": s, "owner": o} for n, s, o in self.store.set_names()]
        mine = [r for r in rows if policy.may(who, "read-set", r)]
        names = [r["name"] for r in mine]
        return [r["name"] if names.count(r["name"]) == 1 else f"{r['name']}@{r['scope']}" for r in mine]

    def set_create(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                   query: str | None = None, picked: bool = False) -> dict[str, Any]:
        """Define a set in ``scope`` (one the actor can see): all of the scope (or ``query``'s hits in
        it) plus includes, minus excludes; or, ``picked``, exactly the fragments included by hand
        (``set add``), which is what a curated context to publish wants. Sets are named within their
        scope: a name taken by a set the actor may read is refused; one taken only where the actor
        cannot see answers exactly as a free name does (a second set of that name is made, in this scope)."""
        import re

        who = self.principal(actor)
        where = Scope.coerce(scope)
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", name):
            raise UserError(f"bad set name {name!r}: use lower-case letters, digits, '.', '_' and '-'")
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem)
        policy.require(who, "create-set", where)
        taken = [s for s in self.store.sets_named(name) if policy.may(who, "read-set", s)]
        if taken:
            raise UserError(f"a set named {name!r} already exists (in {taken[0]['scope']})")
        if query is not None and (not query.strip() or len(query) > 2000):
            raise UserError("the query must be non-empty text of at most 2000 characters", param="query")
        if not isinstance(picked, bool):
            raise UserError("picked is true or false", param="picked")
        if picked and query is not None:
            raise UserError("a picked set holds only the fragments included by hand: it takes no query",
                            param="query")
        with self.store.transaction():
            self.store.put_set(name, who.name, str(where), query, utcnow(), picked)
            self.store.add_event("set-create", actor=who.name, detail={"set": name, "scope": str(where),
                                                                      "query": query, "picked": picked})
        return self.set_show(f"{name}@{where}", principal=who)

    def set_change(self, name: str, fragment_id: str, *, include: bool, actor: str | Principal | None = None
                   ) -> dict[str, Any]:
        """Add (include) or remove (exclude) a fragment by hand."""
        who = self.principal(actor)
        found = self._set(name, who, "change-set")
        self.fragments.get(fragment_id, principal=who)
        with self.store.transaction():
            self.store.put_member(found["name"], found["scope"], fragment_id, "include" if include else "exclude")
            self.store.add_event("set-add" if include else "set-remove", actor=who.name, fragment_id=fragment_id,
                                 detail={"set": found["name"], "scope": found["scope"]})
            if self.publishing is not None:  # in the same transaction: a removed fragment stops crossing at once
                self.publishing.set_changed(found, who, "set-add" if include else "set-remove")
        return self.set_show(f"{found['name']}@{found['scope']}", principal=who)

    def set_fragments(self, name: str, *, principal: str | Principal | None = None) -> list[Fragment]:
        """The set's members: the scope (or the query's hits in it; nothing, for a picked set) plus
        includes, minus excludes, active and visible to both the set's owner and the caller."""
        from ..retrieval.index import applies

        viewer = self.principal(principal)
        found = self._set(name, viewer)
        owner = self.principal(found["owner"])
        where = Scope.parse(found["scope"])
        if found["picked"]:
            base = []
        elif found["query"]:
            result = self.retrieval.search(found["query"], principal=owner, scope=where, k=50, trace=False)
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
                "query": found["query"], "picked": found["picked"], "include": visible(found["include"]),
                "exclude": [i for i in found["exclude"] if self._sees_id(who, i)],
                "fragments": [{"id": f.id, "version": f.version, "title": f.title, "kind": f.kind} for f in members]}

    def _same_name(self, definition: dict[str, Any], who: Principal) -> dict[str, Any] | None:
        """The set here a bundle's set meets: of its name and scope, else of its name elsewhere,
        among the sets ``who`` may read (one it may not read is as if it were not there)."""
        readable = [s for s in self.store.sets_named(definition["name"]) if policy.may(who, "read-set", s)]
        try:
            scope = str(Scope.parse(definition["scope"])) if definition.get("scope") else None
        except UserError:
            scope = None
        return next((s for s in readable if s["scope"] == scope), readable[0] if readable else None)

    def _sees_id(self, who: Principal, fragment_id: str) -> bool:
        f = self.store.get(fragment_id)
        return f is not None and policy.sees(who, f)

    # -- bundles ------------------------------------------------------------------------

    def export_bundle(self, set_name: str, out: str | Path, *, principal: str | Principal | None = None,
                      force: bool = False, allow_secret: bool = False) -> dict[str, Any]:
        """Write the set as ``principal`` sees it (explicit, $WORKBENCH_PRINCIPAL or the default).
        A fragment with a version the principal may not see, or stored with a secret-guard override
        (unless ``allow_secret``), is left out: ``omitted`` counts them. The manifest carries the
        set's definition and the pins in force in a scope that applies to the set's scope (and that
        the principal can see) of the fragments written."""
        from ..export import bundle
        from ..ingest.chunking import CHUNKER_VERSION as GIT_CHUNKER
        from ..retrieval.embedder import MODEL_NAME
        from ..retrieval.index import CHUNKER_VERSION, applies

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
                      "query": found["query"], "picked": found["picked"],
                      "include": [i for i in found["include"] if self._sees_id(who, i)],
                      "exclude": [i for i in found["exclude"] if self._sees_id(who, i)]}
        where, written = Scope.parse(found["scope"]), {r["id"] for r in records}
        pins = [bundle.pin_record(p) for p in self.ws.index.pins(utcnow()) if p["fragment_id"] in written
                and policy.sees_scope(who, Scope.parse(p["scope"])) and applies(Scope.parse(p["scope"]), where)]
        manifest = bundle.write(Path(out), records, definition, model=MODEL_NAME,
                                chunker=f"{CHUNKER_VERSION}; git: {GIT_CHUNKER}", force=force, pins=pins)
        return {**manifest, "omitted": omitted}

    def import_bundle(self, folder: str | Path, *, actor: str | Principal | None = None,
                      allow_secret: bool = False, dry_run: bool = False) -> IngestReport:
        """Restore a bundle's fragments with their versions, as ``actor`` (the author of every version
        written; each version's claimed author stays in its reason), then its set and its pins.
        The manifest and every record are checked against the bundle schemas, then the checksum,
        then every record is checked as a write (see ingest/bundles.py): any problem refuses the
        whole bundle and nothing is written. The set is created (owned by ``actor``) only when no set
        of its name exists; an existing one is compared, never changed. Each pin is restored only if
        ``actor`` may pin in its scope; the others are reported, not written. The import, the set
        and each pin restored are recorded as events."""
        from ..errors import Conflict
        from ..export import bundle
        from ..ingest.bundles import BundleReport, check_manifest, check_shapes, plan_import, plan_pins, plan_set
        from ..store.rows import VersionWrite

        who = self.principal(actor)
        manifest, records = bundle.read(Path(folder))
        now = utcnow()
        problems = check_shapes(records) or check_manifest(manifest, records, now=now)
        if problems:
            raise Conflict(f"{folder}: bundle refused, nothing imported: {self._problems(problems)}")
        checksum = manifest["checksum"]["value"]
        ids = [r["id"] for r in records]
        currents = {f.id: f for f in self.store.fragments(ids=ids)} if ids else {}
        histories = {fid: self.store.versions(fid) for fid in currents}
        plan = plan_import(records, config=self.config, actor=who, currents=currents, histories=histories,
                           checksum=checksum, allow_secret=allow_secret, now=now)
        if plan.problems:
            raise Conflict(f"{folder}: bundle refused, nothing imported: {self._problems(plan.problems)}")
        after = dict(currents)  # each fragment of the bundle as it will be once imported
        for item in plan.fragments:
            last = item.versions[-1]
            old = currents.get(item.id)
            after[item.id] = Fragment(item.id, last.number, last.content, last.content.content_hash(),
                                      old.created_at if old else (item.created_at or item.versions[0].at), last.at,
                                      item.verified_at or (old.verified_at if old else None))
        set_plan = plan_set(manifest["set"], config=self.config, actor=who,
                            existing=self._same_name(manifest["set"], who),
                            present=lambda i: i in after or self._sees_id(who, i),
                            sees_local=lambda i: self._sees_id(who, i))
        pin_plans = plan_pins(manifest.get("pins") or [], config=self.config, actor=who, fragments=after,
                              local={(p["fragment_id"], p["scope"]) for p in self.store.pins()}, now=now,
                              declared=lambda session: session_declared(self.ws, who, session))
        report = BundleReport(unchanged=list(plan.unchanged), dry_run=dry_run, set_plan=set_plan,
                              pin_plans=pin_plans)
        for item in plan.fragments:
            (report.added if item.new else report.updated).append(item.id)
        if dry_run:
            return report
        restored_pins = [p for p in pin_plans if p.status == "restored"]
        with self.store.transaction():
            for item in plan.fragments:
                writes = [VersionWrite(item.id, v.number, v.content, who.name, v.reason, v.at,
                                       item.created_at if item.new else None,
                                       item.verified_at if v is item.versions[-1] else None, "bundle")
                          for v in item.versions]
                self.store.import_history(writes)
                for number, found in sorted(item.overrides.items()):
                    self.store.put_secret_override(item.id, number, who.name, utcnow(), found)
            if set_plan.status == "restored":
                self.store.put_set(set_plan.name, who.name, set_plan.scope, set_plan.query, now, set_plan.picked)
                for fid in set_plan.include:
                    self.store.put_member(set_plan.name, set_plan.scope, fid, "include")
                for fid in set_plan.exclude:
                    self.store.put_member(set_plan.name, set_plan.scope, fid, "exclude")
                self.store.add_event("set-create", actor=who.name,
                                     detail={"set": set_plan.name, "scope": set_plan.scope, "query": set_plan.query,
                                             "picked": set_plan.picked,
                                             "include": set_plan.include, "exclude": set_plan.exclude,
                                             "bundle": checksum, "claimed_owner": set_plan.claimed_owner})
            for pin in restored_pins:
                self.store.put_pin(pin.id, pin.scope, who.name, pin.pinned_at, pin.reason, pin.until)
                self.store.add_event("pin", actor=who.name, fragment_id=pin.id,
                                     detail={"scope": pin.scope, "reason": pin.reason,
                                             "until": pin.until.isoformat() if pin.until else None,
                                             "bundle": checksum, "claimed_by": pin.claimed_by,
                                             "pinned_at": pin.pinned_at.isoformat()})
            self.store.add_event("import-bundle", actor=who.name,
                                 detail={"bundle": str(folder), "checksum": checksum, "added": len(report.added),
                                         "updated": len(report.updated), "unchanged": len(report.unchanged),
                                         "versions": sum(len(i.versions) for i in plan.fragments),
                                         "set": set_plan.status, "pins": len(restored_pins)})
        return report

    @staticmethod
    def _problems(problems: list[str]) -> str:
        return "; ".join(problems[:5]) + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")

    # -- agent context files -------------------------------------------------------------

    def agent_selection(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
                        set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, now: datetime | None = None,
                        allow_secret: bool = False, context: str | None = None):
        """Pins and anti-patterns always; the rest ranked by authority then freshness, fitted to the budget
        (what does not fit is kept, best first, as ``optional``). Only what ``principal`` may see;
        fragments stored with a secret-guard override only with ``allow_secret``; never a fragment
        superseded by one the principal sees (``superseded`` counts them). ``context`` (ORG/CONTEXT):
        only the published context's fragments as the principal reads them (context_export.py), in
        the scope it applies in for the principal unless ``scope`` is given."""
        from ..export.agents import Selection, item, with_via
        from ..retrieval.index import applies
        from .context_export import context_members

        who = self.principal(principal)
        members = None
        if context is not None:
            applies_in, members = context_members(self.ws, context, who)
            scope = applies_in if scope is None else scope
        if scope is None:
            raise UserError("name a scope (or a published context) to export for", param="scope")
        where = Scope.coerce(scope)
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem)
        if budget <= 0:
            raise UserError("the budget must be a positive number of tokens", param="budget")
        if not policy.sees_scope(who, where):
            raise PermissionDenied(f"{who.name} may not see {where}: nothing to export")
        now = now or utcnow()
        withheld = set() if allow_secret else self.store.secret_flagged()
        superseded = set(self.retrieval.supersessions(who))  # only by fragments this principal sees
        exportable = lambda f: policy.may(who, "export", f) and f.id not in withheld  # noqa: E731
        if members is not None:
            pool = [f for f in members if exportable(f)]
        elif set_name is not None:
            pool = [f for f in self.set_fragments(set_name, principal=who) if exportable(f)]
        else:
            pool = [f for f in self.store.fragments(status="active")
                    if f.scope.org == where.org and applies(f.scope, where) and exportable(f)]
            pool += [f for f in self.store.fragments(status="active", ids=sorted({r.fragment_id for r in who.received}))
                     if f.scope.org != where.org and exportable(f) and any(   # received, where it applies
                         policy.receiving.received_within(r, where) for r in who.receipts(f.id))]
        pin_ids = self.retrieval.applicable_pins(who, where, now)
        if members is not None:   # a context's own pins only
            pin_ids = [i for i in pin_ids if i in {f.id for f in members}]
        pins = [f for f in self.store.fragments(status="active", ids=pin_ids)
                if exportable(f) and f.kind != "anti-pattern"]
        pins.sort(key=lambda f: pin_ids.index(f.id))
        avoid_ids = {f.id for f in pool if f.kind == "anti-pattern"} | {
            i for i in pin_ids if any(f.id == i and f.kind == "anti-pattern" for f in pool)}
        avoid = sorted((f for f in self.store.fragments(status="active", ids=list(avoid_ids))
                        if exportable(f)), key=lambda f: f.id)
        left_out = {f.id for f in (*pool, *pins, *avoid) if f.id in superseded}
        pool = [f for f in pool if f.id not in superseded]
        pins = [f for f in pins if f.id not in superseded]
        avoid = [f for f in avoid if f.id not in superseded]
        index = self.retrieval.search_index()
        ranks = index.authority_for(index.visible(who))  # PageRank over what this principal sees
        authority = {fid: float(ranks[i]) for fid, i in index.pos.items()} if index.ids else {}
        taken = {f.id for f in pins} | {f.id for f in avoid}
        rest = sorted((f for f in pool if f.id not in taken),
                      key=lambda f: (-authority.get(f.id, 0.0), -(f.verified_at or f.updated_at).timestamp(), f.id))
        counts = self.ws.index.tokens.count_many([item(f) for f in (*pins, *avoid, *rest)])
        used = sum(counts[:len(pins) + len(avoid)])
        knowledge, optional = [], []
        for f, n in zip(rest, counts[len(pins) + len(avoid):]):
            if used + n <= budget:
                knowledge.append(f)
                used += n
            else:
                optional.append(f)
        def served(fs: list) -> list:   # a received fragment as served, citing its context
            return [with_via(as_served(self.store, who, f), received_via(who, f)) for f in fs] if who.received else fs
        title = f"{self.config.name}: {where}" if context is None else f"{self.config.name}: {context} ({where})"
        return Selection(title=title, scope=str(where), pins=served(pins),
                         avoid=served(avoid), knowledge=served(knowledge), omitted=len(optional),
                         optional=tuple(served(optional)), superseded=len(left_out))

    def render_agents(self, fmt: str, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
                      set_name: str | None = None, budget: int = DEFAULT_AGENT_BUDGET, allow_secret: bool = False,
                      base_url: str | None = None, context: str | None = None):
        """(files {relative path: text}, selection) for an agent context format, without writing.
        ``base_url`` (llms-txt only) makes every link absolute; ``context``: a published context's
        fragments only (``agent_selection``)."""
        from ..export.agents import check_base_url, renderer

        render = renderer(fmt)
        if base_url is not None:
            if fmt != "llms-txt":
                raise UserError(f"a base URL applies to llms-txt only, not {fmt}", param="base_url")
            base_url = check_base_url(base_url)
        selection = self.agent_selection(scope=scope, principal=principal, set_name=set_name, budget=budget,
                                         allow_secret=allow_secret, context=context)
        return render(selection, base_url=base_url), selection

    def export_agents(self, fmt: str, out: str | Path, *, scope: Scope | str | None = None,
                      principal: str | Principal | None = None, set_name: str | None = None,
                      budget: int = DEFAULT_AGENT_BUDGET, force: bool = False, allow_secret: bool = False,
                      base_url: str | None = None, context: str | None = None) -> dict[str, Any]:
        """Write an agent context format into ``out`` and record it in ``out/.workbench-export.json``.
        A re-export of the format into the same folder replaces its files and removes the ones it no
        longer writes; a file workbench did not write (or that changed since) is never overwritten or
        removed without ``force``; any other file in ``out`` is left alone."""
        from ..export.agents import check_base_url, renderer
        from ..export.manifest import MANIFEST, check_export_folder, write_export

        renderer(fmt)
        if base_url is not None:
            check_base_url(base_url)
        folder = Path(out)
        check_export_folder(folder, force=force)  # before the selection: a refusal costs nothing
        who = self.principal(principal)
        files, selection = self.render_agents(fmt, scope=scope, principal=who, set_name=set_name, budget=budget,
                                              allow_secret=allow_secret, base_url=base_url, context=context)
        exported = [*selection.pins, *selection.avoid, *selection.knowledge, *selection.optional]
        newest = max((max(f.updated_at, f.verified_at or f.updated_at) for f in exported), default=None)
        meta = {"principal": who.name, "scope": selection.scope, "set": set_name, "budget": budget,
                "base_url": check_base_url(base_url) if base_url else None,
                "generated_at": newest.isoformat() + "Z" if newest else None, **({"context": context} if context else {})}
        written = write_export(folder, sorted(files.items()), kind=fmt, meta=meta, force=force)
        return {"format": fmt, "dir": str(folder), "files": written.files, "manifest": MANIFEST,
                "pruned": written.pruned, "pins": len(selection.pins), "avoid": len(selection.avoid),
                "knowledge": len(selection.knowledge), "omitted": selection.omitted,
                "superseded": selection.superseded}

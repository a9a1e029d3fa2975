"""The curation half of ``Workbench``: pins (and later staleness, merges, nudges)."""

from __future__ import annotations

from datetime import datetime

from .curate.pins import Pin, check_pin, from_row
from .errors import NotFound, PermissionDenied, UserError
from .ingest.files import parse_timestamp
from .models import Fragment, Principal, Scope
from .store.store import utcnow


class CurateMixin:
    def pin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
            reason: str | None = None, until: datetime | str | None = None, now: datetime | None = None) -> Pin:
        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        fragment = self.store.get(fragment_id)
        if fragment is None:
            raise NotFound(f"unknown fragment {fragment_id!r}")
        check_pin(who, fragment.scope, where, fragment_id, fragment.status)
        if isinstance(until, str):
            try:
                until = parse_timestamp(until)
            except ValueError as e:
                raise UserError(f"bad --until {until!r}: expected a date like 2027-01-31") from e
        now = now or utcnow()
        if until is not None and until <= now:
            raise UserError(f"--until {until.date()} is in the past")
        with self.store.transaction():
            self.store.put_pin(fragment_id, str(where), who.name, now, reason, until)
            self.store.add_event("pin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason,
                                         "until": until.isoformat() if until else None})
        return Pin(fragment_id, where, who.name, now, reason, until)

    def unpin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
              reason: str | None = None) -> None:
        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        if not who.leads(where):
            led = ", ".join(str(s) for s in who.lead_of) or "no scope"
            raise PermissionDenied(f"{who.name} is not a tech lead of {where} (leads: {led})")
        with self.store.transaction():
            if not self.store.delete_pin(fragment_id, str(where)):
                raise NotFound(f"{fragment_id} is not pinned in {where}")
            self.store.add_event("unpin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason})

    def pins(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
             include_expired: bool = False) -> list[Pin]:
        """Pins in force (or all), in scopes the principal can see, optionally of one scope."""
        who = self.principal(principal)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        rows = self.store.pins(now=None if include_expired else utcnow())
        pins = [from_row(r) for r in rows]
        return [p for p in pins if (where is None or p.scope == where) and who.can_see(p.scope)]


class GraphMixin:
    """Citation authority, near-duplicates, merges and anti-patterns."""

    def graph(self, *, top: int = 20, principal: str | Principal | None = None) -> list[dict]:
        """Fragments by authority (PageRank over links and source references), with their links."""
        who = self.principal(principal)
        index = self.search_index()  # recomputes and stores authority when the workspace changed
        _, scores = self.store.authority()
        visible = {f.id: f for f in index.fragments if who.can_see(f.scope, owner=f.owner)}
        rows = []
        for fid, f in visible.items():
            rank, in_links, out_links = scores.get(fid, (0.0, 0, 0))
            rows.append({"id": fid, "title": f.title, "kind": f.kind, "authority": round(rank, 6),
                         "in_links": in_links, "out_links": out_links,
                         "links_in": [], "links_out": [t for t in (*f.links, *f.content.supersedes)
                                                       if t in visible]})
        by_id = {r["id"]: r for r in rows}
        for row in rows:
            for target in row["links_out"]:
                by_id[target]["links_in"].append(row["id"])
        rows.sort(key=lambda r: (-r["authority"], r["id"]))
        return rows[:top] if top else rows

    def _simhashes(self, fragments: list) -> dict[str, int]:
        from .rank.simhash import simhash
        from .retrieval.index import index_text

        cache = self.store.simhashes()
        fresh = {f.content_hash: simhash(index_text(f)) for f in fragments if f.content_hash not in cache}
        if fresh:
            with self.store.transaction():
                self.store.put_simhashes(fresh)
            cache.update(fresh)
        return {f.id: cache[f.content_hash] for f in fragments}

    def dedupe(self, *, max_distance: int = 3, principal: str | Principal | None | bool = None,
               only: list[str] | None = None) -> list[dict]:
        """Near-duplicate pairs (SimHash Hamming distance <= max_distance) among the active fragments
        the principal can see (``principal=False``: all of them, for ingest-time reports)."""
        from .rank.simhash import near_pairs

        who = self.principal(principal) if principal is not False else None
        fragments = [f for f in self.store.fragments(status="active")
                     if who is None or who.can_see(f.scope, owner=f.owner)]
        by_id = {f.id: f for f in fragments}
        pairs = near_pairs(self._simhashes(fragments), max_distance, only=only)
        return [{"a": a, "b": b, "distance": d, "a_title": by_id[a].title, "b_title": by_id[b].title,
                 "same_org": by_id[a].scope.org == by_id[b].scope.org} for a, b, d in pairs]

    def merge(self, keep: str, drop: str, *, actor: str | Principal | None = None,
              reason: str | None = None) -> dict:
        """Collapse DROP into KEEP: KEEP gains DROP's sources, links to DROP now point at KEEP
        (a new version of each linking fragment), and DROP is archived with its history."""
        from dataclasses import replace

        who = self.principal(actor)
        if keep == drop:
            raise UserError("cannot merge a fragment into itself")
        kept, dropped = self.get(keep, principal=who), self.get(drop, principal=who)
        if kept.scope.org != dropped.scope.org:
            raise UserError(f"cannot merge across orgs ({drop} is in {dropped.scope.org}, {keep} in {kept.scope.org})")
        for f in (kept, dropped):
            if f.status != "active":
                raise UserError(f"{f.id} is {f.status}; only active fragments can be merged")
        why = reason or f"merge {drop} into {keep}"
        sources = tuple(dict.fromkeys((*kept.sources, *dropped.sources)))
        links = tuple(dict.fromkeys(t for t in (*kept.links, *dropped.links) if t not in (keep, drop)))
        relinked = []
        with self.store.transaction():
            if sources != kept.sources or links != kept.links:
                self._write(keep, replace(kept.content, sources=sources, links=links), actor=who, reason=why)
            for fid in self.store.replace_links(drop, keep):
                f = self.store.get(fid)
                new_links = tuple(dict.fromkeys(keep if t == drop else t for t in f.links if t != fid))
                new_sup = tuple(dict.fromkeys(keep if t == drop else t for t in f.content.supersedes if t != fid))
                self._write(fid, replace(f.content, links=new_links, supersedes=new_sup), actor=who, reason=why)
                relinked.append(fid)
            self._write(drop, replace(dropped.content, status="archived"), actor=who, reason=why)
            self.store.add_event("merge", actor=who.name, fragment_id=keep,
                                 detail={"dropped": drop, "relinked": relinked})
        return {"kept": keep, "dropped": drop, "relinked": relinked, "sources": len(sources)}

    def add_antipattern(self, *, title: str, dont: str, why: str, instead: str, scope: Scope | str,
                        actor: str | Principal | None = None, evidence: list[str] | None = None,
                        body: str = "", tags: list[str] | None = None, fragment_id: str | None = None,
                        owner: str | None = None, allow_secret: bool = False) -> "Fragment":
        """Create an anti-pattern (what not to do, why, what instead) as a new fragment."""
        import re

        from .ingest.importer import check_semantics, guard_secrets
        from .ingest.files import ParsedFragment, content_from_data
        from .schemas import validate

        who = self.principal(actor)
        where = Scope.parse(scope) if isinstance(scope, str) else scope
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "anti-pattern"
        fid = fragment_id or f"{where.org[:12]}-ap-{slug}"
        if self.store.get(fid) is not None:
            raise UserError(f"a fragment with id {fid!r} already exists (pass --id to choose another)")
        data = {"id": fid, "kind": "anti-pattern", "title": title,
                "scope": {k: v for k, v in where.to_dict().items() if v}, "owner": owner or who.name,
                "dont": dont, "why": why, "instead": instead}
        if evidence:
            data["evidence"] = list(evidence)
        if tags:
            data["tags"] = list(tags)
        validate("fragment", data, file="<antipattern>")
        content = content_from_data(data, body, file="<antipattern>")
        check_semantics(ParsedFragment(fid, content, None, None, None, "<antipattern>"), self.config)
        overrides: list[dict[str, str]] = []
        guard_secrets("\n".join([title, dont, why, instead, body]), file="<antipattern>", allow=allow_secret,
                      overrides=overrides)
        with self.store.transaction():
            for override in overrides:
                self.store.add_event("allow-secret", actor=who.name, fragment_id=fid, detail=override)
            return self._write(fid, content, actor=who, reason="new anti-pattern")

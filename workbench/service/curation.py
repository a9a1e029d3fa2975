"""Curation: pins, citation authority (graph), near-duplicates, merges and anti-patterns."""

from __future__ import annotations

from datetime import datetime
from typing import Iterable

from .. import policy
from ..curate.pins import Pin, check_pin, from_row
from ..errors import NotFound, UserError
from ..ingest.files import parse_timestamp
from ..models import Content, Fragment, Principal, Scope
from ..models import utcnow
from .fragments import Fragments
from .lists import evidence_list, tag_list
from .search import Retrieval
from ..curate.gaps import PLACEHOLDER, still_placeholder
from ..curate.ids import ABBREVIATIONS
from .workspace import Feature, Workspace

MAX_DISTANCE = 32  # dedupe: half the SimHash's bits; beyond that nothing is "near" (and the bands run out)


def session_declared(ws: Workspace, who: Principal, session: str) -> bool:
    """Is ``session`` declared: a principal's ``sessions:`` in workbench.yaml names it, or a fragment
    ``who`` sees is scoped to it? (One known only from fragments ``who`` cannot see is not.)"""
    if any(session in p.sessions for p in ws.config.principals.values()):
        return True
    return any(row.session == session and policy.sees_listed(who, Scope(row.org, row.repo, row.persona, row.session),
                                                             row.owner, row.status) for row in ws.store.summaries())


class Curation(Feature):
    """Pins, citation authority, near-duplicates, merges and anti-patterns."""

    def __init__(self, ws: Workspace, fragments: Fragments, retrieval: Retrieval):
        super().__init__(ws)
        self.fragments = fragments
        self.retrieval = retrieval

    def pin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
            reason: str | None = None, until: datetime | str | None = None, now: datetime | None = None) -> Pin:
        who = self.principal(actor)
        where = Scope.coerce(scope)
        fragment = self.fragments.visible(self.store.get(fragment_id), who, fragment_id)
        policy.require(who, "pin", fragment, scope=where)
        self.check_pin_scope(where, who)
        # a received fragment is pinned where it is received (the policy checked that): not in its own org
        check_pin(fragment.scope if policy.member_sees(who, fragment) else where, where, fragment_id, fragment.status)
        if isinstance(until, str):
            try:
                until = parse_timestamp(until)
            except ValueError as e:
                raise UserError(f"bad expiry date {until!r}: expected a date like 2027-01-31", param="until") from e
        now = now or utcnow()
        if until is not None and until <= now:
            raise UserError(f"the expiry date {until.date()} is in the past", param="until")
        with self.store.transaction():
            self.store.put_pin(fragment_id, str(where), who.name, now, reason, until)
            self.store.add_event("pin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason,
                                         "until": until.isoformat() if until else None})
        return Pin(fragment_id, where, who.name, now, reason, until)

    def check_pin_scope(self, where: Scope, who: Principal) -> None:
        """A pin's scope names only what is declared: its org, repo and persona in workbench.yaml, and
        a session someone declared (``session_declared``)."""
        problem = self.config.check_scope(where)
        if problem is None and where.session is not None and not session_declared(self.ws, who, where.session):
            problem = (f"unknown session {where.session!r}: no principal of workbench.yaml is in it and no "
                       "fragment you can see is scoped to it")
        if problem:
            raise UserError(problem, param="scope")

    def unpin(self, fragment_id: str, *, scope: Scope | str, actor: str | Principal | None = None,
              reason: str | None = None) -> None:
        who = self.principal(actor)
        where = Scope.coerce(scope)
        policy.require(who, "unpin", where)
        self.fragments.visible(self.store.get(fragment_id), who, fragment_id)
        with self.store.transaction():
            if not self.store.delete_pin(fragment_id, str(where)):
                raise NotFound(f"{fragment_id} is not pinned in {where}")
            self.store.add_event("unpin", actor=who.name, fragment_id=fragment_id,
                                 detail={"scope": str(where), "reason": reason})

    def pins(self, *, scope: Scope | str | None = None, principal: str | Principal | None = None,
             include_expired: bool = False) -> list[Pin]:
        """Pins in force (or all), in scopes the principal can see, optionally of one scope."""
        who = self.principal(principal)
        where = Scope.coerce(scope)
        rows = self.ws.index.pins(None if include_expired else utcnow())
        pins = [from_row(r) for r in rows]
        visible = {f.id for f in self.store.fragments(ids=sorted({p.fragment_id for p in pins}))
                   if policy.sees(who, f)}
        return [p for p in pins if (where is None or p.scope == where) and policy.sees_scope(who, p.scope)
                and p.fragment_id in visible]

    # -- citation authority, near-duplicates, merges, anti-patterns ----------------------

    def graph(self, *, top: int = 20, principal: str | Principal | None = None) -> list[dict]:
        """Fragments the principal can see, by authority: PageRank over the links and source references
        among those fragments only (what the principal cannot see neither counts nor shows)."""
        who = self.principal(principal)
        index = self.retrieval.search_index()
        scores = index.graph_authority(index.visible(who))
        visible = dict(zip(scores, index.fragments_at(index.pos[fid] for fid in scores)))
        rows = []
        for fid, f in visible.items():
            rank, in_links, out_links = scores[fid]
            rows.append({"id": fid, "title": f.title, "kind": f.kind, "authority": round(rank, 6),
                         "in_links": in_links, "out_links": out_links, "links_in": [],
                         "links_out": [t for t in dict.fromkeys((*f.links, *f.content.supersedes))
                                       if t in visible and t != fid]})
        by_id = {r["id"]: r for r in rows}
        for row in rows:
            for target in row["links_out"]:
                by_id[target]["links_in"].append(row["id"])
        rows.sort(key=lambda r: (-r["authority"], r["id"]))
        return rows[:top] if top else rows

    def graph_node(self, fragment_id: str, *, principal: str | Principal | None = None) -> dict | None:
        """One fragment's row of ``graph`` (authority, links in and out among what the principal
        sees), without building every row: what a screen showing one fragment needs."""
        who = self.principal(principal)
        index = self.retrieval.search_index()
        scores = index.graph_authority(index.visible(who))
        if fragment_id not in scores:
            return None
        rank, in_links, out_links = scores[fragment_id]
        seen = dict(zip(scores, index.fragments_at(index.pos[fid] for fid in scores)))
        f = seen[fragment_id]

        def targets(g) -> list[str]:
            return [t for t in dict.fromkeys((*g.links, *g.content.supersedes)) if t in scores and t != g.id]
        links_in = [fid for fid in scores if fid != fragment_id
                    and fragment_id in targets(seen[fid])]
        return {"id": fragment_id, "title": f.title, "kind": f.kind, "authority": round(rank, 6),
                "in_links": in_links, "out_links": out_links, "links_in": links_in, "links_out": targets(f)}

    def dedupe(self, *, max_distance: int = 3, principal: str | Principal | None = None,
               only: list[str] | None = None) -> list[dict]:
        """Near-duplicate pairs (SimHash Hamming distance <= max_distance) among the active fragments
        the principal can see (``only``: pairs involving these ids)."""
        if isinstance(max_distance, bool) or not isinstance(max_distance, int) or \
                not 0 <= max_distance <= MAX_DISTANCE:
            raise UserError(f"the distance must be a whole number from 0 to {MAX_DISTANCE} (bits of a 64-bit "
                            f"SimHash that differ), not {max_distance!r}", param="max_distance")
        return self.near_duplicates(self.principal(principal), max_distance=max_distance, only=only)

    def near_duplicates(self, who: Principal, *, max_distance: int = 3, only: Iterable[str] | None = None,
                        written: Iterable[Fragment] = ()) -> list[dict]:
        """``dedupe`` for ``who``. Reads light rows (id, title, scope, owner, cached SimHash), not
        whole fragments; only fragments whose SimHash is not cached are loaded (or taken from
        ``written``: fragments just written, exactly as stored) and hashed by the IndexManager."""
        from ..rank.simhash import near_pairs

        rows, seen = [], {}
        for row in self.store.simhash_rows():   # (id, title, content hash, org, repo, persona, session, owner, simhash)
            key = row[3:8]
            if key not in seen:  # policy.sees reads a fragment's scope and owner only
                seen[key] = policy.sees(who, Content("note", "", "", Scope(*row[3:7]), row[7]))
            if seen[key]:
                rows.append(row)
        hashes = {r[0]: int(r[8]) for r in rows if r[8] is not None}
        missing = {r[0]: r[2] for r in rows if r[8] is None}
        if missing:
            given = [f for f in written if missing.get(f.id) == f.content_hash]
            rest = sorted(set(missing).difference(f.id for f in given))
            hashes.update(self.ws.index.simhashes(given + (self.store.fragments(ids=rest) if rest else [])))
        by_id = {r[0]: r for r in rows}
        return [{"a": a, "b": b, "distance": d, "a_title": by_id[a][1], "b_title": by_id[b][1],
                 "same_org": by_id[a][3] == by_id[b][3]} for a, b, d in near_pairs(hashes, max_distance, only=only)]

    def merge(self, keep: str, drop: str, *, actor: str | Principal | None = None,
              reason: str | None = None) -> dict:
        """Collapse DROP into KEEP: KEEP gains DROP's sources, links to DROP now point at KEEP
        (a new version of each linking fragment), and DROP is archived with its history."""
        from dataclasses import replace

        who = self.principal(actor)
        if keep == drop:
            raise UserError("cannot merge a fragment into itself")
        kept, dropped = self.fragments.get(keep, principal=who), self.fragments.get(drop, principal=who)
        policy.require(who, "merge", kept, drop=dropped)
        for f in (kept, dropped):
            if f.status != "active":
                raise UserError(f"{f.id} is {f.status}; only active fragments can be merged")
        why = reason or f"merge {drop} into {keep}"
        sources = tuple(dict.fromkeys((*kept.sources, *dropped.sources)))
        links = tuple(dict.fromkeys(t for t in (*kept.links, *dropped.links) if t not in (keep, drop)))
        relinked = []
        with self.store.transaction():
            if sources != kept.sources or links != kept.links:
                self.fragments.write(keep, replace(kept.content, sources=sources, links=links), actor=who, reason=why)
            for fid in self.store.replace_links(drop, keep):
                f = self.store.get(fid)
                if not policy.may(who, "relink", f):  # links the actor cannot see are left alone
                    continue
                new_links = tuple(dict.fromkeys(keep if t == drop else t for t in f.links if t != fid))
                new_sup = tuple(dict.fromkeys(keep if t == drop else t for t in f.content.supersedes if t != fid))
                self.fragments.write(fid, replace(f.content, links=new_links, supersedes=new_sup), actor=who, reason=why)
                relinked.append(fid)
            self.fragments.write(drop, replace(dropped.content, status="archived"), actor=who, reason=why)
            self.store.add_event("merge", actor=who.name, fragment_id=keep,
                                 detail={"dropped": drop, "relinked": relinked})
        return {"kept": keep, "dropped": drop, "relinked": relinked, "sources": len(sources)}

    def add_antipattern(self, *, title: str, dont: str, why: str, instead: str, scope: Scope | str,
                        actor: str | Principal | None = None, evidence: list[str] | None = None,
                        body: str = "", tags: list[str] | None = None, fragment_id: str | None = None,
                        owner: str | None = None, allow_secret: bool = False) -> "Fragment":
        """Create an anti-pattern (what not to do, why, what instead) as a new fragment. Without
        ``fragment_id``, the id follows the org's convention (``nw-ap-<slug of title>``, see
        curate/ids.py) and never collides: ``-2``, ``-3``, ... are appended when it is taken."""
        from ..curate.ids import new_id
        from ..ingest.files import ParsedFragment, check_fragment_id, content_from_data
        from ..ingest.importer import check_semantics, guard_secrets
        from ..schemas import validate

        who = self.principal(actor)
        where = Scope.coerce(scope)
        fid = fragment_id
        if not fid:
            rows = self.store.summaries()  # (id, kind, title, owner, org, ...): light rows, no bodies
            fid = new_id(title, org=where.org, org_ids=[(r[0], r[1]) for r in rows if r[4] == where.org],
                         taken={r[0] for r in rows} | self.store.alias_ids())
        check_fragment_id(fid, file="<antipattern>")
        existing = self.store.get(fid)
        if existing is not None:
            if not policy.sees(who, existing):
                raise UserError(policy.taken_message(fid) + ": choose another id", param="fragment_id")
            raise UserError(f"a fragment with id {fid!r} already exists: choose another id", param="fragment_id")
        data = {"id": fid, "kind": "anti-pattern", "title": title,
                "scope": {k: v for k, v in where.to_dict().items() if v}, "owner": owner or who.name,
                "dont": dont, "why": why, "instead": instead}
        evidence, tags = evidence_list(evidence), tag_list(tags)   # typed lists: split, trimmed, no repeats
        if evidence:
            data["evidence"] = evidence
        if tags:
            data["tags"] = tags
        validate("fragment", data, file="<antipattern>")
        content = content_from_data(data, body, file="<antipattern>")
        check_semantics(ParsedFragment(fid, content, None, None, None, "<antipattern>"), self.config)
        overrides: list[dict[str, str]] = []
        guard_secrets(content, file="<antipattern>", allow=allow_secret, overrides=overrides)
        return self.fragments.write(fid, content, actor=who, reason="new anti-pattern", overrides=overrides)

    ID_ABBREVIATIONS = ABBREVIATIONS   # kind → the id abbreviation (nw-rb-..., curate/ids.py)

    def add_fragment(self, *, title: str, body: str, scope: Scope | str, kind: str = "note",
                     actor: str | Principal | None = None, owner: str | None = None, tags: list[str] | None = None,
                     fragment_id: str | None = None, reason: str | None = None,
                     allow_secret: bool = False) -> "Fragment":
        """Create a fragment (any kind but anti-pattern, which has ``add_antipattern``) from a title
        and a markdown body, owned by ``owner`` (default: the actor). Without ``fragment_id``, the id
        follows the org's convention (``nw-note-<slug of title>``, see curate/ids.py), never taken."""
        from ..curate.ids import new_id
        from ..ingest.files import ParsedFragment, check_fragment_id, content_from_data
        from ..ingest.importer import check_semantics, guard_secrets
        from ..models import KINDS
        from ..schemas import validate

        who = self.principal(actor)
        if kind not in KINDS or kind == "anti-pattern":
            valid = ", ".join(k for k in KINDS if k != "anti-pattern")
            raise UserError(f"unknown kind {kind!r} for a new fragment (valid: {valid}; anti-patterns have their "
                            "own form)", param="kind")
        if not isinstance(title, str) or not title.strip():
            raise UserError("a new fragment needs a title", param="title")
        if not isinstance(body, str) or not body.strip():
            raise UserError("a new fragment needs a body", param="body")
        if still_placeholder(body):   # a gap's draft that was not written: it must not reach agents or exports
            raise UserError(f"the body still holds the draft's placeholder (\"{PLACEHOLDER}\"): write the answer "
                            "and remove that line", param="body")
        where = Scope.coerce(scope)
        fid = fragment_id
        if not fid:
            rows = self.store.summaries()  # (id, kind, title, owner, org, ...): light rows, no bodies
            fid = new_id(title, org=where.org, org_ids=[(r[0], r[1]) for r in rows if r[4] == where.org],
                         taken={r[0] for r in rows} | self.store.alias_ids(), kind=kind, abbreviation=self.ID_ABBREVIATIONS[kind])
        check_fragment_id(fid, file="<new fragment>")
        existing = self.store.get(fid)
        if existing is not None:
            if not policy.sees(who, existing):
                raise UserError(policy.taken_message(fid), param="fragment_id")
            raise UserError(f"a fragment with id {fid!r} already exists: choose another id", param="fragment_id")
        data = {"id": fid, "kind": kind, "title": title.strip(),
                "scope": {k: v for k, v in where.to_dict().items() if v}, "owner": owner or who.name}
        tags = tag_list(tags)
        if tags:
            data["tags"] = tags
        validate("fragment", data, file="<new fragment>")
        content = content_from_data(data, body, file="<new fragment>")
        check_semantics(ParsedFragment(fid, content, None, None, None, "<new fragment>"), self.config)
        overrides: list[dict[str, str]] = []
        guard_secrets(content, file="<new fragment>", allow=allow_secret, overrides=overrides)
        return self.fragments.write(fid, content, actor=who, reason=reason or "new fragment", overrides=overrides)

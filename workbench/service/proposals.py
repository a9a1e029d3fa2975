"""Agent proposals: an agent (or anyone) hands a note, a session summary or an anti-pattern to the
people who should keep it, and they accept (choosing scope and owner), edit then accept, or reject.

A proposal is a fragment in status ``proposed`` whose ``details.proposed_by`` names its author.
Until it is reviewed only its author and its reviewers read it (policy.py): everyone else is told
"unknown fragment", as for an id that does not exist, and the search index holds active fragments
only, so a proposal is never searched or served in a context. Each step (propose, edit, accept or
reject) is a version written through ``Fragments.write``, so the policy, the base version rule and
the history apply as to any change; a proposal passes the secret guard, and each principal may
make at most ``proposals.per_hour`` of them in any hour (counted from the store). This module
decides nothing about who may do what: policy.py does.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from .. import policy
from ..curate.gaps import PLACEHOLDER, still_placeholder
from ..errors import Conflict, NotFound, RateLimited, SecretFound, UserError
from ..models import PROPOSAL_KINDS, PROPOSAL_STATUSES, Content, Fragment, Principal, Scope
from ..models import utcnow
from .fragments import Fragments
from .lists import tag_list
from .workspace import Feature, Workspace

LIST_STATUSES = ("proposed", "rejected", "all")
WINDOW = timedelta(hours=1)
MAX_BODY = 50_000           # characters: a proposal is a note, not a document dump
ID_PREFIX = "prop"
DRAFT_KINDS = ("note", "runbook", "decision", "policy")   # what a person drafts to answer a question

# "Don't: ...", "**Why:** ...", "## Instead" ... : an anti-pattern's fields written in a body
_LABELS = {"dont": "dont", "don't": "dont", "do not": "dont", "why": "why", "instead": "instead"}
_FIELD = re.compile(r"^\s*(?:(?P<hash>#{1,6})\s*|[-*]\s+)?(?:\*\*|__)?(?P<label>don['’]?t|do not|why|instead)"
                    r"(?:\*\*|__)?\s*(?P<colon>[:：])?\s*(?:\*\*|__)?\s*(?P<rest>.*)$", re.IGNORECASE)


def antipattern_fields(body: str) -> tuple[dict[str, str], str]:
    """The Don't / Why / Instead fields written in a body (``Don't: ...``, ``**Why:** ...``, ``## Instead``
    headings), and what is left of the body (text before the first field). A label counts only with a
    colon or as a heading, so a sentence starting with "Why" stays text."""
    fields: dict[str, list[str]] = {}
    rest: list[str] = []
    current: list[str] | None = None
    for line in body.splitlines():
        m = _FIELD.match(line)
        if m and (m["colon"] or m["hash"]):
            key = _LABELS[" ".join(m["label"].lower().replace("’", "'").split())]
            current = fields.setdefault(key, [])
            if m["rest"].strip():
                current.append(m["rest"].strip())
            continue
        (current if current is not None else rest).append(line)
    return ({k: "\n".join(v).strip() for k, v in fields.items() if "\n".join(v).strip()},
            "\n".join(rest).strip())


def _iso(value: datetime) -> str:
    return value.replace(microsecond=0).isoformat() + "Z"


class Proposals(Feature):
    """Propose, list what to review, accept, reject."""

    def __init__(self, ws: Workspace, fragments: Fragments):
        super().__init__(ws)
        self.fragments = fragments

    # -- propose ----------------------------------------------------------------------------

    def propose(self, title: str, body: str, *, kind: str = "note", scope: Scope | str | None = None,
                principal: str | Principal | None = None, tags: Iterable[str] = (), now: datetime | None = None,
                dont: str | None = None, why: str | None = None, instead: str | None = None) -> Fragment:
        """Record a proposal (a note, a session summary or an anti-pattern) for review. ``scope``:
        one the principal may see (default: its own session scope, ``org=ITS FIRST ORG,session=ITS
        FIRST SESSION``); any other answers like a scope that does not exist. An anti-pattern takes
        its Don't / Why / Instead from ``dont``/``why``/``instead`` or from labelled lines of the body.
        Refused when it holds a credential, and past ``proposals.per_hour`` proposals in the last hour
        (``RateLimited``); nothing is stored then."""
        from ..ingest.files import ParsedFragment, content_from_data
        from ..ingest.importer import check_semantics
        from ..schemas import validate

        who = self.principal(principal)
        now = now or utcnow()
        if kind not in PROPOSAL_KINDS:
            raise UserError(f"unknown proposal kind {kind!r} (valid: {', '.join(PROPOSAL_KINDS)})", param="kind")
        if not isinstance(title, str) or not title.strip():
            raise UserError("a proposal needs a title", param="title")
        if not isinstance(body, str):
            raise UserError("a proposal's body is text", param="body")
        if len(body) > MAX_BODY:
            raise UserError(f"the body is too long ({len(body)} characters, at most {MAX_BODY})", param="body")
        where = self._target(who, scope)
        data: dict[str, Any] = {"id": "proposal", "kind": kind, "title": title.strip(),
                                "scope": {k: v for k, v in where.to_dict().items() if v}, "owner": who.name,
                                "status": "proposed", "proposed_by": who.name}
        text = body
        if kind == "anti-pattern":
            found, text = antipattern_fields(body)
            given = {k: v.strip() for k, v in (("dont", dont), ("why", why), ("instead", instead))
                     if isinstance(v, str) and v.strip()}
            fields = {**found, **given}
            missing = [label for key, label in (("dont", "Don't"), ("why", "Why"), ("instead", "Instead"))
                       if key not in fields]
            if missing:
                raise UserError(f"an anti-pattern proposal needs {', '.join(missing)}: write lines like \"Don't: ...\", "
                                "\"Why: ...\" and \"Instead: ...\" in its body", param="body")
            data.update(fields)
        elif any(v for v in (dont, why, instead)):
            raise UserError("Don't, Why and Instead belong to anti-patterns only", param="kind")
        elif not body.strip():
            raise UserError("a proposal needs a body", param="body")
        tags = tag_list(tags)
        if tags:
            data["tags"] = tags
        validate("fragment", data, file="<proposal>")
        content = content_from_data(data, text, file="<proposal>")
        check_semantics(ParsedFragment("proposal", content, None, None, None, "<proposal>"), self.config)
        self._guard(content)
        with self.store.transaction():
            self._check_rate(who, now)
            fid = self._new_id(title)
            self.fragments.write(fid, content, actor=who, reason=f"proposed by {who.name}: awaiting review")
            self.store.add_event("propose", actor=who.name, fragment_id=fid,
                                 detail={"kind": kind, "scope": str(where)})
            return self.store.get(fid)

    def draft(self, title: str, body: str, *, kind: str = "note", scope: Scope | str, principal: str | Principal |
              None = None, owner: str | None = None, reason: str = "drafted", now: datetime | None = None,
              tags: Iterable[str] | str | None = None) -> Fragment:
        """A person's draft of a fragment answering something (a note, runbook, decision or policy: a
        gap's draft, service/gaps.py): stored as a proposal by ``principal``, never served or exported
        until a reviewer accepts it, owned by ``owner`` (default: the drafter) in ``scope`` (one it may
        see). Passes what a proposal passes: the schema, the scope, the secret guard, the hourly limit."""
        from ..ingest.files import ParsedFragment, content_from_data
        from ..ingest.importer import check_semantics
        from ..schemas import validate

        who = self.principal(principal)
        now = now or utcnow()
        if kind not in DRAFT_KINDS:
            raise UserError(f"unknown kind {kind!r} for a draft (valid: {', '.join(DRAFT_KINDS)})", param="kind")
        if not isinstance(title, str) or not title.strip():
            raise UserError("a draft needs a title", param="title")
        if not isinstance(body, str) or not body.strip():
            raise UserError("a draft needs a body", param="body")
        if len(body) > MAX_BODY:
            raise UserError(f"the body is too long ({len(body)} characters, at most {MAX_BODY})", param="body")
        where = self._target(who, scope)
        data: dict[str, Any] = {"id": "proposal", "kind": kind, "title": title.strip(),
                                "scope": {k: v for k, v in where.to_dict().items() if v}, "owner": owner or who.name,
                                "status": "proposed", "proposed_by": who.name}
        tags = tag_list(tags)
        if tags:
            data["tags"] = tags
        validate("fragment", data, file="<draft>")
        content = content_from_data(data, body, file="<draft>")
        check_semantics(ParsedFragment("proposal", content, None, None, None, "<draft>"), self.config)
        self._guard(content)
        with self.store.transaction():
            self._check_rate(who, now)
            fid = self._new_id(title)
            self.fragments.write(fid, content, actor=who, reason=reason)
            self.store.add_event("propose", actor=who.name, fragment_id=fid, detail={"kind": kind, "scope": str(where)})
            return self.store.get(fid)

    def _target(self, who: Principal, scope: Scope | str | None) -> Scope:
        if scope is None or (isinstance(scope, str) and not scope.strip()):
            if not who.sessions:
                raise UserError(f"give a scope for the proposal: {who.name} has no session scope of its own "
                                "(e.g. org=ORG,repo=REPO)", param="scope")
            return Scope(who.orgs[0], session=who.sessions[0])
        where = Scope.coerce(scope)
        # An undeclared scope and one the proposer cannot see get the same answer.
        if self.config.check_scope(where) is not None or not who.can_see(where, owner=who.name):
            raise NotFound(f"unknown scope {str(where)!r}", param="scope")
        return where

    def _check_rate(self, who: Principal, now: datetime) -> None:
        limit = self.config.proposals_per_hour
        if limit <= 0:
            raise RateLimited("proposals are turned off in this workspace (proposals: per_hour: 0 in workbench.yaml)")
        made = self.store.proposals_since(who.name, now - WINDOW)
        if made >= limit:
            raise RateLimited(f"{who.name} made {made} proposals in the last hour (at most {limit}); nothing stored: "
                              "try again later")

    def _new_id(self, title: str) -> str:
        from ..curate.ids import slug

        while True:
            fid = f"{ID_PREFIX}-{slug(title, 'proposal')}-{secrets.token_hex(3)}"
            if self.store.get(fid) is None and self.store.alias_target(fid) is None:
                return fid

    def _guard(self, content: Content) -> None:
        from ..ingest.importer import guard_secrets

        try:
            guard_secrets(content, file="the proposal", allow=False, overrides=[])
        except SecretFound as e:
            raise SecretFound(e.message.split(" (remove it")[0] + ": remove it and propose again") from e

    # -- what to review ----------------------------------------------------------------------

    def proposals(self, *, principal: str | Principal | None = None, status: str = "proposed",
                  scope: Scope | str | None = None, to_review: bool = False) -> list[Fragment]:
        """The proposals ``principal`` may review (it leads their scope, or they name it as owner)
        and its own (``details.proposed_by`` is its name), oldest first; ``status``: proposed (awaiting
        review), rejected, or all. ``to_review``: only those it may review. ``scope``: within it."""
        if status not in LIST_STATUSES:
            raise UserError(f"unknown proposal status {status!r} (valid: {', '.join(LIST_STATUSES)})", param="status")
        who = self.principal(principal)
        within = Scope.coerce(scope)
        found = [f for s in (PROPOSAL_STATUSES if status == "all" else (status,))
                 for f in self.store.fragments(status=s, within=within)]
        keep = [f for f in found if (policy.reviews(who, f) if to_review else policy.sees(who, f))]
        return sorted(keep, key=lambda f: (f.created_at, f.id))

    def queues(self, *, viewer: str | Principal | None = None) -> dict[str, list[Fragment]]:
        """Reviewer name → the proposals awaiting its review, oldest first, among those ``viewer`` may
        see (the nudge digest's "Proposals to review": a digest run by an org's lead tells reviewers
        only about what that lead sees)."""
        who = self.principal(viewer)
        pending = sorted((f for f in self.store.fragments(status="proposed") if policy.sees(who, f)),
                         key=lambda f: (f.created_at, f.id))
        out: dict[str, list[Fragment]] = {}
        for name, reviewer in sorted(self.config.principals.items()):
            mine = [f for f in pending if policy.reviews(reviewer, f)]
            if mine:
                out[name] = mine
        return out

    # -- review ------------------------------------------------------------------------------

    def _proposal(self, fragment_id: str, who: Principal, verb: str) -> Fragment:
        current = self.fragments.get(fragment_id, principal=who)  # unseen: "unknown fragment"
        if current.status != "proposed":
            raise UserError(f"{fragment_id} is {current.status}: only a proposal awaiting review can be {verb}")
        return current

    def accept(self, fragment_id: str, *, principal: str | Principal | None = None, scope: Scope | str | None = None,
               owner: str | None = None, reason: str | None = None, title: str | None = None,
               body: str | None = None, base: int | None = None, now: datetime | None = None) -> Fragment:
        """Accept a proposal: it becomes an active fragment in ``scope`` (default: where it was proposed),
        with an id by the org's convention (``nw-note-<slug of its title>``; its ``prop-...`` id redirects
        to it: get, show, history and MCP get by the old id reach it),
        owned by ``owner`` (default: the owner it names when that is not its author, else the reviewer),
        with ``details.review`` = {decision: accepted, by, at[, reason]}. A new ``title`` or ``body`` is
        saved first as an edit by the reviewer, so the history shows propose, edit, accept. ``base``:
        the version the reviewer read (a later change refuses the accept with Conflict). A proposal
        with more than one version is accepted only with a ``base``: its author may edit it after
        the reviewer read it, and a reviewer never accepts text it did not see (``_require_base``)."""
        from ..ingest.files import normalise_body

        who = self.principal(principal)
        now = now or utcnow()
        current = self._proposal(fragment_id, who, "accepted")
        where = Scope.coerce(scope) or current.scope
        author = policy.proposed_by(current)
        keeper = self.principal(owner).name if owner else (current.owner if current.owner != author else who.name)
        if self.config.check_scope(where) is not None or not who.can_see(where, owner=keeper):
            raise NotFound(f"unknown scope {str(where)!r}", param="scope")
        edited = current.content
        if title is not None or body is not None:
            new_title = title.strip() if isinstance(title, str) and title.strip() else current.title
            new_body = normalise_body(body) if body is not None else current.body
            if not new_body and current.kind != "anti-pattern":
                raise UserError("the body cannot be empty", param="body")
            edited = replace(edited, title=new_title, body=new_body)
        if still_placeholder(edited.body):
            raise UserError(f"{fragment_id} is a draft whose answer is not written yet (its body still says "
                            f"\"{PLACEHOLDER}\"): edit it, or accept it with a new body", param="body")
        review: dict[str, Any] = {"decision": "accepted", "by": who.name, "at": _iso(now)}
        if reason and reason.strip():
            review["reason"] = reason.strip()
        accepted = replace(edited, status="active", scope=where, owner=keeper,
                           details=_with_detail(edited.details, "review", review))
        self._check(fragment_id, accepted)
        # who may review first (a refusal there says nothing about versions), then which version
        policy.may_write(who, current, accepted, principals=self.config.principals).check()
        if base is None:
            self._require_base(current)
        with self.store.transaction():
            if edited != current.content:
                self._check(fragment_id, edited)
                self.fragments.write(fragment_id, edited, actor=who, reason="edited before accepting", base=base)
                base = None
            self.fragments.write(fragment_id, accepted, actor=who, base=base,
                                 reason=f"accepted{': ' + review['reason'] if 'reason' in review else ''}")
            final = self._conventional_id(current.id, accepted)
            if final != current.id:   # the prop-... id redirects to it from now on
                self.store.rename_fragment(current.id, final, now)
            self.store.add_event("accept", actor=who.name, fragment_id=final,
                                 detail={"scope": str(where), "owner": keeper, "proposed_by": author,
                                         "proposal_id": current.id})
            return self.store.get(final)

    def _conventional_id(self, proposal_id: str, content: Content) -> str:
        """The id an accepted proposal takes: the org's convention for its kind and title
        (``nw-note-<slug>``, ``tw-ap-<slug>``: curate/ids.py, as new fragments get), never taken
        (by a fragment or an old id that redirects)."""
        from ..curate.ids import ABBREVIATIONS, new_id

        if not proposal_id.startswith(f"{ID_PREFIX}-"):
            return proposal_id
        rows = self.store.summaries()  # (id, kind, title, owner, org, ...): light rows, no bodies
        org = content.scope.org
        return new_id(content.title, org=org, org_ids=[(r[0], r[1]) for r in rows if r[4] == org],
                      taken={r[0] for r in rows} | self.store.alias_ids(), kind=content.kind,
                      abbreviation=ABBREVIATIONS[content.kind])

    def _require_base(self, current: Fragment) -> None:
        """Refuse an accept that names no base version when the proposal has more than one: the
        reviewer may have read an earlier one (its author edits it until the review)."""
        if current.version <= 1:
            return
        last = self.store.versions(current.id)[-1]
        raise Conflict(f"{current.id} has {current.version} versions and this accept names none: the latest, "
                       f"v{current.version}, is by {last.author} at {_iso(last.created_at)}. Read it (show "
                       f"{current.id}), then accept it with base {current.version}, the version you reviewed, so "
                       "that no text you did not see is accepted", param="base")

    def reject(self, fragment_id: str, *, principal: str | Principal | None = None, reason: str,
               base: int | None = None, now: datetime | None = None) -> Fragment:
        """Reject a proposal with a reason: it stays, in status ``rejected``, readable by its author
        (``get``) and its reviewers only, with ``details.review`` = {decision: rejected, by, at, reason}."""
        who = self.principal(principal)
        now = now or utcnow()
        if not isinstance(reason, str) or not reason.strip():
            raise UserError("a rejection needs a reason (the author reads it)", param="reason")
        current = self._proposal(fragment_id, who, "rejected")
        review = {"decision": "rejected", "by": who.name, "at": _iso(now), "reason": reason.strip()}
        rejected = replace(current.content, status="rejected",
                           details=_with_detail(current.content.details, "review", review))
        self._check(fragment_id, rejected)
        with self.store.transaction():
            self.fragments.write(fragment_id, rejected, actor=who, base=base, reason=f"rejected: {reason.strip()}")
            self.store.add_event("reject", actor=who.name, fragment_id=fragment_id,
                                 detail={"proposed_by": policy.proposed_by(current)})
            return self.store.get(fragment_id)

    def _check(self, fragment_id: str, content: Content) -> None:
        """What a fragment file must pass (the schema, a declared scope, a known owner in it) and the
        secret guard, before anything is written."""
        from ..ingest.files import ParsedFragment, front_matter_data
        from ..ingest.importer import check_semantics
        from ..schemas import validate

        validate("fragment", front_matter_data(fragment_id, content), file=fragment_id)
        check_semantics(ParsedFragment(fragment_id, content, None, None, None, fragment_id), self.config)
        self._guard(content)


def _with_detail(details: tuple[tuple[str, Any], ...], key: str, value: Any) -> tuple[tuple[str, Any], ...]:
    kept = {k: v for k, v in details if k != key}
    kept[key] = value
    return tuple(sorted(kept.items()))


__all__ = ["PROPOSAL_KINDS", "Proposals", "antipattern_fields"]

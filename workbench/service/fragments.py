"""Fragments, read and written: list, browse, get, history, diff, and the one way a version is
written (reason, authorization, the base version rule, the secret guard's overrides)."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from .. import policy
from ..errors import Conflict, NotFound, UserError, ValidationError
from ..ingest.files import normalise_body, parse_fragment, render_fragment
from ..ingest.importer import check_semantics, guard_secrets
from ..models import PROPOSAL_STATUSES, Content, Fragment, Principal, Scope, Version
from ..models import utcnow
from .receipts import as_served, received_via
from .structured import edited_fields
from .workspace import Feature


LISTING_CHUNK = 5000  # light rows read per query by ``list``
SPARSE = 4            # ``list`` reads by id, not the span, when the span holds more than 4 rows per id kept


class Fragments(Feature):
    def resolve(self, fragment_id: str) -> str:
        """The id a fragment has now: ``fragment_id``, or the one it redirects to (an accepted proposal's
        old ``prop-...`` id names the fragment it became). Visibility is decided on the fragment."""
        if not isinstance(fragment_id, str) or self.store.get(fragment_id) is not None:
            return fragment_id
        return self.store.alias_target(fragment_id) or fragment_id

    def visible(self, fragment: Fragment | None, principal: Principal, fragment_id: str) -> Fragment:
        # Unknown and out-of-scope ids answer the same way, so ids outside scope do not leak.
        if fragment is None or not policy.may(principal, "read", fragment):
            raise NotFound(f"unknown fragment {fragment_id!r}")
        return fragment

    # -- reads ------------------------------------------------------------------------

    def list(self, *, principal: str | Principal | None = None, owner: str | None = None,
             kind: str | None = None, scope: Scope | str | None = None,
             include_archived: bool = False, servable: bool = False, after: str | None = None,
             limit: int | None = None) -> list[Fragment]:
        """Fragments the principal may see, filtered, in id order: active ones (and archived ones with
        ``include_archived``; proposals are listed by ``proposals``). ``scope`` keeps those within
        it; ``servable`` leaves out what is never served to agents (stored with a secret-guard
        override); ``after`` starts after that id and ``limit`` stops at that many (a page).
        Who sees what is decided on light rows first, so only the fragments returned are read whole."""
        who = self.principal(principal)
        if owner is not None and owner not in self.config.principals:
            raise NotFound(f"unknown owner {owner!r} (known: {', '.join(sorted(self.config.principals))})")
        if kind is not None:
            from ..models import KINDS
            if kind not in KINDS:
                raise UserError(f"unknown kind {kind!r} (valid: {', '.join(KINDS)})")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise UserError(f"limit must be a whole number of at least 1, not {limit!r}", param="limit")
        within = Scope.coerce(scope)
        status = None if include_archived else "active"
        withheld = self.store.secret_flagged() if servable else set()
        verdict: dict[tuple, bool] = {}
        ids: list[str] = []
        cursor, seen, first, last = after, 0, 0, 0  # rows scanned; positions of the first and last id kept
        while limit is None or len(ids) < limit:  # light rows, a chunk at a time, until the page is full
            rows = self.store.listing(owner=owner, kind=kind, within=within, status=status, after=cursor,
                                      limit=LISTING_CHUNK)
            for fid, org, repo, persona, session, row_owner, row_status in rows:
                key = (org, repo, persona, session, row_owner, row_status)
                if key not in verdict:
                    verdict[key] = policy.sees_listed(who, Scope(org, repo, persona, session), row_owner,
                                                      row_status)
                seen += 1
                received = who.received and any(  # received through a subscription (sees decides again below)
                    policy.receiving.holds_at(r, Scope(org, repo, persona, session), row_status)
                    for r in who.receipts(fid))
                if (verdict[key] or received) and fid not in withheld:
                    first, last = (first or seen), seen
                    ids.append(fid)
                    if limit is not None and len(ids) == limit:
                        break
            if len(rows) < LISTING_CHUNK:
                break
            cursor = rows[-1][0]
        if not ids:
            return []
        # Read whole the span of ids kept (one range scan, with the same filters), then decide again
        # on the whole fragment: a write between the two reads may have moved one out of scope.
        # (When the ids kept are sparse in their span, by id is cheaper than reading the span.)
        kept = set(ids)
        if last - first + 1 > SPARSE * len(ids):
            whole = [f for start in range(0, len(ids), 1000) for f in self.store.fragments(ids=ids[start:start + 1000])]
        else:
            whole = self.store.fragments(owner=owner, kind=kind, within=within, status=status,
                                         id_from=ids[0], id_to=ids[-1])
        return [f for f in whole if f.id in kept and f.status not in PROPOSAL_STATUSES and policy.sees(who, f)]

    def browse(self, *, principal: str | Principal | None = None, owner: str | None = None,
               kind: str | None = None, scope: Scope | str | None = None, stale_only: bool = False,
               include_archived: bool = False, now=None) -> list:
        """Light rows (no bodies) for browsing, with stale and pin badges, scope-filtered."""
        from .browse import summaries
        from .received import refine

        who = self.principal(principal)
        within = Scope.coerce(scope)
        now = now or utcnow()
        pins = self.ws.index.pins(now)
        pinned = {p["fragment_id"] for p in pins}
        rows = summaries(self.store.summaries(), who, pinned=pinned, now=now, include_archived=include_archived)
        rows = refine(self.store, who, rows, pins)   # received rows: what the policy lets ``who`` do on them
        return [r for r in rows if (owner is None or r.owner == owner) and (kind is None or r.kind == kind)
                and (within is None or within.contains(r.scope)) and (not stale_only or r.stale)]

    def get(self, fragment_id: str, *, version: int | None = None,
            principal: str | Principal | None = None) -> Fragment:
        who = self.principal(principal)
        current = self.visible(self.store.get(self.resolve(fragment_id)), who, fragment_id)
        if not policy.member_sees(who, current):   # received: only the version it is served exists for it
            served = as_served(self.store, who, current)
            if version is not None and version != served.version:
                raise NotFound(f"{fragment_id} has no version {version}")
            return served
        if version is None or version == current.version:
            return current
        old = self.store.version(current.id, version)
        if old is None or not policy.sees(who, old.content):  # an invisible version answers like a missing one
            raise NotFound(f"{fragment_id} has no version {version}")
        return Fragment(id=current.id, version=old.number, content=old.content, content_hash=old.content_hash,
                        created_at=current.created_at, updated_at=old.created_at, verified_at=None)

    def received_via(self, fragment_id: str, *, principal: str | Principal | None = None) -> str | None:
        """The published context (ORG/CONTEXT) through which ``principal`` receives the fragment; None
        when it sees it as a member of its scope. Scope-checked like ``get``."""
        who = self.principal(principal)
        return received_via(who, self.visible(self.store.get(self.resolve(fragment_id)), who, fragment_id))

    def received(self, fragment_id: str, *, principal: str | Principal | None = None):
        """How ``principal`` receives the fragment (``received.Received``: via, the version served,
        the writes the policy allows it on it), None when it sees it as a member of its scope.
        Scope-checked like ``get``."""
        from .received import received

        who = self.principal(principal)
        return received(who, self.visible(self.store.get(self.resolve(fragment_id)), who, fragment_id))

    def history(self, fragment_id: str, *, principal: str | Principal | None = None) -> list[Version]:
        """Every version; one written while the fragment was in a scope the viewer cannot see
        keeps its number, author and time, but its title, reason and content are withheld."""
        from ..retrieval.results import History

        who = self.principal(principal)
        current = self.get(fragment_id, principal=who)
        if received_via(who, current) is not None:   # received: the version served, no other
            return History([v for v in self.store.versions(current.id) if v.number == current.version])
        return History([v if policy.sees(who, v.content) else v.withheld() for v in self.store.versions(current.id)])

    def diff(self, fragment_id: str, a: int, b: int, *, principal: str | Principal | None = None) -> str:
        """Unified diff of the fragment file between versions ``a`` and ``b``."""
        left = self.get(fragment_id, version=a, principal=principal)
        right = self.get(fragment_id, version=b, principal=principal)
        render = lambda f: render_fragment(  # noqa: E731 - timestamps are not content
            Fragment(f.id, f.version, f.content, f.content_hash, f.created_at, f.created_at)).splitlines(True)
        return "".join(difflib.unified_diff(render(left), render(right),
                                            fromfile=f"{fragment_id}@v{a}", tofile=f"{fragment_id}@v{b}"))

    def stats(self, *, principal: str | Principal | None = None) -> dict[str, int | str]:
        """Counts of fragments, versions and events: the whole workspace's for the local
        administrator (no principal) and an admin; for anyone else, the fragments it sees (active
        or archived; proposals are the inbox's), their versions and the events about them, so the
        counts tell nothing about the rest of the workspace (and ``counted_for`` names it)."""
        who = None if principal is None else self.principal(principal)
        if policy.sees_workspace_totals(who):
            return self.store.counts()
        verdict: dict[tuple, bool] = {}
        fragments = versions = events = 0
        for org, repo, persona, session, owner, status, n_versions, n_events in self.store.tallies():
            key = (org, repo, persona, session, owner, status)
            if key not in verdict:
                verdict[key] = policy.sees_listed(who, Scope(org, repo, persona, session), owner, status)
            if verdict[key]:
                fragments, versions, events = fragments + 1, versions + n_versions, events + n_events
        return {"fragments": fragments, "versions": versions, "events": events, "counted_for": who.name}

    # -- writes -----------------------------------------------------------------------

    def write(self, fragment_id: str, content: Content, *, actor: Principal, reason: str,
               base: int | None = None, overrides: list[dict] | None = None) -> Fragment:
        """The one way a single version is written: reason, authorization, the base version rule,
        the secret guard's overrides, then the version (author = the actor), in one transaction."""
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change", param="reason")
        with self.store.transaction():
            fragment_id = self.resolve(fragment_id)
            current = self.store.get(fragment_id)
            policy.may_write(actor, current, content, principals=self.config.principals).check()
            if base is not None:
                self.check_base(fragment_id, current, base)
            if current is not None and content.content_hash() == current.content_hash:
                raise UserError(f"no change: {fragment_id} already has this content (v{current.version})")
            at = utcnow()
            number = self.store.append_version(fragment_id, content, author=actor.name, reason=reason.strip(), at=at)
            if overrides:
                self.store.put_secret_override(fragment_id, number, actor.name, at, overrides)
            return self.store.get(fragment_id)

    def check_base(self, fragment_id: str, current: Fragment | None, base: int) -> None:
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

    def edit(self, fragment_id: str, text: str | None = None, *, reason: str, actor: str | Principal | None = None,
             file: str = "<edit>", allow_secret: bool = False, base: int | None = None,
             fields: dict[str, Any] | None = None) -> Fragment:
        """Replace the body (plain markdown) or the whole fragment (front matter + body); or, with
        ``fields``, the fields named there (an anti-pattern's don't / why / instead / evidence, a
        title, tags: ``EDIT_FIELDS``), keeping the rest (and the body, unless ``text`` is a body too).
        ``base`` is the version the change was made from: when the fragment has moved on since,
        nothing is saved and ``Conflict`` names who changed it."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if not reason or not reason.strip():
            raise UserError("a reason is required for every change", param="reason")
        if base is not None and (isinstance(base, bool) or not isinstance(base, int)):
            raise UserError(f"the base must be a version number, not {base!r}", param="base")
        content, overrides = self._edited(current, text, file=file, allow_secret=allow_secret, fields=fields)
        return self.write(fragment_id, content, actor=who, reason=reason, base=base, overrides=overrides)

    def preview(self, fragment_id: str, text: str | None = None, *, actor: str | Principal | None = None,
                file: str = "<edit>", allow_secret: bool = False, base: int | None = None,
                fields: dict[str, Any] | None = None) -> tuple[Principal, Fragment, Content]:
        """(the actor, the fragment now, the content) that ``edit`` would save from ``text`` (and
        ``fields``), checked as ``edit`` checks it (visibility, the base version, validation, the secret
        guard, the actor's right to write it, a real change), without writing anything or asking for a reason."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if base is not None:
            if isinstance(base, bool) or not isinstance(base, int):
                raise UserError(f"the base must be a version number, not {base!r}", param="base")
            self.check_base(fragment_id, current, base)
        content, _ = self._edited(current, text, file=file, allow_secret=allow_secret, fields=fields)
        policy.may_write(who, current, content, principals=self.config.principals).check()
        if content.content_hash() == current.content_hash:
            raise UserError(f"no change: {fragment_id} already has this content (v{current.version})")
        return who, current, content

    def _edited(self, current: Fragment, text: str | None, *, file: str, allow_secret: bool,
                fields: dict[str, Any] | None = None) -> tuple[Content, list[dict[str, str]]]:
        """The content an edit's ``text`` (a body, or a whole fragment file) and ``fields`` make of
        ``current``, and the secret guard's overrides (raises on invalid text, or a credential not allowed)."""
        if fields is not None:
            content = edited_fields(current, text, fields, file=file, config=self.config)
        elif not isinstance(text, str):
            raise UserError("nothing to change: give the new text (a body or a whole fragment file) or the fields "
                            "to change", param="text")
        elif text.lstrip("\ufeff").startswith("---"):
            parsed = parse_fragment(text, file=file, default_id=current.id)
            if parsed.id != current.id:
                raise ValidationError(f"id {parsed.id!r} does not match {current.id!r}", file=file, field="id")
            check_semantics(parsed, self.config)
            content = parsed.content
        else:
            body = normalise_body(text)
            if not body and current.kind != "anti-pattern":
                raise ValidationError("is empty", file=file, field="body")
            content = replace(current.content, body=body)
        overrides: list[dict[str, str]] = []
        guard_secrets(content, file=file, allow=allow_secret, overrides=overrides)
        return content, overrides

    def revert(self, fragment_id: str, to: int, *, actor: str | Principal | None = None,
               reason: str | None = None, base: int | None = None) -> Fragment:
        """Append a version whose content equals version ``to`` (a version the actor may see)."""
        who = self.principal(actor)
        old = self.get(fragment_id, version=to, principal=who)
        return self.write(fragment_id, old.content, actor=who, reason=reason or f"revert to v{to}", base=base)

    def set_status(self, fragment_id: str, status: str, *, actor: str | Principal | None = None,
                   reason: str, base: int | None = None) -> Fragment:
        """Archive or restore: a versioned change like any other."""
        who = self.principal(actor)
        current = self.get(fragment_id, principal=who)
        if current.status == status:
            raise UserError(f"{fragment_id} is already {status}")
        return self.write(fragment_id, replace(current.content, status=status), actor=who, reason=reason, base=base)

    def archive(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str,
                base: int | None = None) -> Fragment:
        return self.set_status(fragment_id, "archived", actor=actor, reason=reason, base=base)

    def restore(self, fragment_id: str, *, actor: str | Principal | None = None, reason: str,
                base: int | None = None) -> Fragment:
        return self.set_status(fragment_id, "active", actor=actor, reason=reason, base=base)

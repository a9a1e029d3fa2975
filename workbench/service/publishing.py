"""Published contexts and subscriptions (issue 30): knowledge that crosses scopes without copies.

A lead publishes a set as ``ORG/SET``; each version is a snapshot of the set's members as its
owner sees them as a member of their scopes (never a session's, never a fragment the owner itself
receives), with a changelog. A set change of a published set, and ``publish`` again, make the next
version in the same transaction, so a fragment removed from the set stops crossing at once. A lead
of another scope subscribes its scope; its members then receive the fragments (receipts.py,
policy/receiving.py), read-only, with ``via``. Either side ends it.

Contexts are discoverable: any principal of the workspace may list the live contexts (name,
publisher, latest version) to subscribe to one. Their members and changelogs are shown to the
publishing side (the publisher, and members of the set's scope) and to principals who receive
them; the publisher's other fragments, excluded versions, traces, usage and gaps never cross.
The publisher sees who subscribes (scopes) and how often its published fragments were served to
principals of subscribing scopes (counts only).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .. import policy
from ..errors import NotFound, UserError
from ..models import Principal, Scope, utcnow
from .days import check_days
from .workspace import Feature, Workspace

VERSION_POLICIES = ("latest", "pinned")


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.replace(microsecond=0).isoformat() + "Z"


class Publishing(Feature):
    """publish, unpublish, subscribe, unsubscribe, move a subscription; the publisher's and the
    subscriber's views."""

    def __init__(self, ws: Workspace, exports):
        super().__init__(ws)
        self.exports = exports
        exports.publishing = self   # a set change of a published set makes its next version

    # -- the publisher's side ---------------------------------------------------------------

    def publish(self, set_name: str, *, actor: str | Principal | None = None, version_policy: str = "latest",
                with_pins: bool = False, now: datetime | None = None) -> dict[str, Any]:
        """Publish the set (``NAME`` or ``NAME@SCOPE``) as ``ORG/NAME``, or publish it again: a new
        version when its members changed (or when it was unpublished). Its owner or a lead of its scope."""
        who = self.principal(actor)
        if version_policy not in VERSION_POLICIES:
            raise UserError(f"unknown version policy {version_policy!r} (valid: {', '.join(VERSION_POLICIES)})",
                            param="version_policy")
        found = self.exports._set(set_name, who)
        policy.require(who, "publish", found)
        name = f"{Scope.parse(found['scope']).org}/{found['name']}"
        existing = self.store.published_context(name)
        if existing and (existing["set_name"], existing["set_scope"]) != (found["name"], found["scope"]):
            raise UserError(f"{name} is already published from the set {existing['set_name']}@{existing['set_scope']}")
        now = now or utcnow()
        with self.store.transaction():
            self.store.put_published_context(name, found["name"], found["scope"], who.name, version_policy,
                                             bool(with_pins), now)
            made = self._snapshot(name, found, who, "publish", now, force=bool(existing and existing["ended_at"]))
            self.store.add_event("publish", actor=who.name, detail={"context": name, "version": made})
        return self.describe(name, principal=who)

    def unpublish(self, name: str, *, actor: str | Principal | None = None, now: datetime | None = None
                  ) -> dict[str, Any]:
        """End a published context (and every subscription to it): nothing crosses from now on."""
        who = self.principal(actor)
        ctx = self._live(name)
        policy.require(who, "unpublish", {"name": name, "owner": ctx["owner"], "scope": ctx["set_scope"],
                                          "context": True})
        now = now or utcnow()
        with self.store.transaction():
            for sub in self.store.subscriptions(name):
                self.store.end_subscription(name, sub["scope"], now)
            self.store.end_published_context(name, now)
            self.store.add_event("unpublish", actor=who.name, detail={"context": name})
        return {"context": name, "ended": True}

    def set_changed(self, found: dict[str, Any], who: Principal, reason: str) -> list[str]:
        """A member of set ``found`` was added or removed: every live context published from it gets
        its next version now (inside the caller's transaction). Returns the contexts changed."""
        changed = []
        for ctx in self.store.published_contexts():
            if ctx["ended_at"] is None and (ctx["set_name"], ctx["set_scope"]) == (found["name"], found["scope"]):
                if self._snapshot(ctx["name"], found, who, reason, utcnow()) is not None:
                    changed.append(ctx["name"])
        return changed

    def _members(self, found: dict[str, Any], now: datetime) -> list[dict[str, Any]]:
        """The set's members as its owner sees them as a member of their scopes, in the set's org,
        none session-scoped; pinned when a pin in force covers the set's scope (or lies in it)."""
        owner = self.principal(found["owner"])
        where = Scope.parse(found["scope"])
        org = Scope(where.org)
        members = self.exports.set_fragments(f"{found['name']}@{found['scope']}", principal=owner)
        pinned = {p["fragment_id"] for p in self.ws.index.pins(now)
                  if Scope.parse(p["scope"]).contains(where) or where.contains(Scope.parse(p["scope"]))}
        return [{"id": f.id, "version": f.version, "scope": str(f.scope), "pinned": f.id in pinned}
                for f in members if policy.member_sees(owner, f) and f.scope.session is None and org.contains(f.scope)]

    def _snapshot(self, name: str, found: dict[str, Any], who: Principal, reason: str, now: datetime, *,
                  force: bool = False) -> int | None:
        """The next version of ``name`` when its members changed since the last (always the first);
        its number, or None when nothing changed."""
        members = self._members(found, now)
        last = self.store.published_latest(name)
        before = {m["id"]: m for m in self.store.published_members(name, last)} if last else {}
        after = {m["id"]: m for m in members}
        log = {"added": sorted(after.keys() - before.keys()), "removed": sorted(before.keys() - after.keys()),
               "changed": [{"id": i, "from": before[i]["version"], "to": after[i]["version"]}
                           for i in sorted(after.keys() & before.keys()) if before[i] != after[i]]}
        if last and not force and not any(log.values()):
            return None
        self.store.put_published_version(name, last + 1, members, by=who.name, at=now, reason=reason, changelog=log)
        return last + 1

    def describe(self, name: str, *, principal: str | Principal | None = None, version: int | None = None
                 ) -> dict[str, Any]:
        """One context: publisher, policy, its versions' changelog and (to the publishing side and
        to principals who receive it) the members of ``version`` (default: the latest)."""
        who = self.principal(principal)
        ctx = self.store.published_context(name) if isinstance(name, str) else None
        if ctx is None:
            raise NotFound(self._unknown(name))
        number = ctx["latest"] if version is None else version
        out = {"name": name, "set": ctx["set_name"], "set_scope": ctx["set_scope"], "owner": ctx["owner"],
               "version_policy": ctx["version_policy"], "with_pins": bool(ctx["with_pins"]),
               "created_at": _iso(ctx["created_at"]), "ended_at": _iso(ctx["ended_at"]),
               "version": number, "latest": ctx["latest"]}
        if self._publishing_side(who, ctx) or self._receives(who, name):
            rows = self.store.published_members(name, number)
            titles = {f.id: f.title for f in self.store.fragments(ids=[m["id"] for m in rows])} if rows else {}
            out["fragments"] = [{**m, "title": titles.get(m["id"])} for m in rows]
            out["changelog"] = [{**c, "at": _iso(c["at"])} for c in self.store.published_changes(name)]
        return out

    def published(self, *, principal: str | Principal | None = None, days: int = 90,
                  now: datetime | None = None) -> list[dict[str, Any]]:
        """The publisher's view: the contexts published from sets of scopes ``principal`` is a member of
        (or that it published), each with its changelog, subscribing scopes and how often its
        fragments were served to principals of subscribing scopes in the last ``days`` (counts)."""
        check_days(days)
        who = self.principal(principal)
        now = now or utcnow()
        usage = self.store.trace_usage(now - timedelta(days=days), now)
        out = []
        for ctx in self.store.published_contexts():
            if not self._publishing_side(who, ctx):
                continue
            item = self.describe(ctx["name"], principal=who)
            subs = self.store.subscriptions(ctx["name"], live=False)
            item["subscribers"] = [{"scope": s["scope"], "version": s["version"], "since": _iso(s["created_at"]),
                                    "ended_at": _iso(s["ended_at"])} for s in subs]
            item["usage"] = self._usage(item.get("fragments", []), [s for s in subs if s["ended_at"] is None], usage)
            out.append(item)
        return out

    def _usage(self, members: list[dict[str, Any]], subs: list[dict[str, Any]], usage: list[tuple]
               ) -> dict[str, int]:
        """Fragment id → calls that served it to principals of the subscribing scopes (counts only)."""
        ids = {m["id"] for m in members}
        scopes = [Scope.parse(s["scope"]) for s in subs]
        counts = dict.fromkeys(sorted(ids), 0)
        for fid, name, _scope, calls, _last in usage:
            p = self.config.principals.get(name)
            if fid in ids and p is not None and any(p.can_see(s) for s in scopes):
                counts[fid] += calls
        return counts

    # -- the subscriber's side ------------------------------------------------------------

    def subscribe(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                  pinned: bool | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Subscribe ``scope`` (led by the actor) to a live context: its members receive the context's
        fragments. ``pinned`` (default: the context's version policy) stays on the current version."""
        who = self.principal(actor)
        where = self._scope(scope)
        ctx = self._live(name)
        policy.require(who, "subscribe", where)
        follow = ctx["version_policy"] == "pinned" if pinned is None else bool(pinned)
        with self.store.transaction():
            self.store.put_subscription(name, str(where), who.name, ctx["latest"] if follow else None,
                                        now or utcnow())
            self.store.add_event("subscribe", actor=who.name, detail={"context": name, "scope": str(where)})
        return self._subscription(name, where, who)

    def unsubscribe(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        who = self.principal(actor)
        where = self._scope(scope)
        self._subscribed(name, where)
        policy.require(who, "unsubscribe", where)
        with self.store.transaction():
            self.store.end_subscription(name, str(where), now or utcnow())
            self.store.add_event("unsubscribe", actor=who.name, detail={"context": name, "scope": str(where)})
        return {"context": name, "scope": str(where), "ended": True}

    def move_subscription(self, name: str, *, scope: Scope | str, actor: str | Principal | None = None,
                          to: int | None = None, latest: bool = False) -> dict[str, Any]:
        """Move a subscription to version ``to`` (default: the latest), or to follow the latest
        (``latest``); the answer shows what changed between the two versions."""
        who = self.principal(actor)
        where = self._scope(scope)
        sub = self._subscribed(name, where)
        policy.require(who, "subscribe", where)
        ctx = self._live(name)
        target = ctx["latest"] if to is None else to
        if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= ctx["latest"]:
            raise UserError(f"{name} has versions 1 to {ctx['latest']}", param="to")
        before = {m["id"]: m for m in self.store.published_members(name, sub["version"] or ctx["latest"])}
        after = {m["id"]: m for m in self.store.published_members(name, target)}
        with self.store.transaction():
            self.store.put_subscription(name, str(where), who.name, None if latest else target, utcnow())
            self.store.add_event("subscription-move", actor=who.name,
                                 detail={"context": name, "scope": str(where), "to": None if latest else target})
        return {**self._subscription(name, where, who), "from": sub["version"] or ctx["latest"], "to": target,
                "diff": {"added": sorted(after.keys() - before.keys()), "removed": sorted(before.keys() - after.keys()),
                         "changed": [{"id": i, "from": before[i]["version"], "to": after[i]["version"]}
                                     for i in sorted(after.keys() & before.keys())
                                     if before[i]["version"] != after[i]["version"]]}}

    def subscriptions(self, *, principal: str | Principal | None = None) -> dict[str, Any]:
        """The subscriber's view: subscriptions of scopes ``principal`` is a member of (what each
        serves it, its version, the latest available), and the live contexts it may subscribe to."""
        who = self.principal(principal)
        mine = [s for s in self.store.subscriptions() if who.can_see(Scope.parse(s["scope"]))]
        live = [c for c in self.store.published_contexts() if c["ended_at"] is None]
        return {"subscriptions": [self._subscription(s["context"], Scope.parse(s["scope"]), who) for s in mine],
                "available": [{"name": c["name"], "owner": c["owner"], "latest": c["latest"],
                               "version_policy": c["version_policy"]} for c in live]}

    def _subscription(self, name: str, where: Scope, who: Principal) -> dict[str, Any]:
        sub = self._subscribed(name, where)
        ctx = self.store.published_context(name)
        fresh = self.principal(who)   # as of now (a subscribe changes it: receipts are resolved again)
        received = sorted({r.fragment_id for r in fresh.received if r.via == name and r.applies == where})
        return {"context": name, "scope": str(where), "subscribed_by": sub["subscribed_by"],
                "since": _iso(sub["created_at"]), "policy": "pinned" if sub["version"] else "latest",
                "version": sub["version"] or ctx["latest"], "latest": ctx["latest"], "receives": received}

    # -- lookups --------------------------------------------------------------------------

    def _scope(self, scope: Scope | str) -> Scope:
        where = Scope.coerce(scope)
        if not isinstance(where, Scope):
            raise UserError("a subscription needs a scope (--scope org=ORG[,repo=REPO][,persona=P])", param="scope")
        problem = self.config.check_scope(where)
        if problem:
            raise UserError(problem, param="scope")
        if where.session is not None:
            raise UserError("a subscription applies to an org, repo or persona, not to a session", param="scope")
        return where

    def _unknown(self, name: Any) -> str:
        live = [c["name"] for c in self.store.published_contexts() if c["ended_at"] is None]
        return f"unknown published context {name!r} (published: {', '.join(live) or 'none yet'})"

    def _live(self, name: str) -> dict[str, Any]:
        ctx = self.store.published_context(name) if isinstance(name, str) else None
        if ctx is None or ctx["ended_at"] is not None:
            raise NotFound(self._unknown(name))
        return ctx

    def _subscribed(self, name: str, where: Scope) -> dict[str, Any]:
        found = [s for s in self.store.subscriptions(name) if s["scope"] == str(where)] if isinstance(name, str) else []
        if not found:
            raise NotFound(f"{where} does not subscribe to {name!r}")
        return found[0]

    def _publishing_side(self, who: Principal, ctx: dict[str, Any]) -> bool:
        return who.name == ctx["owner"] or who.can_see(Scope.parse(ctx["set_scope"]))

    def _receives(self, who: Principal, name: str) -> bool:
        return any(r.via == name for r in who.received)

"""Who may do what: the one authorization policy of workbench.

Every read and every write in the core asks this module, through ``may`` (or ``require``),
before it touches the store; the faces (CLI, TUI, MCP, notebooks) and the importers never
decide on their own. The visibility rule itself is ``Principal.can_see`` (models.py); this
module turns it into a decision for each action:

    action                     who may do it
    read / export              a principal who can see the fragment
    create in scope S          a principal who can see S; the owner named must also see S
    edit (body, title, tags,   a principal who can see the fragment's current scope
      links, sources, kind...)
    reassign (owner or scope)  the current owner or a lead of the current scope; the actor must
                               see the new scope, and so must the new owner
    archive / restore / revert as for edit (plus reassign when the content moves)
    verify / snooze            the owner
    pin / unpin                a lead of the pin's scope (who can see the fragment)
    merge                      a principal who sees both, in the same org
    relink (during a merge)    only fragments the actor can see; others are left alone
    read-trace                 only the principal who made the call
    read-gap / read-usage      what a traced call asked (gaps) or who was served (usage): the
                               principal who made the call, a lead of a scope the call was made in
                               (its scope, else each org of its caller, who must belong to that
                               org), and the local administrator (no actor)
    see a golden query (check) a principal of every org its asker belongs to (``sees_query``)
    read-set                   the set's owner and principals who can see its scope
    create-set in scope S      a principal who can see S
    change-set                 the set's owner or a lead of its scope
    publish / unpublish        the set's owner (a context's publisher) or a lead of the set's scope
    subscribe / unsubscribe    a lead of the subscribing scope; its members then receive the context's
                               fragments, read-only (receiving.py; writes ask ``member_sees``)
    nudge                      anyone, with a cooldown of at least MIN_NUDGE_COOLDOWN_DAYS; an admin
                               (or the local administrator, who runs the CLI on the database) sooner
    manage a token             the local administrator (no actor: whoever runs the CLI on the
      (create, list, revoke)   database file), an admin principal for any principal's tokens,
                               any principal for its own (``may_manage_token``); but an agent
                               never creates one, not even for itself (``may_create_token``)
    change models (add,        the local administrator and admin persons and services, never an agent
      shadow, promote, rollback) (``may_change_models``)
    purge traces, calibrate,   the local administrator and admin principals (``may_purge_traces``,
      workspace-wide figures   ``may_calibrate``, ``sees_workspace_totals``); others are counted
      (info, /metrics)         only what they see, or refused
    propose in scope S         any principal who can see S (its own session scope included); a
                               scope it cannot see is refused like one that does not exist
    review (accept / reject)   a reviewer of the proposal (see below) who can see the scope it
                               is accepted into; the new owner must be a member of that scope

Kinds (workbench.yaml ``kind:``; ``KIND_RULES`` is the one table) limit what the rules above
allow (a refusal by a rule is given as it is). A write grant (``writes:``, agents and services
only, within their memberships) covers the scopes inside it; a write needs every scope it touches
granted (both, for a move or a merge; any, for a nudge). The author of a proposal edits it before
its review as part of proposing.

    person    every action above
    agent     reads and proposes; other writes only within a grant; never pins, unpins, nudges,
              publishes, subscribes or reviews (without a grant: it reads and proposes, for a person to review)
    service   reads and proposes; writes (pins, unpins and nudges too) within its grants only;
              never reviews

Proposals (status ``proposed``, and ``rejected`` after a negative review) are read only by
their author (``details.proposed_by``) and their reviewers: the leads of the proposal's scope,
and the principal it names as owner when that is not its author. Everyone else is answered
exactly as for an id that does not exist, on every path. A proposal leaves ``proposed`` only by
a review, which records its decision and its reviewer; a rejected proposal no longer changes.

A target the actor may not see is refused exactly like one that does not exist
(``Decision.hidden``), whatever the actor's kind, so no message tells the two apart. Pure: no I/O.

The package: this module (fragments, the rules table, the kinds), ``sets`` (sets, publishing,
subscribing), ``receiving`` (who receives a published fragment), ``admin`` (tokens, traces,
workspace-wide figures) and ``decide`` (the decisions they return); every public name is here.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..models import PRINCIPAL_KINDS, PROPOSAL_STATUSES, Content, Decision, Fragment, Principal, Scope, call_scopes
from . import personas, receiving  # noqa: F401 - personas: the persona a call acts in
from .admin import (may_calibrate, may_change_models, may_create_token, may_manage_token, may_purge_traces,
                    sees_workspace_totals, taken_message)
from .decide import ALLOW, _deny, _lead_of, _unknown
from .sets import _change_set, _create_set, _publish, _read_set, _set_scope, _subscribe


def sees(actor: Principal, fragment: Fragment | Content) -> bool:
    """The visibility rule applied to a fragment (or to a version's content): a member of its scope
    (``member_sees``), or a principal who receives it through a subscription (receiving.py; a
    fragment, not a bare version: a version of a received fragment is shown only as served)."""
    if member_sees(actor, fragment):
        return True
    return isinstance(fragment, Fragment) and receiving.receipt(actor, fragment) is not None


def member_sees(actor: Principal, fragment: Fragment | Content) -> bool:
    """Scope membership: what every write rule asks. A proposal (or a rejected one) is seen only by
    its author and its reviewers (``reviews``)."""
    content = fragment.content if isinstance(fragment, Fragment) else fragment
    if content.status in PROPOSAL_STATUSES:
        return authored(actor, content) or reviews(actor, content)
    return actor.can_see(content.scope, owner=content.owner)


def sees_listed(actor: Principal, scope: Scope, owner: str, status: str) -> bool:
    """The visibility rule for a row of a listing, decided without reading the fragment's body:
    what ``sees`` answers for a fragment that is not a proposal. A proposal is never listed (the
    inbox lists proposals, with ``sees``)."""
    return status not in PROPOSAL_STATUSES and actor.can_see(scope, owner=owner)


def proposed_by(fragment: Fragment | Content) -> str | None:
    """The author of a proposal (kept once it is accepted); None for any other fragment."""
    content = fragment.content if isinstance(fragment, Fragment) else fragment
    author = content.detail("proposed_by")
    return author if isinstance(author, str) else None


def authored(actor: Principal, fragment: Fragment | Content) -> bool:
    """Is ``actor`` the author of this proposal, in a scope it may still see?"""
    content = fragment.content if isinstance(fragment, Fragment) else fragment
    return proposed_by(content) == actor.name and actor.can_see(content.scope, owner=actor.name)


def reviews(actor: Principal, fragment: Fragment | Content) -> bool:
    """Is ``actor`` a reviewer of this proposal: a lead of its scope, or the principal it names as
    its owner when that is not its author (and who is a member of its scope)?"""
    content = fragment.content if isinstance(fragment, Fragment) else fragment
    if actor.leads(content.scope):
        return True
    return (content.owner == actor.name and content.owner != proposed_by(content)
            and actor.can_see(content.scope, owner=actor.name))


def sees_scope(actor: Principal, scope: Scope) -> bool:
    """May the actor work in ``scope`` at all (define a set, export agent files, see a pin there)?"""
    return actor.can_see(scope)


def sees_query(actor: Principal, asker: Principal | None) -> bool:
    """May the actor see a golden query (its id, text and ranking) that ``asker`` asks? Only when every
    org of the asker is one of the actor's: a query says what its orgs' people ask about. A query of
    an asker unknown to workbench.yaml: no. (The fragments a shown query ranks are named only when the
    actor ``sees`` them.)"""
    return asker is not None and set(asker.orgs) <= set(actor.orgs)


# -- rules, one per action ------------------------------------------------------------------

def _read(actor: Principal, fragment: Fragment, **_: Any) -> Decision:
    return ALLOW if sees(actor, fragment) else _unknown("fragment", fragment.id, "read")


def _create(actor: Principal, scope: Scope, *, owner: Principal | None, **_: Any) -> Decision:
    if owner is None:
        return _deny("the owner must be a principal of workbench.yaml", "create")
    if not actor.can_see(scope, owner=owner.name):
        return _deny(f"{actor.name} may not create fragments in {scope}", "create")
    if not owner.can_see(scope, owner=owner.name):
        return _deny(f"owner {owner.name} is not a member of scope {scope}", "create")
    return ALLOW


def _edit(actor: Principal, fragment: Fragment, **_: Any) -> Decision:
    if member_sees(actor, fragment):
        return ALLOW
    return _received("edit", fragment) if sees(actor, fragment) else _unknown("fragment", fragment.id, "edit")


def _received(action: str, fragment: Fragment) -> Decision:
    return _deny(f"{fragment.id} is received from another scope's published context: it is read-only here "
                 f"(its owner, {fragment.owner}, changes it)", action)


def _reassign(actor: Principal, fragment: Fragment, *, scope: Scope, owner: Principal | None, **_: Any
              ) -> Decision:
    if not member_sees(actor, fragment):
        hidden = not sees(actor, fragment)
        return _unknown("fragment", fragment.id, "reassign") if hidden else _received("reassign", fragment)
    if actor.name != fragment.owner and not actor.leads(fragment.scope):
        return _deny(f"only the owner of {fragment.id} ({fragment.owner}) or a lead of {fragment.scope} may change "
                     "its owner or scope", "reassign")
    if owner is None:
        return _deny("the new owner must be a principal of workbench.yaml", "reassign")
    if not actor.can_see(scope, owner=owner.name):
        return _deny(f"{actor.name} may not move fragments into {scope}", "reassign")
    if not owner.can_see(scope, owner=owner.name):
        return _deny(f"the new owner {owner.name} is not a member of scope {scope}", "reassign")
    return ALLOW


def _owner_only(action: str) -> Callable[..., Decision]:
    def rule(actor: Principal, fragment: Fragment, **_: Any) -> Decision:
        if not member_sees(actor, fragment):
            return _received(action, fragment) if sees(actor, fragment) else _unknown("fragment", fragment.id, action)
        if fragment.owner != actor.name:
            return _deny(f"only the owner ({fragment.owner}) may {action} {fragment.id}", action)
        return ALLOW
    return rule


def _pin(actor: Principal, fragment: Fragment, *, scope: Scope, **_: Any) -> Decision:
    if not sees(actor, fragment):  # first: say nothing about fragments outside the lead's scope
        return _unknown("fragment", fragment.id, "pin")
    if not member_sees(actor, fragment) and not receiving.pins_within(actor, fragment, scope):
        return _deny(f"{fragment.id} is received from a published context: a lead pins it only inside a scope "
                     "it is received in", "pin")
    return _lead_of(actor, scope, "pin")


def _unpin(actor: Principal, scope: Scope, **_: Any) -> Decision:
    return _lead_of(actor, scope, "unpin")


def _merge(actor: Principal, keep: Fragment, *, drop: Fragment, **_: Any) -> Decision:
    for f in (keep, drop):
        if not member_sees(actor, f):
            return _received("merge", f) if sees(actor, f) else _unknown("fragment", f.id, "merge")
    if keep.scope.org != drop.scope.org:
        return _deny(f"cannot merge across orgs ({drop.id} is in {drop.scope.org}, {keep.id} in {keep.scope.org})",
                     "merge")
    return ALLOW


def _relink(actor: Principal, fragment: Fragment, **_: Any) -> Decision:
    # A merge rewrites links only in fragments the actor can see; the others are left alone.
    return ALLOW if member_sees(actor, fragment) else _unknown("fragment", fragment.id, "relink")


def _propose(actor: Principal, scope: Scope, *, owner: Principal | None, content: Content | None = None,
             **_: Any) -> Decision:
    # A scope the proposer cannot see is refused as if it did not exist: nothing about it leaks.
    if not actor.can_see(scope, owner=actor.name):
        return _unknown("scope", str(scope), "propose")
    if content is not None:
        if content.status != "proposed":
            return _deny("a new proposal has the status proposed", "propose")
        if proposed_by(content) != actor.name:
            return _deny(f"a proposal's author is the principal who proposes it ({actor.name})", "propose")
    if owner is None:
        return _deny("the owner must be a principal of workbench.yaml", "propose")
    if not owner.can_see(scope, owner=owner.name):
        return _deny(f"owner {owner.name} is not a member of scope {scope}", "propose")
    return ALLOW


def _review(actor: Principal, fragment: Fragment, *, content: Content, owner: Principal | None, **_: Any
            ) -> Decision:
    """Accept (``content`` active, possibly moved and edited) or reject (``content`` rejected, in place)."""
    if not member_sees(actor, fragment):
        return _unknown("fragment", fragment.id, "review")
    if fragment.status != "proposed" or content.status not in ("active", "rejected"):
        return _deny(f"{fragment.id} is {fragment.status}: a proposal changes status only by a review, from "
                     "proposed to accepted (active) or rejected", "review")
    if not reviews(actor, fragment):
        return _deny(f"only a lead of {fragment.scope} or the owner it names may review {fragment.id}", "review")
    decision = "accepted" if content.status == "active" else "rejected"
    review = content.detail("review")
    if not isinstance(review, Mapping):
        return _deny(f"{fragment.id} is a proposal: it becomes active or rejected only by a review (accept or "
                     "reject), which records the decision and the reviewer", "review")
    if review.get("decision") != decision or review.get("by") != actor.name:
        return _deny(f"a review of {fragment.id} records its decision ({decision}) and its reviewer ({actor.name})",
                     "review")
    if proposed_by(content) != proposed_by(fragment):
        return _deny(f"the author of proposal {fragment.id} cannot change", "review")
    if decision == "rejected":
        if content.scope != fragment.scope or content.owner != fragment.owner:
            return _deny("a rejected proposal stays in its scope, with its owner", "review")
        return ALLOW
    if owner is None:
        return _deny("the new owner must be a principal of workbench.yaml", "review")
    if not actor.can_see(content.scope, owner=owner.name):
        return _deny(f"{actor.name} may not accept fragments into {content.scope}", "review")
    if not owner.can_see(content.scope, owner=owner.name):
        return _deny(f"the new owner {owner.name} is not a member of scope {content.scope}", "review")
    return ALLOW


def _read_trace(actor: Principal, trace: Mapping[str, Any], **_: Any) -> Decision:
    return ALLOW if trace.get("principal") == actor.name else _unknown("trace", str(trace.get("id")), "read-trace")


def _read_activity(action: str) -> Callable[..., Decision]:
    def rule(actor: Principal | None, trace: Mapping[str, Any], *, caller: Principal | None = None,
             **_: Any) -> Decision:
        if actor is None or trace.get("principal") == actor.name:
            return ALLOW
        if caller is not None and caller.name == trace.get("principal"):
            for scope in call_scopes(trace, caller):
                if scope.org in caller.orgs and actor.leads(scope):
                    return ALLOW
        return _unknown("trace", str(trace.get("id")), action)
    return rule


MIN_NUDGE_COOLDOWN_DAYS = 1  # sooner re-sends every nudge: an admin's or the local administrator's call


def _nudge(actor: Principal, cooldown_days: int, *, administrator: bool = False, **_: Any) -> Decision:
    if cooldown_days >= MIN_NUDGE_COOLDOWN_DAYS or actor.admin or administrator:
        return ALLOW
    return _deny(f"the nudge cooldown must be at least {MIN_NUDGE_COOLDOWN_DAYS} day: only an admin or the local "
                 f"administrator may nudge again sooner ({actor.name} is not an admin)", "nudge")


RULES: dict[str, Callable[..., Decision]] = {
    "read": _read, "export": _read,
    "create": _create, "edit": _edit, "reassign": _reassign,
    "archive": _edit, "restore": _edit, "revert": _edit,
    "verify": _owner_only("verify"), "snooze": _owner_only("snooze"),
    "pin": _pin, "unpin": _unpin,
    "merge": _merge, "relink": _relink,
    "read-trace": _read_trace, "read-set": _read_set, "change-set": _change_set,
    "propose": _propose, "review": _review, "create-set": _create_set, "nudge": _nudge,
    "read-gap": _read_activity("read-gap"), "read-usage": _read_activity("read-usage"),
    "publish": _publish, "unpublish": _publish, "subscribe": _subscribe, "unsubscribe": _subscribe,
}
ACTIONS = tuple(RULES)

# -- what each kind of principal may do ---------------------------------------------------------

YES, GRANTED, NEVER = "yes", "granted", "never"
KIND_NAMES = PRINCIPAL_KINDS   # ("person", "agent", "service"): the table's columns
KIND_RULES: dict[str, tuple[str, str, str]] = {   # action: (person, agent, service), see the docstring
    **dict.fromkeys(("read", "export", "propose", "read-trace", "read-set", "read-gap", "read-usage"),
                    (YES, YES, YES)),
    **dict.fromkeys(("create", "edit", "reassign", "archive", "restore", "revert", "merge", "relink", "verify",
                     "snooze", "create-set", "change-set"), (YES, GRANTED, GRANTED)),
    **dict.fromkeys(("pin", "unpin", "nudge", "publish", "unpublish", "subscribe", "unsubscribe"),
                    (YES, NEVER, GRANTED)),
    "review": (YES, NEVER, NEVER),
}
WRITE_ACTIONS = tuple(a for a, kinds in KIND_RULES.items() if kinds != (YES, YES, YES))
_WHY = {"agent": "agents read and propose changes (workbench propose) for a person to review",
        "service": "a service writes only within its grants, and a person reviews proposals"}


def _kind_rule(actor: Principal, action: str) -> str:
    """The table's cell (every action of RULES has a row; a kind workbench.yaml would refuse is read
    as an agent's, the narrowest)."""
    return KIND_RULES[action][KIND_NAMES.index(actor.kind) if actor.kind in KIND_NAMES else 1]


def _touched(action: str, target: Any, context: Mapping[str, Any]) -> tuple[Scope, ...]:
    """The scopes an action writes in, for the grant check: the target's, and where it moves to."""
    if isinstance(target, Scope):
        return (target,)
    if isinstance(target, Fragment):
        if action == "pin":
            return (context["scope"],)
        drop = context.get("drop")
        return (target.scope, *([context["scope"]] if action == "reassign" else []), *([drop.scope] if drop else []))
    return (_set_scope(target),) if isinstance(target, Mapping) and "scope" in target else ()


def _by_kind(actor: Principal, action: str, target: Any, context: Mapping[str, Any]) -> Decision:
    """The kind table's answer for ``actor``: ALLOW, or a refusal saying why and what it may do."""
    rule = _kind_rule(actor, action)
    if rule == YES:
        return ALLOW
    who = f"{actor.name} is {'an' if actor.kind[:1] in 'aeiou' else 'a'} {actor.kind}"
    why = _WHY.get(actor.kind, _WHY["agent"])
    if rule == NEVER:
        return _deny(f"{who}: it may not {'review proposals' if action == 'review' else action}; {why}", action)
    outside = [s for s in _touched(action, target, context) if not any(g.contains(s) for g in actor.writes)]
    if actor.writes and not outside:
        return ALLOW
    grants = (f"its write grants ({', '.join(str(g) for g in actor.writes)}) do not cover {outside[0]}"
              if actor.writes else "workbench.yaml grants it no write scope (writes)")
    return _deny(f"{who}: it may not {action} here: {grants}; {why}", action)


def offered(actor: Principal) -> frozenset[str]:
    """The write actions ``actor`` may take somewhere, by its kind and grants (each is still decided
    on its target by ``may``): what a face offers it."""
    return frozenset(a for a in WRITE_ACTIONS if _kind_rule(actor, a) == YES
                     or (_kind_rule(actor, a) == GRANTED and actor.writes))


def may(actor: Principal, action: str, target: Any, **context: Any) -> Decision:
    """May ``actor`` do ``action`` to ``target`` (a fragment, a scope, a trace or a set)? For
    read-gap and read-usage, ``actor`` None is the local administrator and ``caller`` the
    principal who made the call (``Principal``, None when unknown)."""
    return _decide(actor, action, target, action, context)


def _decide(actor: Principal, action: str, target: Any, as_kind: str, context: Mapping[str, Any]) -> Decision:
    """The action's rule, then (when the rule allows) the kind table for ``as_kind``: a refusal
    of the rule (an unknown target above all) stays exactly what it was."""
    try:
        rule = RULES[action]
    except KeyError:
        raise ValueError(f"unknown action {action!r} (valid: {', '.join(ACTIONS)})") from None
    decision = rule(actor, target, **context)
    if not decision or actor is None:
        return decision
    return _by_kind(actor, as_kind, target, context)


def require(actor: Principal, action: str, target: Any, **context: Any) -> None:
    """``may`` that raises: NotFound for what the actor may not see, PermissionDenied otherwise."""
    may(actor, action, target, **context).check()


def write_action(current: Fragment | None, new: Content) -> str:
    """Which rule a write of ``new`` over ``current`` falls under."""
    if current is None:
        return "propose" if new.status in PROPOSAL_STATUSES else "create"
    if new.status != current.status and (new.status in PROPOSAL_STATUSES or current.status in PROPOSAL_STATUSES):
        return "review"
    if new.scope != current.scope or new.owner != current.owner:
        return "reassign"
    if new.status != current.status:
        return "archive" if new.status == "archived" else "restore"
    return "edit"


def may_write(actor: Principal, current: Fragment | None, new: Content, *,
              principals: Mapping[str, Principal], fragment_id: str | None = None) -> Decision:
    """The decision for any write of content ``new`` (create, edit, reassign, archive, restore,
    revert, import, merge): the one check every write path makes before anything is stored."""
    action = write_action(current, new)
    owner = principals.get(new.owner)
    if action == "propose":
        return may(actor, "propose", new.scope, owner=owner, content=new)
    if current is None:
        return may(actor, "create", new.scope, owner=owner)
    if action == "review":
        return may(actor, "review", current, content=new, owner=owner)
    if current.status in PROPOSAL_STATUSES:  # a proposal edited (or moved) before its review
        seen = may(actor, "read", current)
        if not seen:
            return seen
        if current.status == "rejected":
            return _deny(f"{current.id} was rejected: a rejected proposal no longer changes", action)
        if proposed_by(new) != proposed_by(current):
            return _deny(f"the author of proposal {current.id} cannot change", action)
    # the author's changes to its own proposal before the review are part of proposing (any kind)
    as_kind = "propose" if current.status == "proposed" and authored(actor, current) else action
    context = {"scope": new.scope, "owner": owner} if action == "reassign" else {}
    return _decide(actor, action, current, as_kind, context)


__all__ = ["Decision", "ACTIONS", "RULES", "KIND_RULES", "WRITE_ACTIONS", "offered", "may", "require", "may_write",
           "write_action", "sees", "sees_scope", "sees_query", "taken_message", "may_manage_token", "may_create_token",
           "may_purge_traces", "may_calibrate", "may_change_models", "sees_workspace_totals", "call_scopes", "proposed_by", "authored",
           "reviews", "member_sees", "receiving"]

"""The policy's rules for curated sets and the contexts published from them (issue 30): who reads,
defines and changes a set, who publishes one (or ends its publication) and who subscribes a
scope. ``RULES`` in the package names them by action. Pure: no I/O."""

from __future__ import annotations

from typing import Any, Mapping

from ..models import Decision, Principal, Scope
from .decide import ALLOW, _deny, _lead_of, _unknown


def _set_scope(found: Mapping[str, Any]) -> Scope:
    scope = found["scope"]
    return Scope.coerce(scope)


def _read_set(actor: Principal, found: Mapping[str, Any], **_: Any) -> Decision:
    if actor.name == found["owner"] or actor.can_see(_set_scope(found)):
        return ALLOW
    return _unknown("set", str(found["name"]), "read-set")


def _change_set(actor: Principal, found: Mapping[str, Any], **_: Any) -> Decision:
    seen = _read_set(actor, found)
    if not seen:
        return seen
    if actor.name == found["owner"] or actor.leads(_set_scope(found)):
        return ALLOW
    return _deny(f"only the owner of set {found['name']!r} ({found['owner']}) or a lead of its scope may change it",
                 "change-set")


def _create_set(actor: Principal, scope: Scope, **_: Any) -> Decision:
    return ALLOW if actor.can_see(scope) else _deny(f"{actor.name} may not define a set in {scope}", "create-set")


def _publish(actor: Principal, found: Mapping[str, Any], **_: Any) -> Decision:
    """Publish a set (``found``), or end a context published from one (its publisher counts as owner)."""
    if actor.name == found["owner"] or actor.leads(_set_scope(found)):
        return ALLOW
    if not actor.can_see(_set_scope(found)) and "context" not in found:
        return _unknown("set", str(found["name"]), "publish")
    return _deny(f"only the owner of {found['name']!r} ({found['owner']}) or a lead of {found['scope']} may publish "
                 "it or end its publication", "publish")


def _subscribe(actor: Principal, scope: Scope, **_: Any) -> Decision:
    return _lead_of(actor, scope, "subscribe")

"""The decisions every rule of the policy returns: allowed, refused, or refused as unknown (a
target the actor may not see answers exactly like one that does not exist). Pure: no I/O."""

from __future__ import annotations

from ..models import Decision, Principal, Scope

ALLOW = Decision(True)


def _unknown(what: str, ident: str, action: str) -> Decision:
    return Decision(False, f"unknown {what} {ident!r}", hidden=True, action=action)


def _deny(message: str, action: str) -> Decision:
    return Decision(False, message, action=action)


def _lead_of(actor: Principal, scope: Scope, action: str) -> Decision:
    if actor.leads(scope):
        return ALLOW
    led = ", ".join(str(s) for s in actor.lead_of) or "no scope"
    return _deny(f"{actor.name} is not a tech lead of {scope} (leads: {led})", action)

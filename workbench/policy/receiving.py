"""Receiving: when a principal sees a fragment another scope published (issue 30).

A principal *receives* a fragment when workbench resolved a ``Receipt`` for it (an active
subscription of a scope the principal is a member of, to a live published context whose served
version holds the fragment) and the fragment still qualifies: it is active, and its current scope
still contains the scope it was published with (moved narrower, or archived: it stops at once).
Receiving is reading only: every write rule of the policy asks ``member_sees`` (scope membership),
never ``sees``; the one exception is a pin by a lead of the subscribing scope, inside the scope
the fragment is received in (``pins_within``). Pure: no I/O.
"""

from __future__ import annotations

from ..models import Fragment, Principal, Receipt, Scope


def holds(receipt: Receipt, fragment: Fragment) -> bool:
    """Does ``receipt`` still carry ``fragment`` as it is now?"""
    return holds_at(receipt, fragment.scope, fragment.status)


def holds_at(receipt: Receipt, scope: Scope, status: str) -> bool:
    """``holds`` for a fragment known by its current scope and status only (an index or listing row)."""
    return status == "active" and receipt.published_scope.session is None and scope.contains(receipt.published_scope)


def receipt(actor: Principal, fragment: Fragment) -> Receipt | None:
    """The receipt by which ``actor`` receives ``fragment`` now (the first, by context name), or None."""
    for r in sorted(actor.receipts(fragment.id), key=lambda r: (r.via, str(r.applies))):
        if holds(r, fragment) and actor.can_see(r.applies):
            return r
    return None


def received_within(receipt_: Receipt, within: Scope | None) -> bool:
    """Does a receipt apply inside a working scope (each level both set agrees)?"""
    if within is None:
        return True
    return all(getattr(receipt_.applies, level) is None or getattr(within, level) is None
               or getattr(receipt_.applies, level) == getattr(within, level)
               for level in ("org", "repo", "persona", "session"))


def pins_within(actor: Principal, fragment: Fragment, scope: Scope) -> bool:
    """May a pin of a received ``fragment`` go in ``scope``? Only inside a scope it is received in."""
    return any(holds(r, fragment) and actor.can_see(r.applies) and r.applies.contains(scope)
               for r in actor.receipts(fragment.id))


def served_version(actor: Principal, fragment: Fragment) -> int | None:
    """The fragment version ``actor`` is served of a received ``fragment`` (a pinned subscription's
    recorded version; else the current one), or None when it does not receive it."""
    found = receipt(actor, fragment)
    if found is None:
        return None
    return found.version if found.version is not None else fragment.version

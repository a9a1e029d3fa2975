"""Who receives what: the receipts of the workspace's live subscriptions, resolved from the store.

``Workspace.principal`` attaches to every principal the receipts of the subscriptions whose scope
it is a member of (``Principal.received``); policy/receiving.py decides, on each read, whether a
receipt still carries its fragment. The resolution is cached on the store's generation (every
fragment write) and its ``published`` counter (every publish, set change of a published set,
subscribe and unsubscribe), which the stores cache as they can (``published_stamp``), so a call
pays at most one small read. Results carry ``via`` from here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..models import Fragment, Principal, Receipt, Scope
from ..retrieval.pipeline import Hit
from ..policy import member_sees, receiving

if TYPE_CHECKING:
    from ..store import Store


def workspace_receipts(ws: Any) -> tuple[Receipt, ...]:
    """Every receipt of a live subscription to a live context whose fragment still qualifies.
    (``ws``: the ``Workspace``, which calls this module: not imported here, so no cycle.)"""
    stamp = ws.store.published_stamp()
    if stamp is None:
        return ()
    key = (ws.store.generation(), stamp, getattr(ws.store, "epoch", 0))
    cached = getattr(ws, "_receipts", None)
    if cached is not None and cached[0] == key:
        return cached[1]
    out = []
    for context, scope, pinned_at, _served, fid, fversion, fscope, pinned, with_pins, *now in ws.store.received_rows():
        receipt = Receipt(fid, context, Scope.parse(fscope), Scope.parse(scope),
                          int(fversion) if pinned_at is not None else None, bool(pinned and with_pins))
        if receiving.holds_at(receipt, Scope(*now[:4]), now[4]):
            out.append(receipt)
    ws._receipts = (key, tuple(out))
    return ws._receipts[1]


def receipts_for(ws: Any, principal: Principal) -> Principal:
    """``principal`` carrying the receipts of the subscriptions whose scope it is a member of, as of
    now: whatever ``received`` it carried is replaced (none left: an empty one)."""
    mine = tuple(r for r in workspace_receipts(ws) if principal.can_see(r.applies))
    return principal if mine == principal.received else replace(principal, received=mine)


def received_via(who: Principal, fragment: Fragment) -> str | None:
    """The context ``who`` receives ``fragment`` through (None: it sees it as a member of its scope)."""
    if member_sees(who, fragment):
        return None
    found = receiving.receipt(who, fragment)
    return found.via if found else None


def as_served(store: "Store", who: Principal, fragment: Fragment) -> Fragment:
    """A received fragment as ``who`` is served it: a pinned subscription's recorded version (its
    body and number), else as it is now; any other fragment as it is."""
    found = None if member_sees(who, fragment) else receiving.receipt(who, fragment)
    if found is None or found.version is None or found.version == fragment.version:
        return fragment
    old = store.version(fragment.id, found.version)
    if old is None:
        return fragment
    return Fragment(id=fragment.id, version=old.number, content=old.content, content_hash=old.content_hash,
                    created_at=fragment.created_at, updated_at=old.created_at, verified_at=None)


def received_hits(store: "Store", who: Principal, hits: list[Hit]) -> list[Hit]:
    """Hits as served to ``who``: each received one says ``via`` and carries the version it is served."""
    if not who.received:
        return hits
    out = []
    for h in hits:
        via = received_via(who, h.fragment)
        out.append(replace(h, fragment=as_served(store, who, h.fragment), via=via) if via else h)
    return out

"""What a principal may do with a fragment it *receives* (issue 30): the read model behind the
faces' read-only rows.

A received fragment (published by another scope, reaching the principal through a subscription)
is the publisher's: every write rule of the policy refuses it, but a pin by a lead of the
subscribing scope inside the scope it is received in. The faces (the TUI's Browse and fragment
screens) must not offer a key the core would refuse, and must not decide that themselves: this
module asks the policy (``policy.may`` on the fragment, for each write a row key takes) and hands
the faces the answer, ``Received``. It decides nothing of its own and does no I/O but the one
read of the received rows' fragments (``refine``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .. import policy
from ..models import Fragment, Principal, Scope
from ..policy import receiving

if TYPE_CHECKING:
    from ..store import Store

# the writes a row or fragment key takes on a fragment (policy action names), pins aside
FRAGMENT_WRITES = ("edit", "revert", "archive", "verify", "snooze")


@dataclass(frozen=True)
class Received:
    """How a principal has a received fragment: through the context ``via`` (ORG/CONTEXT), served
    at ``version`` (a pinned subscription's recorded version; None: it follows the current one),
    and the write actions the policy lets it take on it (``actions``: policy names, a pin at most,
    in ``pin_scopes``). The default is the safe one: read-only."""

    via: str
    version: int | None = None
    actions: frozenset[str] = frozenset()
    pin_scopes: tuple[Scope, ...] = ()

    @property
    def read_only(self) -> bool:
        return not self.actions


def received(who: Principal, fragment: Fragment) -> Received | None:
    """``Received`` for a fragment ``who`` receives; None when it sees it as a member of its scope
    (or does not see it at all): its writes are then decided as ever, on the target."""
    if policy.member_sees(who, fragment):
        return None
    found = receiving.receipt(who, fragment)
    if found is None:
        return None
    pin_in = tuple(s for s in who.lead_of if policy.may(who, "pin", fragment, scope=s))
    actions = {a for a in FRAGMENT_WRITES if policy.may(who, a, fragment)}
    if pin_in:
        actions |= {"pin", "unpin"}   # unpin: its pins in the scopes it leads (the rule is the lead's)
    return Received(found.via, found.version, frozenset(actions), pin_in)


def refine(store: "Store", who: Principal, rows: list[Any], pins: list[dict[str, Any]]) -> list[Any]:
    """Browse rows (``browse.Summary``) whose ``received`` the listing marked (read-only, with
    ``via``), with the policy's answer for each: what ``who`` may do on it; and pinned only by a pin
    in force (``pins``: ``Store.pins`` rows) in a scope ``who`` sees, or by the publisher's pin
    when it travels with the context (the publisher's other pins do not cross)."""
    ids = sorted({r.id for r in rows if r.received is not None})
    if not ids:
        return rows
    answers = {f.id: received(who, f) for f in store.fragments(ids=ids)}
    seen = {p["fragment_id"] for p in pins if who.can_see(Scope.parse(p["scope"]))}
    return [replace(r, received=answers.get(r.id) or r.received,
                    pinned=r.id in seen or any(rc.pinned for rc in who.receipts(r.id)))
            if r.received is not None else r for r in rows]

"""Tech-lead pins per scope: a pinned fragment always reaches agents working in that scope.

Only a tech lead of the scope (per workbench.yaml) may pin or unpin; every pin and unpin
is a recorded event; a pin with ``until`` stops applying on its own when it expires.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..errors import UserError
from ..models import Scope
from ..retrieval.index import applies


@dataclass(frozen=True)
class Pin:
    fragment_id: str
    scope: Scope
    pinned_by: str
    pinned_at: datetime
    reason: str | None
    until: datetime | None

    def to_dict(self) -> dict[str, Any]:
        ts = lambda v: None if v is None else v.replace(microsecond=0).isoformat() + "Z"  # noqa: E731
        return {"id": self.fragment_id, "scope": self.scope.to_dict(), "pinned_by": self.pinned_by,
                "pinned_at": ts(self.pinned_at), "reason": self.reason, "until": ts(self.until)}


def check_pin(fragment_scope: Scope, scope: Scope, fragment_id: str, status: str) -> None:
    """Is this a pin that makes sense (who may pin is policy.py's to decide)?"""
    if status != "active":
        raise UserError(f"{fragment_id} is {status}; only active fragments can be pinned")
    if fragment_scope.org != scope.org or not applies(fragment_scope, scope):
        raise UserError(f"{fragment_id} (scope {fragment_scope}) does not apply in {scope}: "
                        "pin it in a scope where it is visible")


def from_row(row: dict[str, Any]) -> Pin:
    return Pin(row["fragment_id"], Scope.parse(row["scope"]), row["pinned_by"], row["pinned_at"], row["reason"],
               row["until"])

"""Keeping traces: how long they are kept (``traces.retain_days`` in workbench.yaml, applied as traces
are written), ``purge`` (by age, or one principal's; admins and the local administrator only, as
policy.py decides) and the caller's latest trace (``workbench trace last``).

Reading one trace is retrieval's (service/search.py); this module only finds, ages and removes them.
It renders nothing and decides no rights itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .. import policy
from ..errors import NotFound, UserError
from ..models import Principal, utcnow
from .days import check_days
from .workspace import Feature, Workspace

RETENTION_EVERY_S = 3600.0  # an open workspace applies traces.retain_days at most this often


@dataclass(frozen=True)
class PurgeReport:
    removed: int                  # traces removed (with dry_run: that would be)
    before: datetime              # traces made before this were removed
    principal: str | None         # only this principal's traces; None: everyone's
    retain_days: int | None       # the age limit used: --older-than, else traces.retain_days (None: a principal's all)
    dry_run: bool

    def to_dict(self) -> dict[str, Any]:
        return {"removed": self.removed, "before": self.before.replace(microsecond=0).isoformat() + "Z",
                "principal": self.principal, "older_than_days": self.retain_days, "dry_run": self.dry_run}


def expire(ws: Workspace, *, force: bool = False) -> int:
    """Apply ``traces.retain_days``: remove the traces older than it, at most once every
    ``RETENTION_EVERY_S`` per open workspace (``force``: now). Called after a trace is written;
    nothing when no retention is configured or the workspace is read-only. How many were removed."""
    days = ws.config.traces_retain_days
    if not days:
        return 0
    clock = time.monotonic()
    last = ws.traces_expired_at
    if not force and last is not None and clock - last < RETENTION_EVERY_S:
        return 0
    ws.traces_expired_at = clock
    if not ws.store.can_store_derived():
        return 0
    return ws.store.purge_traces(utcnow() - timedelta(days=days))


class Traces(Feature):
    """Trace retention, purges and the caller's latest trace."""

    def last_trace_id(self, *, principal: str | Principal | None = None) -> str:
        """The id of the principal's most recent search, context or get call (a trace is its caller's alone)."""
        who = self.principal(principal)
        found = self.store.latest_trace_id(who.name)
        if found is None:
            raise NotFound(f"{who.name} has no trace yet (every search, context and get call makes one)")
        return found

    def purge_traces(self, *, older_than_days: int | None = None, principal: str | None = None,
                     actor: str | Principal | None = None, dry_run: bool = False,
                     now: datetime | None = None) -> PurgeReport:
        """Remove traces: those older than ``older_than_days`` (default: ``traces.retain_days``), only
        ``principal``'s when given (every one of theirs when no age is given: a principal may be
        named after leaving workbench.yaml). ``actor`` None is the local administrator; otherwise an
        admin principal. ``dry_run`` counts and removes nothing."""
        who = None if actor is None else self.principal(actor)
        policy.may_purge_traces(who).check()
        if older_than_days is not None:
            check_days(older_than_days, "older_than_days", allow_zero=True)
        elif principal is None:
            older_than_days = self.config.traces_retain_days
            if older_than_days is None:
                raise UserError("nothing says which traces to purge: give an age (--older-than DAYS), a principal "
                                "(--principal NAME), or set traces.retain_days in workbench.yaml",
                                param="older_than_days")
        if principal is not None and (not isinstance(principal, str) or not principal.strip()):
            raise UserError(f"a principal's name is needed, not {principal!r}", param="principal")
        now = now or utcnow()
        before = now - timedelta(days=older_than_days) if older_than_days is not None else now + timedelta(seconds=1)
        removed = self.store.purge_traces(before, principal=principal, dry_run=dry_run)
        return PurgeReport(removed, before, principal, older_than_days, dry_run)

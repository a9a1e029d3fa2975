"""Usage: which fragments agents received (from the traces of search, context and get calls),
how often and by whom; and the active fragments never served in a window, as archive candidates.

``Usage.served`` is the one counting call: the usage report, a fragment's usage line (the TUI)
and the staleness scan all count through it. Whose calls are named is policy.py's (read-usage);
fragments the viewer may not see are never named, nor those it only receives through a subscription
(their usage is the publisher's: ``workbench published`` shows it the counts of subscribers' calls).
Reports are read as a viewer: a principal, or the local administrator (no principal given and no
default: every call, every fragment).
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from .. import policy
from ..curate.staleness import last_touched
from ..curate.usage import NEVER, FragmentUsage, Served, Unserved, UsageReport, tally
from ..errors import NotFound, UserError
from ..models import Principal, Scope
from ..models import utcnow
from .days import check_days
from .workspace import Feature, Workspace


def viewer(ws: Workspace, principal: str | Principal | None) -> Principal | None:
    """Whose view a report takes: the principal given, else the default one ($WORKBENCH_PRINCIPAL,
    else default_principal in workbench.yaml), else None: the local administrator, who sees all."""
    if principal is None and not (os.environ.get("WORKBENCH_PRINCIPAL") or ws.config.default_principal):
        return None
    return ws.principal(principal)


def scope_filter(ws: Workspace, scope: Scope | str | None) -> Scope | None:
    """A report's ``--scope``: parsed, and refused when it names an org, repo or persona that
    workbench.yaml does not declare (a typo would otherwise read as "nothing here")."""
    within = Scope.coerce(scope)
    if within is not None:
        problem = ws.config.check_scope(within)
        if problem:
            raise UserError(f"bad scope {within}: {problem}", param="scope")
    return within


class Usage(Feature):
    """What agents actually received, from traces."""

    def __init__(self, ws: Workspace):
        super().__init__(ws)

    def served(self, since: datetime, until: datetime, who: Principal | None, *,
               fragment_id: str | None = None) -> dict[str, Served]:
        """Fragment id → how often calls from ``since`` to ``until`` served it, naming the principals
        whose calls ``who`` may read (None: the administrator, every one). Every id served is a key:
        the caller names only fragments ``who`` may see."""
        principals = self.config.principals

        def named(name: str, scope: str | None) -> bool:
            return bool(policy.may(who, "read-usage", {"principal": name, "scope": scope}, caller=principals.get(name)))
        return tally(self.store.trace_usage(since, until, fragment_id=fragment_id), named)

    def usage(self, *, days: int = 90, scope: Scope | str | None = None, principal: str | Principal | None = None,
              now: datetime | None = None) -> UsageReport:
        """Fragments the viewer may see (within ``scope``) that calls of the last ``days`` served, most
        served first, with the principals it may name; and the active ones never served, oldest first."""
        check_days(days)
        who = viewer(self.ws, principal)
        within = scope_filter(self.ws, scope)
        now = now or utcnow()
        since = now - timedelta(days=days)
        counts = self.served(since, now, who)
        known = {f.id: f for f in self.store.fragments(ids=list(counts))} if counts else {}
        served, hidden = [], 0
        for fid, count in counts.items():
            f = known.get(fid)
            if f is None or (who is not None and not policy.member_sees(who, f)):
                hidden += bool(count.principals)   # served to a call the viewer may read, now out of its sight
                continue
            if within is None or within.contains(f.scope):
                served.append(FragmentUsage(f, count))
        served.sort(key=lambda u: (-u.served.count, -u.served.last.timestamp(), u.fragment.id))
        never = [Unserved(f, last_touched(f), (now - last_touched(f)).days)
                 for f in self.store.fragments(status="active", within=within)
                 if f.id not in counts and (who is None or policy.member_sees(who, f))]
        never.sort(key=lambda u: (u.last_touched, u.fragment.id))
        return UsageReport(days, since, now, who.name if who else None, str(within) if within else None,
                           tuple(served), tuple(never), hidden)

    def fragment_usage(self, fragment_id: str, *, days: int = 90, principal: str | Principal | None = None,
                       now: datetime | None = None) -> Served:
        """How often calls of the last ``days`` served one fragment (scope-checked like ``get``)."""
        check_days(days)
        who = viewer(self.ws, principal)
        fragment = self.store.get(fragment_id) if isinstance(fragment_id, str) else None
        if fragment is None or (who is not None and not policy.member_sees(who, fragment)):
            raise NotFound(f"unknown fragment {fragment_id!r}")
        now = now or utcnow()
        return self.served(now - timedelta(days=days), now, who, fragment_id=fragment_id).get(fragment_id, NEVER)

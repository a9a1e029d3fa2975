"""Usage: which fragments agents actually received, how often and by whom, from the traces of
search, context and get calls in a window; and the active fragments never served in it.

``tally`` is the one counting function: the usage report and the staleness scan (its "used"
figure, its principals, its "never served" flag) both count with it, so they always agree.
A call counts once per fragment it served, whatever the section (hits, fragments, avoid, get).
Who is named is the caller's policy decision (read-usage); the others are counted, not named.

Pure: the caller passes the store's rows, fragments and the naming decision; no I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable

from ..models import Fragment
from ..retrieval.results import _md, _table_md


def _iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.replace(microsecond=0).isoformat() + "Z"


@dataclass(frozen=True)
class Served:
    """How often one fragment was served in a window."""

    count: int = 0                                  # calls that served it
    principals: tuple[tuple[str, int], ...] = ()    # (name, calls) of the principals the viewer may name
    others: int = 0                                 # principals served it whom the viewer may not name
    last: datetime | None = None

    @property
    def by(self) -> int:
        """How many distinct principals it was served to."""
        return len(self.principals) + self.others

    def describe(self, days: int) -> str:
        """"served 4 times in 90 days by 2 principals", or "never served in 90 days"."""
        if not self.count:
            return f"never served in {days} days"
        times = "once" if self.count == 1 else f"{self.count} times"
        return f"served {times} in {days} days by {self.by} principal{'' if self.by == 1 else 's'}"

    def to_dict(self) -> dict[str, Any]:
        return {"served": self.count, "principals": [{"name": n, "count": c} for n, c in self.principals],
                "other_principals": self.others, "last_served": _iso(self.last)}


NEVER = Served()


def tally(rows: Iterable[tuple[str, str, str | None, int, datetime]],
          named: Callable[[str, str | None], bool]) -> dict[str, Served]:
    """Fragment id → ``Served`` from ``Store.trace_usage`` rows (fragment, principal, trace scope,
    calls, last). ``named(principal, scope)``: may the viewer see this principal's calls in that scope?"""
    calls: dict[str, dict[str, int]] = {}
    shown: dict[str, set[str]] = {}
    last: dict[str, datetime] = {}
    for fid, principal, scope, count, at in rows:
        per = calls.setdefault(fid, {})
        per[principal] = per.get(principal, 0) + count
        if named(principal, scope):
            shown.setdefault(fid, set()).add(principal)
        if fid not in last or at > last[fid]:
            last[fid] = at
    out = {}
    for fid, per in calls.items():
        names = shown.get(fid, set())
        out[fid] = Served(count=sum(per.values()),
                          principals=tuple(sorted(((n, per[n]) for n in names), key=lambda kv: (-kv[1], kv[0]))),
                          others=len(set(per) - names), last=last[fid])
    return out


@dataclass(frozen=True)
class FragmentUsage:
    fragment: Fragment
    served: Served

    def to_dict(self) -> dict[str, Any]:
        f = self.fragment
        return {"id": f.id, "title": f.title, "kind": f.kind, "owner": f.owner, "scope": f.scope.to_dict(),
                "status": f.status, **self.served.to_dict()}


@dataclass(frozen=True)
class Unserved:
    """An active fragment no call served in the window: a candidate to archive."""

    fragment: Fragment
    last_touched: datetime     # last edited or verified
    age_days: int

    def to_dict(self) -> dict[str, Any]:
        f = self.fragment
        return {"id": f.id, "title": f.title, "kind": f.kind, "owner": f.owner, "scope": f.scope.to_dict(),
                "last_touched": _iso(self.last_touched), "age_days": self.age_days}


@dataclass(frozen=True)
class UsageReport:
    """``Workbench.usage``: what agents received in the window (most served first), and the active
    fragments never served (oldest first), among the fragments the viewer may see."""

    days: int
    since: datetime
    until: datetime
    principal: str | None        # whose view; None: the local administrator
    scope: str | None
    served: tuple[FragmentUsage, ...] = field(default=())
    never_served: tuple[Unserved, ...] = field(default=())
    hidden: int = 0              # fragments served to calls the viewer may read, which it may no longer see

    @property
    def calls(self) -> int:
        return sum(u.served.count for u in self.served)

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "since": _iso(self.since), "until": _iso(self.until), "principal": self.principal,
                "scope": self.scope, "served": [u.to_dict() for u in self.served],
                "never_served": [u.to_dict() for u in self.never_served], "hidden": self.hidden}

    def __repr__(self) -> str:
        return (f"<UsageReport {self.days} days as {self.principal or 'administrator'}: {len(self.served)} "
                f"fragment(s) served, {len(self.never_served)} never served>")

    SERVED_HEADERS = ("served", "last served", "id", "principals", "title")
    NEVER_HEADERS = ("age", "id", "owner", "title")

    def served_rows(self) -> list[list[str]]:
        def who(s: Served) -> str:
            names = ", ".join(f"{n} ({c})" for n, c in s.principals)
            more = f"{s.others} other{'' if s.others == 1 else 's'}" if s.others else ""
            return ", ".join(x for x in (names, more) if x)
        return [[str(u.served.count), u.served.last.strftime("%Y-%m-%d") if u.served.last else "-", u.fragment.id,
                 who(u.served), u.fragment.title] for u in self.served]

    def never_rows(self) -> list[list[str]]:
        return [[f"{u.age_days}d", u.fragment.id, u.fragment.owner, u.fragment.title] for u in self.never_served]

    def _repr_markdown_(self) -> str:
        head = f"Usage, last {self.days} days, as {_md(self.principal or 'administrator')}"
        if self.scope:
            head += f", within {_md(self.scope)}"
        return (f"{head}\n\n**Served** ({len(self.served)})\n\n" + _table_md(list(self.SERVED_HEADERS),
                                                                           self.served_rows())
                + f"\n\n**Never served** ({len(self.never_served)}): candidates to archive\n\n"
                + _table_md(list(self.NEVER_HEADERS), self.never_rows()))

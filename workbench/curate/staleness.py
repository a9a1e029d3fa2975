"""Staleness: fragments that went too long without an edit or a verification, or whose
code changed under them, ranked by use (calls that served them in the window + citations).
Use is counted as the usage report counts it (curate/usage.py ``tally``), so the two agree.

The nudge digest an owner or lead receives is ``digest``: the stale fragments, then the sections
other features add (the gap report's "Questions we could not answer", proposals to review).

Pure: the caller passes fragments, usage, in-degrees, snoozes and drift; no I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Iterable

from ..models import Fragment
from .usage import NEVER, Served


@dataclass(frozen=True)
class Drift:
    repo: str
    path: str
    commits: tuple[str, ...]          # short shas, newest first
    since: datetime


@dataclass(frozen=True)
class StaleItem:
    fragment: Fragment
    age_days: int
    last_touched: datetime
    reasons: tuple[str, ...]
    usage: int
    traces: int
    in_links: int
    drift: tuple[Drift, ...] = field(default=())
    served: Served = NEVER          # calls that served it in the window (``traces`` is its count) and by whom
    window_days: int = 0            # the window: the scan's ``days``

    @property
    def never_served(self) -> bool:
        return self.served.count == 0

    def to_dict(self) -> dict[str, Any]:
        f = self.fragment
        return {"id": f.id, "title": f.title, "kind": f.kind, "owner": f.owner, "scope": f.scope.to_dict(),
                "age_days": self.age_days, "last_touched": self.last_touched.replace(microsecond=0).isoformat() + "Z",
                "reasons": list(self.reasons), "usage": self.usage, "traces": self.traces, "in_links": self.in_links,
                "drift": [{"repo": d.repo, "path": d.path, "commits": list(d.commits)} for d in self.drift],
                **self.served.to_dict(), "never_served": self.never_served, "window_days": self.window_days}


def last_touched(f: Fragment) -> datetime:
    return max(f.updated_at, f.verified_at or f.updated_at)


def find_stale(fragments: list[Fragment], *, now: datetime, days: int, served: dict[str, Served],
               in_degree: dict[str, int], snoozed: dict[str, datetime],
               drift: dict[str, list[Drift]]) -> list[StaleItem]:
    cutoff = now - timedelta(days=days)
    out: list[StaleItem] = []
    for f in fragments:
        if f.status != "active" or (f.id in snoozed and snoozed[f.id] > now):
            continue
        touched = last_touched(f)
        reasons = []
        if touched < cutoff:
            reasons.append(f"not edited or verified for {(now - touched).days} days")
        drifts = tuple(drift.get(f.id, ()))
        for d in drifts:
            reasons.append(f"code drift: {len(d.commits)} commit(s) to {d.repo}:{d.path} since it was last "
                           f"verified ({', '.join(d.commits[:5])})")
        if not reasons:
            continue
        use, cited = served.get(f.id, NEVER), in_degree.get(f.id, 0)
        out.append(StaleItem(f, (now - touched).days, touched, tuple(reasons), use.count + cited, use.count, cited,
                             drifts, use, days))
    out.sort(key=lambda s: (-s.usage, -s.age_days, s.fragment.id))
    return out


def digest(owner: str, items: list[StaleItem], *, now: datetime, workspace: str,
           sections: Iterable[list[str]] = ()) -> str:
    """The markdown digest an owner (or lead) receives: its stale fragments, then each of
    ``sections`` (markdown lines with their own ``##`` heading; empty ones are left out)."""
    lines = [f"# Knowledge to check — {owner}", ""]
    if items:
        lines += [f"{len(items)} of your fragments in `{workspace}` need a look ({now.date().isoformat()}), "
                  "most used first.",
                  "Answer each with `workbench verify ID --as OWNER` (still true), "
                  "`workbench snooze ID --days N --as OWNER`,", "or an edit.", ""]
    else:
        lines += [f"From `{workspace}` ({now.date().isoformat()}).", ""]
    for item in items:
        f = item.fragment
        lines.append(f"## {f.title} (`{f.id}`)")
        lines.append("")
        lines.append(f"- scope: {f.scope} · kind: {f.kind} · last edited or verified {item.age_days} days ago")
        lines.append(f"- {item.served.describe(item.window_days)}, cited by {item.in_links} fragment(s)")
        for reason in item.reasons:
            lines.append(f"- {reason}")
        lines.append("")
    for section in sections:
        lines += section
    return "\n".join(lines)
